"""``Program``: a recorded graph of ops that replays on raw arrays.

A program has numbered *slots*: its inputs (0 .. n-1), its *values* (the
parameters and constants it holds as arrays) and the outputs of its nodes. A
:class:`Node` is one op: its :class:`framework.Function` class, the slots it
reads, its attribute template (:mod:`framework.jit.template`), the slots it
writes and the layer it was recorded in.

``program(*inputs, **named_inputs)`` checks the inputs against the traced ones
(:class:`InputSpec`: dtype, rank, every axis that is not dynamic, and one size per
size symbol), then runs each node's ``forward`` on arrays: no Tensor wrappers,
no autograd bookkeeping, and each intermediate array dropped right after its
last reader so its memory is reused. It returns arrays in the traced output
structure (a Tensor input is read as its array).
"""
import dataclasses
import typing

import numpy

from .. import backend
from ..errors import InputError
from ..tensor import Tensor
from ..tree import tree_leaves, tree_map
from .template import has_markers, ref_slots, rename_refs, resolve_keys, size_symbols

__all__ = ["Program", "Node", "InputSpec", "SlotSpec", "GuardError", "UnknownSlotError", "build_outputs"]


class GuardError(InputError):
    """A call the program cannot serve (an input of another dtype, rank or fixed size); the message names the
    input, its shape and the traced one."""


@dataclasses.dataclass
class InputSpec:
    """One traced input: its name, dtype and shape, an int for a fixed axis or a symbol (str) for a dynamic one."""
    name: str
    dtype: numpy.dtype
    shape: tuple

    def describe(self):
        return f"({', '.join(str(n) for n in self.shape)}{',' if len(self.shape) == 1 else ''}) {self.dtype}"


@dataclasses.dataclass
class Node:
    """One op of a program (see the module docstring); ``multi`` when the op returns a tuple."""
    cls: type
    inputs: tuple
    attrs: dict
    outputs: tuple
    scope: str = ""
    multi: bool = False


def _describe(array):
    return f"{tuple(array.shape)} {array.dtype}"


class UnknownSlotError(KeyError):
    """A slot the program has no trace-time shape for (or no slot at all); the message names it."""

    def __str__(self):
        return str(self.args[0]) if self.args else ""


class SlotSpec(typing.NamedTuple):
    """The trace-time shape (a tuple of ints) and dtype of one slot."""
    shape: tuple
    dtype: numpy.dtype


class Program:
    """A traced graph (module docstring). Built by :func:`framework.jit.trace` or :func:`framework.jit.load`.

    Read it through its API (graph passes, ONNX export and compression do):

    - ``inputs``: the :class:`InputSpec` of each input, in call order (input ``i`` is slot ``i``);
    - ``outputs``: the output structure, a tree (:mod:`framework.tree`) of slot numbers in tuples, lists
      and dicts (None for a layer that returns None); :meth:`output_slots` lists its slots;
    - ``nodes``: the :class:`Node` tuple in execution order (``for node in program`` iterates it);
      :meth:`producers`, :meth:`readers` and :meth:`read_counts` index it by slot;
    - :meth:`spec`: a slot's trace-time :class:`SlotSpec` (shape, dtype);
    - ``values`` (``{slot: array}``, the parameters and constants), :meth:`is_value`, :meth:`value`,
      :meth:`value_name` (``value_names``: ``{slot: name}``, a parameter's name or a constant's layer);
    - changes: :meth:`replace_nodes` (a new node list, slots renamed), :meth:`add_value`,
      :meth:`set_value`, :meth:`remove_values`, :meth:`to`. Each drops the replay plan.

    ``num_slots`` is how many slots the program numbers.
    """

    def __init__(self, inputs, nodes, values, outputs, num_slots, value_names=None, slot_specs=None):
        self.inputs = list(inputs)
        self._nodes = tuple(nodes)
        self.values = dict(values)
        self.outputs = outputs
        self.num_slots = num_slots
        self.value_names = dict(value_names or {})
        self.slot_specs = {slot: SlotSpec(tuple(shape), numpy.dtype(dtype))
                           for slot, (shape, dtype) in (slot_specs or {}).items()}
        self.symbols = sorted({n for spec in self.inputs for n in spec.shape if isinstance(n, str)})
        self._plan = None

    # ---- reading the graph --------------------------------------------------------------------------------
    @property
    def nodes(self):
        """The nodes in execution order (a tuple: change them with :meth:`replace_nodes`)."""
        return self._nodes

    def __iter__(self):
        return iter(self._nodes)

    def output_slots(self):
        """Every slot the outputs name, in the order of the output structure."""
        return tree_leaves(self.outputs)

    def spec(self, slot):
        """The trace-time :class:`SlotSpec` (shape, dtype) of ``slot``; UnknownSlotError when the program has
        none for it (a program file written without slot specs)."""
        found = self.slot_specs.get(slot)
        if found is None:
            if not (isinstance(slot, int) and 0 <= slot < self.num_slots):
                raise UnknownSlotError(f"the program has slots 0..{self.num_slots - 1}, not {slot!r}")
            raise UnknownSlotError(f"the program has no trace-time shape for slot {slot} (written without slot "
                                   f"specs: trace and save it again)")
        return found

    def is_value(self, slot):
        """True when ``slot`` holds a value (a parameter or constant) rather than an input or an op's output."""
        return slot in self.values

    def value(self, slot):
        """The array of the value ``slot``."""
        return self.values[slot]

    def value_name(self, slot, default=None):
        """The name of the value ``slot`` (a parameter's name, a constant's layer), or ``default``."""
        return self.value_names.get(slot) or default

    def producers(self):
        """``{slot: the node that writes it}``."""
        return {slot: node for node in self._nodes for slot in node.outputs}

    def readers(self, slot):
        """The nodes that read ``slot`` (as an input or through an attribute), in order."""
        return [node for node in self._nodes if slot in node.inputs or slot in ref_slots(node.attrs)]

    def read_counts(self):
        """``{slot: number of nodes (and output leaves) reading it}``."""
        counts = {}
        for node in self._nodes:
            for slot in set(node.inputs) | set(ref_slots(node.attrs)):
                counts[slot] = counts.get(slot, 0) + 1
        for slot in self.output_slots():
            counts[slot] = counts.get(slot, 0) + 1
        return counts

    # ---- changing the graph -------------------------------------------------------------------------------
    def replace_nodes(self, nodes, renames=None):
        """Make ``nodes`` the program's nodes; with ``renames`` ({old slot: new slot}) every read of an old
        slot (node inputs, attribute references, outputs) reads the new one. Returns self."""
        nodes = tuple(nodes)
        if renames:
            nodes = tuple(dataclasses.replace(node, inputs=tuple(renames.get(s, s) for s in node.inputs),
                                              attrs=rename_refs(node.attrs, renames)) for node in nodes)
            self.outputs = tree_map(lambda slot: renames.get(slot, slot), self.outputs)
        self._nodes = nodes
        self._plan = None
        return self

    def add_value(self, array, name):
        """A new slot holding the value ``array`` (named ``name``); returns the slot."""
        slot = self.num_slots
        self.num_slots += 1
        self.set_value(slot, array, name)
        return slot

    def set_value(self, slot, array, name):
        """Make ``slot`` hold the value ``array`` named ``name`` (its spec follows the array)."""
        self.values[slot] = array
        self.value_names[slot] = name
        self.slot_specs[slot] = SlotSpec(tuple(array.shape), numpy.dtype(array.dtype))
        self._plan = None

    def remove_values(self, slots):
        """Drop the values ``slots``."""
        for slot in list(slots):
            del self.values[slot]
            self.value_names.pop(slot, None)
        self._plan = None

    # ---- building the replay plan -------------------------------------------------------------------------
    def _build_plan(self):
        """Per node: (cls, input slots, attrs or template, needs resolving, the attribute names to resolve, output
        slots, multi, slots to free)."""
        keep = set(self.output_slots()) | set(self.values) | set(range(len(self.inputs)))
        last_use = {}
        for index, node in enumerate(self._nodes):
            for slot in node.inputs + tuple(ref_slots(node.attrs)):
                last_use[slot] = index
        frees = [[] for _ in self._nodes]
        for slot, index in last_use.items():
            if slot not in keep:
                frees[index].append(slot)
        for index, node in enumerate(self._nodes):      # an output nobody reads is dropped at once
            frees[index].extend(s for s in node.outputs if s not in last_use and s not in keep)
        self._plan = []
        for node, free in zip(self._nodes, frees):
            keys = tuple(k for k, v in node.attrs.items() if has_markers(v))
            kind = _attrs_kind(node.attrs, keys)
            symbols = size_symbols([node.attrs[k] for k in keys]) if kind == _SIZED else ()
            self._plan.append((node.cls, node.inputs, node.attrs, kind, keys, symbols, node.outputs, node.multi,
                               tuple(free)))
        self._resolved = [{} for _ in self._plan]

    def to(self, device):
        """Move the values to ``device`` ('cpu' or 'gpu'); returns self."""
        self.values = {slot: backend.to_device(array, device) for slot, array in self.values.items()}
        self._plan = None
        return self

    # ---- calling ------------------------------------------------------------------------------------------
    def _bind(self, args, kwargs):
        """The input arrays in call order and ``{symbol: size}``, after the guards."""
        if len(args) > len(self.inputs):
            raise GuardError(f"the program takes {len(self.inputs)} inputs "
                             f"({', '.join(s.name for s in self.inputs)}), got {len(args)} by position")
        given = dict(zip((s.name for s in self.inputs), args))
        for name, value in kwargs.items():
            leaves = ({f"{name}.{i}": v for i, v in enumerate(value)} if isinstance(value, (list, tuple))
                      else {name: value})             # a list input: its arrays are the inputs name.0, name.1 …
            for leaf, array in leaves.items():
                if leaf in given:
                    raise GuardError(f"program input {leaf!r} given twice")
                given[leaf] = array
        names = [s.name for s in self.inputs]
        extra = [name for name, value in given.items() if name not in names and value is not None]
        missing = [name for name in names if given.get(name) is None]
        if extra or missing:
            raise GuardError(f"the program was traced with the inputs {names}; "
                             + (f"missing {missing}" if missing else "") + ("; " if extra and missing else "")
                             + (f"not traced: {extra}" if extra else ""))
        arrays, sizes = [], {}
        for spec in self.inputs:
            value = given[spec.name]
            array = value.data if isinstance(value, Tensor) else value
            if not hasattr(array, "dtype") or not hasattr(array, "shape"):
                raise GuardError(f"program input {spec.name!r} must be an array, got {type(value).__name__}")
            if array.dtype != spec.dtype or array.ndim != len(spec.shape):
                raise GuardError(f"program input {spec.name!r} is {_describe(array)}; the program was traced "
                                 f"for {spec.describe()}")
            for axis, (size, traced) in enumerate(zip(array.shape, spec.shape)):
                if isinstance(traced, str):
                    if size < 1 or sizes.setdefault(traced, size) != size:
                        raise GuardError(f"program input {spec.name!r} is {_describe(array)}: axis {axis} "
                                         f"({traced}) must be at least 1 and match the other inputs' {traced} "
                                         f"({sizes.get(traced)}); traced for {spec.describe()}")
                elif size != traced:
                    raise GuardError(f"program input {spec.name!r} is {_describe(array)}; the program was traced "
                                     f"for {spec.describe()} (axis {axis} is fixed at {traced})")
            arrays.append(array)
        return arrays, sizes

    def __call__(self, *args, **kwargs):
        """Run the program: inputs by position (traced order) or by name (a list for a list input) -> arrays in
        the output structure."""
        arrays, sizes = self._bind(args, kwargs)
        if self._plan is None:
            self._build_plan()
        xp = backend.get_array_module(arrays[0]) if arrays else numpy
        kind = type(arrays[0]) if arrays else numpy.ndarray
        env = [None] * self.num_slots
        env[:len(arrays)] = arrays
        for slot, array in self.values.items():
            env[slot] = array
        for index, (cls, inputs, attrs, dynamic, keys, symbols, outputs, multi, free) in enumerate(self._plan):
            fn = cls.__new__(cls)
            if dynamic == _SIZED:
                attrs = self._sized_attrs(index, attrs, keys, symbols, env, sizes)
            elif dynamic == _READS_SLOTS:
                attrs = resolve_keys(attrs, keys, env, sizes)
            fn.__dict__.update(attrs)
            fn.xp = xp
            out = fn.forward(*[env[s] for s in inputs])
            if multi:
                for slot, array in zip(outputs, out):
                    env[slot] = array if type(array) is kind else xp.asarray(array)
            else:
                env[outputs[0]] = out if type(out) is kind else xp.asarray(out)
            for slot in free:
                env[slot] = None
        return build_outputs(self.outputs, env)

    _SIZES_KEPT = 32          # sizes whose resolved attributes a node keeps (a server sees many)

    def _sized_attrs(self, index, attrs, keys, symbols, env, sizes):
        """Node ``index``'s attributes resolved for the sizes of the symbols they use (``symbols``), kept for the
        last ``_SIZES_KEPT`` such sizes, so a repeated size skips the arithmetic (a batch-size-only attribute
        is resolved once for every sequence length)."""
        kept = self._resolved[index]
        key = tuple([sizes[s] for s in symbols])
        found = kept.get(key)
        if found is None:
            if len(kept) >= self._SIZES_KEPT:
                kept.pop(next(iter(kept)))
            found = kept[key] = resolve_keys(attrs, keys, env, sizes)
        return found

    # ---- description --------------------------------------------------------------------------------------
    def op_counts(self):
        """``{op class name: count}``."""
        counts = {}
        for node in self.nodes:
            counts[node.cls.__name__] = counts.get(node.cls.__name__, 0) + 1
        return counts

    def __repr__(self):
        inputs = ", ".join(f"{s.name}: {s.describe()}" for s in self.inputs)
        size = sum(int(a.nbytes) for a in self.values.values())
        return f"Program({inputs}; {len(self.nodes)} ops, {len(self.values)} values, {size / 1e6:.1f} MB)"


_FIXED, _SIZED, _READS_SLOTS = range(3)


def _attrs_kind(attrs, keys):
    """How a node's attributes are had at replay (``keys``: the names of those holding markers): as recorded
    (``_FIXED``), resolved once per set of input sizes and kept (``_SIZED``, see ``Program._sized_attrs``), or
    resolved on every call (``_READS_SLOTS``)."""
    if not keys:
        return _FIXED
    return _READS_SLOTS if any(ref_slots(attrs[k]) for k in keys) else _SIZED


def build_outputs(tree, values):
    """The output structure ``tree`` (a tree of keys, :mod:`framework.tree`) with each key replaced by
    ``values[key]``."""
    return tree_map(values.__getitem__, tree)
