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

import numpy

from .. import backend
from ..errors import InputError
from ..tensor import Tensor
from .template import has_markers, ref_slots, resolve

__all__ = ["Program", "Node", "InputSpec", "GuardError", "build_outputs"]


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


class Program:
    """A traced graph (module docstring). Built by :func:`framework.jit.trace` or :func:`framework.jit.load`.

    Attributes:
        inputs: the :class:`InputSpec` of each input, in call order.
        nodes: the :class:`Node` list, in execution order.
        values: ``{slot: array}`` of the parameters and constants.
        outputs: the output structure (``{"slot": k}`` leaves, ``{"tuple": [...]}``, lists, ``{"dict": {...}}``).
        num_slots: how many slots the program numbers.
        value_names: ``{slot: name}`` (parameter names; a constant's layer).
    """

    def __init__(self, inputs, nodes, values, outputs, num_slots, value_names=None, slot_specs=None):
        self.inputs = list(inputs)
        self.nodes = list(nodes)
        self.values = dict(values)
        self.outputs = outputs
        self.num_slots = num_slots
        self.value_names = dict(value_names or {})
        self.slot_specs = dict(slot_specs or {})      # trace-time (shape, dtype) per slot, for the passes
        self.symbols = sorted({n for spec in self.inputs for n in spec.shape if isinstance(n, str)})
        self._plan = None

    # ---- building the replay plan -------------------------------------------------------------------------
    def output_slots(self):
        """Every slot the outputs name."""
        found = []

        def walk(tree):
            if isinstance(tree, dict) and "slot" in tree:
                found.append(tree["slot"])
            elif isinstance(tree, dict):
                for v in (tree.get("tuple") or tree.get("dict", {}).values()):
                    walk(v)
            elif isinstance(tree, list):
                for v in tree:
                    walk(v)
        walk(self.outputs)
        return found

    def _build_plan(self):
        """Per node: (cls, input slots, attrs or template, needs resolving, output slots, multi, slots to free)."""
        keep = set(self.output_slots()) | set(self.values) | set(range(len(self.inputs)))
        last_use = {}
        for index, node in enumerate(self.nodes):
            for slot in node.inputs + tuple(ref_slots(node.attrs)):
                last_use[slot] = index
        frees = [[] for _ in self.nodes]
        for slot, index in last_use.items():
            if slot not in keep:
                frees[index].append(slot)
        for index, node in enumerate(self.nodes):      # an output nobody reads is dropped at once
            frees[index].extend(s for s in node.outputs if s not in last_use and s not in keep)
        self._plan = [(node.cls, node.inputs, node.attrs, has_markers(node.attrs), node.outputs, node.multi,
                       tuple(free)) for node, free in zip(self.nodes, frees)]

    def to(self, device):
        """Move the values to ``device`` ('cpu' or 'gpu'); returns self."""
        self.values = {slot: backend.to_device(array, device) for slot, array in self.values.items()}
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
        for cls, inputs, attrs, dynamic, outputs, multi, free in self._plan:
            fn = cls.__new__(cls)
            fn.__dict__.update(resolve(attrs, env, sizes) if dynamic else attrs)
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


def build_outputs(tree, values, leaf="slot"):
    """The output structure ``tree`` (``{leaf: key}`` leaves, ``{"tuple": [...]}``, lists, ``{"dict": {...}}``,
    None) with each leaf replaced by ``values[key]``."""
    if tree is None:
        return None
    if isinstance(tree, list):
        return [build_outputs(v, values, leaf) for v in tree]
    if "tuple" in tree:
        return tuple(build_outputs(v, values, leaf) for v in tree["tuple"])
    if "dict" in tree:
        return {k: build_outputs(v, values, leaf) for k, v in tree["dict"].items()}
    return values[tree[leaf]]
