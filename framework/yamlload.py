"""YAML read as data with bounds: PyYAML's safe loader, refusing a document too big to be a config.

YAML's aliases (``*name``) let a few lines stand for a structure exponentially
larger (the "billion laughs"): PyYAML builds it shared, but the first deep copy
or walk expands it and exhausts memory. :class:`BoundedLoader` (libyaml's
parser where PyYAML has it) refuses, before anything is built:

- a document of more than :data:`MAX_BYTES` bytes;
- one whose nodes, each alias counted as everything it stands for, number
  more than :data:`MAX_NODES`, and one with an alias inside itself (a
  recursive structure).

Each refusal is a :class:`YamlLimitError`, a ``yaml.YAMLError``, so every
reader's handling of bad YAML (a one-line ``ConfigError`` naming the file) takes
it as it is. :func:`safe_load` is ``yaml.safe_load`` with these bounds.
"""
import yaml

__all__ = ["BoundedLoader", "YamlLimitError", "safe_load", "MAX_BYTES", "MAX_NODES"]

MAX_BYTES = 8 * 1024 * 1024         # the largest shipped YAML (the catalog) is about 30 KB
MAX_NODES = 200_000                 # scalars, lists and mappings once every alias is expanded

_BASE = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class YamlLimitError(yaml.YAMLError):
    """A YAML document past a bound of :mod:`framework.yamlload`; ``problem`` says which."""

    def __init__(self, problem):
        super().__init__(problem)
        self.problem = problem


class BoundedLoader(_BASE):
    """PyYAML's safe loader (libyaml's where available) with the bounds of the module docstring."""

    def __init__(self, stream):
        text = stream.read(MAX_BYTES + 1) if hasattr(stream, "read") else stream
        if len(text) > MAX_BYTES:
            raise YamlLimitError(f"the document is larger than {MAX_BYTES // (1024 * 1024)} MiB")
        super().__init__(text)

    def get_single_node(self):
        """The document's root node, after :func:`check_expansion`."""
        node = super().get_single_node()
        if node is not None:
            check_expansion(node)
        return node


def _children(node):
    if isinstance(node, yaml.MappingNode):
        return [part for pair in node.value for part in pair]
    if isinstance(node, yaml.SequenceNode):
        return node.value
    return []


def check_expansion(root, limit=MAX_NODES):
    """Raise YamlLimitError when the node tree under ``root``, aliases expanded, has more than ``limit`` nodes or
    holds itself; returns that count. Each node shared through an alias is counted once per use, but walked once."""
    sizes, open_nodes = {}, set()
    stack = [(root, False)]
    while stack:
        node, finished = stack.pop()
        key = id(node)
        if finished:
            open_nodes.discard(key)
            sizes[key] = 1 + sum(sizes[id(child)] for child in _children(node))
            if sizes[key] > limit:
                raise YamlLimitError(f"the document expands to more than {limit:,} values through its aliases")
            continue
        if key in sizes:
            continue
        if key in open_nodes:
            raise YamlLimitError("an alias refers to a node that contains it (a recursive structure)")
        open_nodes.add(key)
        stack.append((node, True))
        stack.extend((child, False) for child in _children(node) if id(child) not in sizes)
    return sizes[id(root)]


def safe_load(stream):
    """The data of the YAML document in ``stream`` (a string or a text file), as ``yaml.safe_load`` gives it, within
    the module's bounds (else YamlLimitError)."""
    return yaml.load(stream, Loader=BoundedLoader)
