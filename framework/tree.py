"""Nested structures ("trees") of tuples, lists, dicts and None, walked in one place (like ``torch.utils._pytree``).

A *tree* is a leaf or a container of trees: a tuple (its subclasses and
namedtuples are rebuilt as their own type), a list, a dict (keys in insertion
order) or None (a container with no children, so it survives every map).
Everything else is a leaf, unless ``is_leaf(value)`` says so first.

- :func:`tree_flatten` -> ``(leaves, spec)``; :func:`tree_unflatten(leaves, spec)`
  rebuilds the same structure around other leaves;
- :func:`tree_map(fn, tree)` applies ``fn`` to every leaf;
- :func:`tree_leaves` lists the leaves, :func:`tree_leaves_with_path` with their
  paths (a tuple of list/tuple indices and dict keys).

Programs write their output structure into JSON, where a tuple and a list
differ only by a tag: :func:`tree_to_json` and :func:`tree_from_json` convert
between a tree and that form (``{leaf_key: leaf}`` leaves, ``{"tuple": [...]}``,
lists, ``{"dict": {...}}``, null).
"""
import dataclasses

__all__ = ["TreeSpec", "tree_flatten", "tree_unflatten", "tree_map", "tree_leaves", "tree_leaves_with_path",
           "tree_to_json", "tree_from_json", "TreeFormatError"]


class TreeFormatError(ValueError):
    """A JSON value that is not the JSON form of a tree; the message is the first wrong part (its repr)."""


@dataclasses.dataclass(frozen=True)
class TreeSpec:
    """The structure of a tree without its leaves: ``kind`` (None for a leaf, else the container's type),
    ``context`` (a dict's keys) and the children's specs."""
    kind: type = None
    context: tuple = ()
    children: tuple = ()

    @property
    def num_leaves(self):
        return 1 if self.kind is None else sum(c.num_leaves for c in self.children)


_LEAF = TreeSpec()


def _children(value):
    """``(kind, context, children)`` of a container, or None for a leaf."""
    if value is None:
        return type(None), (), ()
    if isinstance(value, (tuple, list)):
        return type(value), (), tuple(value)
    if isinstance(value, dict):
        return dict, tuple(value), tuple(value.values())
    return None


def _rebuild(kind, context, children):
    if kind is type(None):
        return None
    if kind is dict:
        return dict(zip(context, children))
    if hasattr(kind, "_fields"):                           # a namedtuple takes its fields by position
        return kind(*children)
    return kind(children)


def tree_flatten(tree, is_leaf=None):
    """``(leaves, spec)``: the leaves of ``tree`` in order (depth first) and its :class:`TreeSpec`."""
    leaves = []

    def walk(value):
        found = None if is_leaf is not None and is_leaf(value) else _children(value)
        if found is None:
            leaves.append(value)
            return _LEAF
        kind, context, children = found
        return TreeSpec(kind, context, tuple(walk(c) for c in children))

    return leaves, walk(tree)


def tree_unflatten(leaves, spec):
    """The tree of structure ``spec`` with ``leaves`` (in :func:`tree_flatten` order) as its leaves."""
    leaves = list(leaves)
    if len(leaves) != spec.num_leaves:
        raise ValueError(f"tree_unflatten: the structure has {spec.num_leaves} leaves, got {len(leaves)}")
    it = iter(leaves)

    def build(node):
        if node.kind is None:
            return next(it)
        return _rebuild(node.kind, node.context, [build(c) for c in node.children])

    return build(spec)


def tree_map(fn, tree, is_leaf=None):
    """``tree`` with every leaf replaced by ``fn(leaf)`` (the containers rebuilt, None kept)."""
    leaves, spec = tree_flatten(tree, is_leaf)
    return tree_unflatten([fn(leaf) for leaf in leaves], spec)


def tree_leaves(tree, is_leaf=None):
    """The leaves of ``tree``, in order."""
    return tree_flatten(tree, is_leaf)[0]


def tree_leaves_with_path(tree, is_leaf=None):
    """``[(path, leaf)]``: each leaf with the indices and keys that lead to it (``()`` for a bare leaf)."""
    found = []

    def walk(value, path):
        children = None if is_leaf is not None and is_leaf(value) else _children(value)
        if children is None:
            found.append((path, value))
            return
        kind, context, values = children
        keys = context if kind is dict else range(len(values))
        for key, child in zip(keys, values):
            walk(child, path + (key,))

    walk(tree, ())
    return found


# ---- the JSON form ---------------------------------------------------------------------------------------------
class _Leaf:
    """A leaf of a tree read from JSON (kept apart from the containers while rebuilding)."""
    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value


def tree_to_json(tree, leaf_key, is_leaf=None):
    """The JSON form of ``tree`` (module docstring): each leaf ``x`` becomes ``{leaf_key: x}``."""
    leaves, spec = tree_flatten(tree, is_leaf)

    def write(node, it):
        if node.kind is None:
            return {leaf_key: next(it)}
        if node.kind is type(None):
            return None
        if node.kind is dict:
            return {"dict": {k: write(c, it) for k, c in zip(node.context, node.children)}}
        body = [write(c, it) for c in node.children]
        return body if issubclass(node.kind, list) else {"tuple": body}

    return write(spec, iter(leaves))


def tree_from_json(value, leaf_key, check_leaf=None):
    """The tree whose JSON form is ``value``; ``check_leaf(leaf)`` must hold for every leaf (when given).
    Anything else raises :class:`TreeFormatError`."""
    def read(node):
        if node is None:
            return None
        if isinstance(node, list):
            return [read(v) for v in node]
        if isinstance(node, dict) and len(node) == 1:
            (kind, body), = node.items()
            if kind == leaf_key and (check_leaf is None or check_leaf(body)):
                return _Leaf(body)
            if kind == "tuple" and isinstance(body, list):
                return tuple(read(v) for v in body)
            if kind == "dict" and isinstance(body, dict):
                return {k: read(v) for k, v in body.items()}
        raise TreeFormatError(f"{node!r:.80}")

    return tree_map(lambda leaf: leaf.value, read(value), is_leaf=lambda v: isinstance(v, _Leaf))
