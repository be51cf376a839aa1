"""``trace(layer, example_inputs)``: run a layer and record the ops it calls as a :class:`~framework.jit.Program`.

**Recording.** While the layer runs (in eval mode, without autograd), every op
(:class:`framework.Function`) reports its class, input Tensors, keyword
attributes and outputs (:func:`framework.tensor.observe_ops`), and every layer
call its name (:func:`framework.nn.layer.observe_layer_calls`), so a node
knows the layer it ran in. An array is a *slot*: an input, a parameter or buffer
of the layer, an op's output, or a constant (an array the ops read that none of
those made, e.g. a table a layer built in NumPy).

**Dynamic axes.** ``dynamic_axes`` names the axes whose size may change
(``{"tokens": {0: "batch", 1: "seq"}, "lengths": {0: "batch"}}``; by default
axis 0 of every input is ``"batch"``). The layer is recorded once with the
example, once more per size symbol with that symbol one larger (inputs grown by
repeating their entries along the axis), and once with every symbol two larger.
The recordings must call the same ops on the same slots: where they do not, the
layer's Python control flow depends on the inputs and the error names the op
and its layer. An int attribute that changes with the sizes becomes a
:class:`~framework.jit.template.SizeExpr` (``c * batch * seq + k`` or
``k + sum(c_i * symbol_i)``) fitted on the single-symbol recordings and checked
on the last one; a constant whose values change with the inputs is refused,
naming the op that reads it (it was computed outside the ops from an input).
"""
import contextlib
import fractions
import inspect
import itertools
import math

import numpy

from .. import backend
from ..errors import UserError
from ..nn.layer import observe_layer_calls
from ..ops.common import Full
from ..tensor import Tensor, no_grad, observe_ops
from ..tree import tree_from_json, tree_map, tree_to_json
from .program import InputSpec, Node, Program
from .passes import DEFAULT_PASSES, EXACT_PASSES, INFERENCE_PASSES, optimize
from .template import Ref, Size, SizeExpr, ref_slots, replace_ints, walk_ints

__all__ = ["trace", "TraceError", "DEFAULT_PASSES", "EXACT_PASSES", "INFERENCE_PASSES", "input_names", "input_leaves", "is_array",
           "positional_names"]


class TraceError(UserError, ValueError):
    """A layer the trace cannot turn into a program; the message names the op and its layer."""


def is_array(value):
    """True for a NumPy or CuPy array."""
    return isinstance(value, numpy.ndarray) or type(value).__module__.startswith("cupy")


class _Recorder:
    """One recording: slots (inputs, parameters, constants, op outputs) and the nodes that connect them."""

    def __init__(self, layer, inputs):
        self.kinds, self.names, self.arrays = [], [], []      # per slot; arrays keep every id unique while recording
        self.slot_of = {}                                     # id(array) -> slot
        self.nodes = []
        self._layer_names = {id(sub): name for name, sub in layer.named_sublayers(include_self=True)}
        self._scope = []
        for name, tensor in inputs:
            self._new("input", name, tensor.data)
        for name, tensor in itertools.chain(layer.named_parameters(), layer.named_buffers()):
            if id(tensor.data) not in self.slot_of:
                self._new("param", name, tensor.data)

    def _new(self, kind, name, array):
        slot = len(self.kinds)
        self.kinds.append(kind)
        self.names.append(name)
        self.arrays.append(array)
        self.slot_of[id(array)] = slot
        return slot

    def slot(self, array):
        slot = self.slot_of.get(id(array))
        return self._new("const", self.scope, array) if slot is None else slot

    @property
    def scope(self):
        return self._scope[-1] if self._scope else ""

    @contextlib.contextmanager
    def layer_call(self, layer):
        name = self._layer_names.get(id(layer))
        self._scope.append(self.scope if name is None else name)
        try:
            yield
        finally:
            self._scope.pop()

    def template(self, value):
        """An attribute with its arrays (and Tensors) replaced by references to their slots."""
        def ref(leaf):
            if isinstance(leaf, Tensor):
                return Ref(self.slot(leaf.data))
            return Ref(self.slot(leaf)) if is_array(leaf) else leaf
        return tree_map(ref, value)

    def op(self, cls, inputs, attrs, result):
        in_slots = tuple(self.slot(t.data) for t in inputs)
        template = {name: self.template(value) for name, value in attrs.items()}
        outs = result if isinstance(result, tuple) else (result,)
        out_slots = tuple(self._new("node", self.scope, t.data) for t in outs)
        self.nodes.append(Node(cls, in_slots, template, out_slots, self.scope, multi=isinstance(result, tuple)))

    def tree(self, value):
        """The output structure (:mod:`framework.tree`: tuples, lists and dicts) with each Tensor replaced by
        its slot number."""
        def slot(leaf):
            if isinstance(leaf, Tensor):
                return self.slot(leaf.data)
            raise TraceError(f"the traced layer returned a {type(leaf).__name__}; a program returns Tensors "
                             "(alone, in tuples, lists or dicts) or None")
        # through the JSON form, so a tuple subclass or an OrderedDict reads as the plain container it is saved as
        return tree_from_json(tree_to_json(tree_map(slot, value), "slot"), "slot")


def positional_names(forward):
    """The names of ``forward``'s positional parameters, in order."""
    return [p.name for p in inspect.signature(forward).parameters.values()
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]


def input_names(parameters, example_inputs):
    """``[(name, value, positional)]`` of the example inputs: a tuple/list by position (named after
    ``parameters``, the forward's positional parameter names), a dict by keyword."""
    if isinstance(example_inputs, dict):
        return [(name, value, False) for name, value in example_inputs.items()]
    if isinstance(example_inputs, (Tensor, numpy.ndarray)) or is_array(example_inputs):
        example_inputs = (example_inputs,)
    names = parameters + [f"input_{i}" for i in range(len(parameters), len(example_inputs))]
    return [(names[i], value, True) for i, value in enumerate(example_inputs)]


def _array_of(name, value):
    data = value.data if isinstance(value, Tensor) else value
    if not is_array(data) or data.dtype.kind not in "biuf":
        raise TraceError(f"example input {name!r} must be a numeric array or Tensor, got {type(value).__name__}")
    return data


def _check_axes(inputs, dynamic_axes):
    """``{name: {axis: symbol}}`` checked against the inputs, and ``{symbol: example size}``."""
    names = {name for name, _ in inputs} | {name.rpartition(".")[0] for name, _ in inputs if "." in name}
    if dynamic_axes is None:
        dynamic_axes = {name: {0: "batch"} for name, array in inputs if array.ndim}
    dynamic_axes = {name: dynamic_axes.get(name, dynamic_axes.get(name.rpartition(".")[0], {}))
                    for name, _ in inputs} | {k: v for k, v in dynamic_axes.items() if k not in names}
    unknown = set(dynamic_axes) - names
    if unknown:
        raise TraceError(f"dynamic_axes names {sorted(unknown)}, which are not inputs (inputs: {sorted(names)})")
    sizes = {}
    for name, array in inputs:
        for axis, symbol in dynamic_axes.get(name, {}).items():
            if not isinstance(axis, int) or not -array.ndim <= axis < array.ndim:
                raise TraceError(f"dynamic_axes: input {name!r} has {array.ndim} axes, no axis {axis!r}")
            size = array.shape[axis]
            if size < 1 or sizes.setdefault(symbol, size) != size:
                raise TraceError(f"dynamic axis {symbol!r}: input {name!r} has size {size} on axis {axis}, "
                                 f"other inputs {sizes[symbol]} (an example needs sizes of at least 1)")
    return {name: {axis % array.ndim: symbol for axis, symbol in dynamic_axes.get(name, {}).items()}
            for name, array in inputs}, sizes


def _grown(array, axes, sizes):
    """``array`` with each dynamic axis grown to ``sizes[symbol]`` by repeating its entries in order."""
    xp = backend.get_array_module(array)
    for axis, symbol in axes.items():
        if array.shape[axis] != sizes[symbol]:
            array = xp.take(array, xp.arange(sizes[symbol]) % array.shape[axis], axis=axis)
    return array


def input_leaves(named):
    """The arrays of ``[(name, value, positional)]`` inputs, a list input giving ``name.0``, ``name.1`` …:
    ``([(leaf name, value)], [(name, positional, list length or None)])``."""
    leaves, groups = [], []
    for name, value, positional in named:
        if isinstance(value, (list, tuple)):
            groups.append((name, positional, len(value)))
            leaves += [(f"{name}.{i}", v) for i, v in enumerate(value)]
        else:
            groups.append((name, positional, None))
            leaves.append((name, value))
    return leaves, groups


def _record(layer, forward, inputs, groups):
    seen = set()
    inputs = [(name, array.copy() if id(array) in seen or seen.add(id(array)) else array)
              for name, array in inputs]                    # one array given as two inputs: two slots
    wrapped = [(name, Tensor(array)) for name, array in inputs]
    recorder = _Recorder(layer, wrapped)
    tensors = iter([tensor for _, tensor in wrapped])
    args, kwargs = [], {}
    for name, positional, count in groups:
        value = next(tensors) if count is None else [next(tensors) for _ in range(count)]
        if positional:
            args.append(value)
        else:
            kwargs[name] = value
    with no_grad(), observe_ops(recorder.op), observe_layer_calls(recorder.layer_call):
        out = forward(*args, **kwargs)
    recorder.outputs = recorder.tree(out)
    return recorder


def _where(node, index):
    scope = f" in layer {node.scope!r}" if node.scope else ""
    return f"op {index} ({node.cls.__name__}{scope})"


def _first_reader(recorder, slot):
    for index, node in enumerate(recorder.nodes):
        if slot in node.inputs or slot in ref_slots(node.attrs):
            return _where(node, index)
    return "the outputs"


def _same_apart_from_ints(a, b):
    """True when two attribute templates are equal except, maybe, for their plain ints."""
    if isinstance(a, (bool, numpy.bool_)) or isinstance(b, (bool, numpy.bool_)):
        return type(a) is type(b) and a == b
    if isinstance(a, int) and isinstance(b, int):
        return True
    if type(a) is not type(b):
        return False
    if isinstance(a, (tuple, list)):
        return len(a) == len(b) and all(_same_apart_from_ints(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same_apart_from_ints(a[k], b[k]) for k in a)
    if isinstance(a, slice):
        return all(_same_apart_from_ints(x, y) for x, y in zip((a.start, a.stop, a.step), (b.start, b.stop, b.step)))
    if isinstance(a, float) and math.isnan(a):
        return math.isnan(b)
    return bool(a == b)


def _fit(values, sizes, symbols):
    """The :class:`SizeExpr` that gives ``values[i]`` for ``sizes[i]`` (recording 0 the example, 1..m one symbol
    one larger each, the last every symbol two larger), or None."""
    base, deltas = values[0], {s: values[1 + i] - values[0] for i, s in enumerate(symbols)}
    depends = [s for s in symbols if deltas[s]]
    candidates = []
    others = {s: math.prod(sizes[0][t] for t in depends if t != s) for s in depends}
    coefficients = {fractions.Fraction(deltas[s], others[s]) for s in depends if others[s]}
    if len(coefficients) == 1:
        (c,) = coefficients
        candidates.append(SizeExpr(base - c * math.prod(sizes[0][s] for s in depends), [(c, tuple(depends))]))
    candidates.append(SizeExpr(base - sum(deltas[s] * sizes[0][s] for s in depends), [(deltas[s], (s,))
                                                                                         for s in depends]))
    for expr in candidates:
        if all(_evaluates(expr, size) == value for value, size in zip(values, sizes)):
            return expr
    return None


def _evaluates(expr, sizes):
    try:
        return expr.evaluate(sizes)
    except ValueError:
        return None


def _filled(recording, slot, arrays, sizes, symbols):
    """A :class:`~framework.ops.common.Full` node making the constant ``slot``, whose shape follows the sizes and
    whose entries are all one value (e.g. a zero initial state); any other input-dependent constant is refused."""
    first = arrays[0].reshape(-1)[:1]
    uniform = all(a.size and a.dtype == arrays[0].dtype and a.ndim == arrays[0].ndim and bool((a == first).all())
                  for a in arrays)
    dims = [_fit([a.shape[axis] for a in arrays], sizes, symbols) for axis in range(arrays[0].ndim)] if uniform else []
    if not uniform or any(d is None for d in dims):
        raise TraceError(f"{_first_reader(recording, slot)} reads an array of shape {arrays[0].shape} that no "
                         f"traced op made and that changes with the inputs: it is computed outside the ops "
                         f"from an input; compute it with framework ops, or pass it as an input")
    shape = tuple(Size(d) if d.terms else int(d.constant) for d in dims)
    return Node(Full, (), {"shape": shape, "value": first.item(), "dtype": arrays[0].dtype}, (slot,),
                recording.names[slot])


def _merge(recordings, sizes, symbols):
    """The nodes of the first recording with their size-following ints as :class:`Size` markers, after checking
    that every recording called the same ops on the same slots."""
    base = recordings[0]
    for other in recordings[1:]:
        for index, (a, b) in enumerate(itertools.zip_longest(base.nodes, other.nodes)):
            if a is None or b is None or (a.cls, a.inputs, len(a.outputs), a.scope) != (b.cls, b.inputs,
                                                                                       len(b.outputs), b.scope):
                node = a or b
                raise TraceError(f"the layer calls other ops for inputs of other sizes, from {_where(node, index)} "
                                 f"on: Python control flow depends on the inputs' sizes or values there; make it "
                                 f"an op, or trace with the axis fixed (dynamic_axes)")
        if other.kinds != base.kinds or other.outputs != base.outputs:
            raise TraceError("the layer's outputs or its constants differ for inputs of other sizes: Python "
                             "control flow depends on the inputs")
    nodes = []
    for slot, kind in enumerate(base.kinds):
        if kind == "const":
            arrays = [r.arrays[slot] for r in recordings]
            if any(a.shape != arrays[0].shape or a.dtype != arrays[0].dtype
                   or not bool((a == arrays[0]).all()) for a in arrays[1:]):
                nodes.append(_filled(base, slot, arrays, sizes, symbols))
                base.kinds[slot] = "node"
    for index, node in enumerate(base.nodes):
        templates = [r.nodes[index].attrs for r in recordings]
        if not all(_same_apart_from_ints(templates[0], t) for t in templates[1:]):
            raise TraceError(f"{_where(node, index)} gets other attribute values for inputs of other sizes "
                             f"({templates[0]} vs {next(t for t in templates[1:] if t != templates[0])})")
        ints = [dict(walk_ints(t)) for t in templates]
        replacements = {}
        for path, value in ints[0].items():
            values = [i[path] for i in ints]
            if len(set(values)) > 1:
                expr = _fit(values, sizes, symbols)
                if expr is None:
                    raise TraceError(f"{_where(node, index)}: attribute {'.'.join(map(str, path))} takes the values "
                                     f"{values} for the sizes {sizes}, which no size expression gives")
                replacements[path] = Size(expr)
        attrs = replace_ints(node.attrs, replacements) if replacements else node.attrs
        nodes.append(Node(node.cls, node.inputs, attrs, node.outputs, node.scope, node.multi))
    return nodes


def trace(layer, example_inputs, dynamic_axes=None, passes=DEFAULT_PASSES, forward=None):
    """Record ``layer`` called on ``example_inputs`` as a :class:`~framework.jit.Program`.

    Args:
        layer: a :class:`framework.nn.Layer` (run in eval mode, without autograd; its mode is restored).
        example_inputs: a Tensor or array, a tuple of them (passed by position) or a dict (by keyword); an
            input may be a list of arrays (the program's inputs ``name.0``, ``name.1`` …).
        dynamic_axes: ``{input name: {axis: symbol}}``; None makes axis 0 of every input ``"batch"``. The axes
            of a list input apply to each of its arrays.
            An axis named here may take any size >= 1 in a call; every other axis keeps its example size.
        passes: the graph passes to run (:data:`DEFAULT_PASSES`; ``()`` for none).
        forward: the function to record (default: calling ``layer``), e.g. the undecorated ``forward`` of a
            layer whose ``forward`` is wrapped by ``to_static``; ``layer`` still gives the parameters.

    Returns:
        a Program whose ``program(*inputs)`` gives the layer's outputs as arrays in the same structure.
    Raises:
        TraceError naming the op and layer where the layer cannot be recorded.
    """
    forward = forward or layer
    parameters = positional_names(layer.forward if forward is layer else forward)
    leaves, groups = input_leaves(input_names(parameters, example_inputs))
    inputs = [(name, _array_of(name, value)) for name, value in leaves]
    axes, example_sizes = _check_axes(inputs, dynamic_axes)
    symbols = list(example_sizes)
    plan = [example_sizes] + [{**example_sizes, s: example_sizes[s] + 1} for s in symbols]
    if symbols:
        plan.append({s: n + 2 for s, n in example_sizes.items()})
    was_training = layer.training
    layer.eval()
    try:
        recordings = [_record(layer, forward, [(name, _grown(array, axes[name], sizes)) for name, array in inputs],
                              groups) for sizes in plan]
    finally:
        layer.train(was_training)
    nodes = _merge(recordings, plan, symbols)
    base = recordings[0]
    specs = [InputSpec(name, array.dtype, tuple(axes[name].get(i, n) for i, n in enumerate(array.shape)))
             for name, array in inputs]
    values = {slot: base.arrays[slot] for slot, kind in enumerate(base.kinds) if kind in ("param", "const")}
    names = {slot: base.names[slot] for slot in values}
    program = Program(specs, nodes, values, base.outputs, len(base.kinds), value_names=names,
                      slot_specs={slot: (a.shape, a.dtype) for slot, a in enumerate(base.arrays)})
    return optimize(program, passes)
