"""Converters of the tensor ops: elementwise math, activations, reductions, shapes, indexing, lookups.

Each converter reproduces its op's ``forward`` (``framework/ops/*.py``) in ONNX
opset 17. Attributes that follow the input sizes (:class:`Size` markers) become
shape arithmetic through :meth:`Graph.shape`.
"""
import math

import numpy
from onnx import helper

from ..jit.template import Size
from ..ops.activation import ELU, GELU, Hardswish, LeakyReLU, LogSoftmax, ReLU, Sigmoid, SiLU, Softmax, Softplus, Tanh
from ..ops.common import Embedding, Full, PackedPositions, SequenceMask
from ..ops.linalg import Linear, MatMul
from ..ops.manipulation import (Concat, Expand, Flip, GetItem, Pad, Reshape, Split, Stack, Take, TakeAlongAxis, Tile,
                                Transpose)
from ..ops.math import (Abs, Add, Cast, Clip, Divide, Exp, Identity, Log, Maximum, Minimum, Multiply, Neg, Pow,
                        PowScalar, Sqrt, Subtract, Where)
from ..ops.reduce import Extremum, LogSumExp, Mean, Sum, Var
from .errors import UnsupportedOpError
from .graph import INT64_MIN, converts, onnx_dtype

_UNARY = {Neg: "Neg", Exp: "Exp", Log: "Log", Sqrt: "Sqrt", Abs: "Abs", ReLU: "Relu", Sigmoid: "Sigmoid",
          Tanh: "Tanh", Identity: "Identity", Hardswish: "HardSwish"}
_BINARY = {Add: "Add", Subtract: "Sub", Multiply: "Mul", Pow: "Pow", Maximum: "Max", Minimum: "Min"}


# ---- elementwise ----------------------------------------------------------------------------------------------
@converts(*_UNARY)
def unary(g, node, inputs):
    return g.op(_UNARY[node.cls], inputs)


@converts(*_BINARY)
def binary(g, node, inputs):
    return g.op(_BINARY[node.cls], inputs)


@converts(Divide)
def divide(g, node, inputs):
    """True division; integer operands are divided as float64, as NumPy does."""
    if g.dtype(node.inputs[0]).kind in "iu":
        inputs = [g.cast(name, numpy.float64) for name in inputs]
    return g.op("Div", inputs)


@converts(PowScalar)
def pow_scalar(g, node, inputs):
    return g.op("Pow", [inputs[0], g.scalar_like(node, node.attrs["exponent"])])


@converts(Clip)
def clip(g, node, inputs):
    bounds = [("" if node.attrs[k] is None else g.scalar_like(node, node.attrs[k])) for k in ("lo", "hi")]
    return g.op("Clip", inputs + bounds)


@converts(Where)
def where(g, node, inputs):
    return g.op("Where", [g.ref(node.attrs["condition"])] + inputs)


@converts(Cast)
def cast(g, node, inputs):
    return g.cast(inputs[0], node.attrs["dtype"])


# ---- activations ------------------------------------------------------------------------------------------------
@converts(LeakyReLU)
def leaky_relu(g, node, inputs):
    return g.op("LeakyRelu", inputs, alpha=float(node.attrs["slope"]))


@converts(ELU)
def elu(g, node, inputs):
    return g.op("Elu", inputs, alpha=float(node.attrs["alpha"]))


@converts(GELU)
def gelu(g, node, inputs):
    """x * Phi(x) (erf), or the tanh approximation (opset 17 has no Gelu op)."""
    x = inputs[0]
    if node.attrs["approximate"]:
        cube = g.op("Mul", [g.op("Mul", [x, x]), x])
        inner = g.op("Mul", [g.op("Add", [x, g.op("Mul", [cube, g.scalar_like(node, GELU._K)])]),
                             g.scalar_like(node, GELU._C)])
        gate = g.op("Tanh", [inner])
    else:
        gate = g.op("Erf", [g.op("Mul", [x, g.scalar_like(node, 1 / math.sqrt(2))])])
    half_gate = g.op("Mul", [g.op("Add", [gate, g.scalar_like(node, 1.0)]), g.scalar_like(node, 0.5)])
    return g.op("Mul", [x, half_gate])


@converts(Softplus)
def softplus(g, node, inputs):
    """x where beta * x > threshold, else log(1 + exp(beta * x)) / beta."""
    x = inputs[0]
    z = g.op("Mul", [x, g.scalar_like(node, node.attrs["beta"])])
    smooth = g.op("Div", [g.op("Softplus", [z]), g.scalar_like(node, node.attrs["beta"])])
    return g.op("Where", [g.op("Greater", [z, g.scalar_like(node, node.attrs["threshold"])]), x, smooth])


@converts(SiLU)
def silu(g, node, inputs):
    return g.op("Mul", [inputs[0], g.op("Sigmoid", inputs)])


@converts(Softmax, LogSoftmax)
def softmax(g, node, inputs):
    return g.op(node.cls.__name__, inputs, axis=int(node.attrs["axis"]))


# ---- reductions -------------------------------------------------------------------------------------------------
@converts(Sum, Mean, LogSumExp)
def reduce(g, node, inputs):
    op_type = {Sum: "ReduceSum", Mean: "ReduceMean", LogSumExp: "ReduceLogSumExp"}[node.cls]
    return g.reduce(op_type, inputs[0], node.attrs["axes"], node.attrs["keepdim"])


@converts(Extremum)
def extremum(g, node, inputs):
    op_type = "ReduceMax" if node.attrs["largest"] else "ReduceMin"
    return g.reduce(op_type, inputs[0], node.attrs["axes"], node.attrs["keepdim"])


@converts(Var)
def var(g, node, inputs):
    """sum((x - mean)^2) / divisor."""
    x, axes = inputs[0], node.attrs["axes"]
    centred = g.op("Sub", [x, g.reduce("ReduceMean", x, axes, True)])
    total = g.reduce("ReduceSum", g.op("Mul", [centred, centred]), axes, node.attrs["keepdim"])
    return g.op("Div", [total, g.scalar_like(node, node.attrs["divisor"])])


# ---- products and lookups ---------------------------------------------------------------------------------------
def _swap_last(g, name, rank):
    perm = list(range(rank))
    perm[-2:] = perm[-1], perm[-2]
    return g.op("Transpose", [name], perm=perm)


@converts(MatMul)
def matmul(g, node, inputs):
    x, y = inputs
    if node.attrs["transpose_x"] and g.rank(node.inputs[0]) > 1:
        x = _swap_last(g, x, g.rank(node.inputs[0]))
    if node.attrs["transpose_y"] and g.rank(node.inputs[1]) > 1:
        y = _swap_last(g, y, g.rank(node.inputs[1]))
    return g.op("MatMul", [x, y])


@converts(Linear)
def linear(g, node, inputs):
    """x @ weight (in, out) [+ bias]."""
    y = g.op("MatMul", inputs[:2])
    return g.op("Add", [y, inputs[2]]) if len(inputs) > 2 else y


@converts(Embedding)
def embedding(g, node, inputs):
    ids, weight = inputs
    return g.op("Gather", [weight, ids], axis=0)


@converts(Take)
def take(g, node, inputs):
    return g.op("Gather", inputs, axis=int(node.attrs["axis"]))


@converts(TakeAlongAxis)
def take_along_axis(g, node, inputs):
    """GatherElements, with the indices first broadcast to x's shape off ``axis``."""
    x, indices = inputs
    axis, rank = int(node.attrs["axis"]), g.rank(node.inputs[0])
    pieces = [g.slice(g.op("Shape", [x]), [0], [axis], [0]) if axis else None, g.dim(indices, axis),
              g.slice(g.op("Shape", [x]), [axis + 1], [rank], [0]) if axis + 1 < rank else None]
    target = g.op("Concat", [p for p in pieces if p is not None], axis=0)
    return g.op("GatherElements", [x, g.op("Expand", [indices, target])], axis=axis)


# ---- made arrays ------------------------------------------------------------------------------------------------
@converts(Full)
def full(g, node, inputs):
    dtype = numpy.dtype(node.attrs["dtype"])
    value = helper.make_tensor("value", onnx_dtype(dtype), [1], numpy.asarray([node.attrs["value"]], dtype).tolist())
    return g.op("ConstantOfShape", [g.shape(node.attrs["shape"])], value=value)


@converts(SequenceMask)
def sequence_mask(g, node, inputs):
    """mask[..., j] = j < lengths[...], j in range(maxlen or max(lengths))."""
    lengths = g.cast(inputs[0], numpy.int64)
    maxlen = node.attrs["maxlen"]
    stop = (g.squeeze(g.shape([maxlen]), [0]) if maxlen is not None
            else g.op("ReduceMax", [lengths], keepdims=0))
    positions = g.op("Range", [g.const(numpy.int64(0)), stop, g.const(numpy.int64(1))])
    mask = g.op("Less", [positions, g.unsqueeze(lengths, [-1])])
    return g.cast(mask, node.attrs["dtype"])


@converts(PackedPositions)
def packed_positions(g, node, inputs):
    """rows = the flat positions n * maxlen + t with t < lengths[n]; index = each position's packed row
    (a running count of the valid positions), or the number of valid positions P for a padded one."""
    lengths = g.cast(inputs[0], numpy.int64)
    positions = g.op("Range", [g.const(numpy.int64(0)), g.squeeze(g.shape([node.attrs["maxlen"]]), [0]),
                               g.const(numpy.int64(1))])
    valid = g.op("Reshape", [g.op("Less", [positions, g.unsqueeze(lengths, [-1])]), g.const(numpy.array([-1]))])
    counts = g.cast(valid, numpy.int64)
    rows = g.op("Reshape", [g.op("NonZero", [valid]), g.const(numpy.array([-1]))])
    packed = g.op("Sub", [g.op("CumSum", [counts, g.const(numpy.int64(0))]), g.const(numpy.int64(1))])
    total = g.op("ReduceSum", [counts], keepdims=0)
    return rows, g.op("Where", [valid, packed, total])


# ---- shapes -----------------------------------------------------------------------------------------------------
@converts(Reshape)
def reshape(g, node, inputs):
    """NumPy reshape: a 0 is a zero-size axis (``allowzero``), -1 the inferred one."""
    return g.op("Reshape", [inputs[0], g.shape(node.attrs["shape"])], allowzero=1)


@converts(Transpose)
def transpose(g, node, inputs):
    rank = g.rank(node.inputs[0])
    return g.op("Transpose", inputs, perm=[int(p) % rank for p in node.attrs["perm"]])


@converts(Concat)
def concat(g, node, inputs):
    return g.op("Concat", inputs, axis=int(node.attrs["axis"]))


@converts(Stack)
def stack(g, node, inputs):
    axis = int(node.attrs["axis"])
    return g.op("Concat", [g.unsqueeze(x, [axis]) for x in inputs], axis=axis)


@converts(Split)
def split(g, node, inputs):
    """One Slice per part (the bounds may follow the sizes)."""
    bounds, axis = node.attrs["bounds"], int(node.attrs["axis"])
    return tuple(g.slice(inputs[0], [start], [stop], [axis]) for start, stop in zip(bounds, bounds[1:]))


@converts(Expand)
def expand(g, node, inputs):
    return g.op("Expand", [inputs[0], g.shape(node.attrs["shape"])])


@converts(Tile)
def tile(g, node, inputs):
    return g.op("Tile", [inputs[0], g.shape(node.attrs["reps"])])


@converts(Flip)
def flip(g, node, inputs):
    axes = list(node.attrs["axes"])
    return g.slice(inputs[0], [-1] * len(axes), [INT64_MIN] * len(axes), axes, [-1] * len(axes))


@converts(Pad)
def pad(g, node, inputs):
    """Constant, reflect and edge padding (circular needs opset 19's ``wrap``)."""
    modes = {"constant": "constant", "reflect": "reflect", "replicate": "edge"}
    mode = node.attrs["mode"]
    if mode not in modes:
        raise UnsupportedOpError(f"pad mode {mode!r} has no opset-17 equivalent")
    widths = node.attrs["widths"]
    pads = g.shape([before for before, _ in widths] + [after for _, after in widths])
    value = [g.scalar_like(node, node.attrs["value"])] if mode == "constant" else []
    return g.op("Pad", [inputs[0], pads] + value, mode=modes[mode])


@converts(GetItem)
def getitem(g, node, inputs):
    """Basic indexing (ints, slices of any step, None, Ellipsis): Slice, then Squeeze and Unsqueeze."""
    index = node.attrs["index"]
    entries = list(index) if type(index) is tuple else [index]
    if node.attrs["advanced"] or any(isinstance(e, (bool, numpy.bool_)) for e in entries):
        raise UnsupportedOpError("indexing with arrays or bool masks is not exported; only basic indexing "
                                 "(ints, slices, None, Ellipsis)")
    if Ellipsis in entries:
        at = entries.index(Ellipsis)
        used = sum(e is not None for e in entries) - 1
        entries[at:at + 1] = [slice(None)] * (g.rank(node.inputs[0]) - used)
    cuts, dropped, added, axis, out_axis = [], [], [], 0, 0
    for entry in entries:
        if entry is None:
            added.append(out_axis)
            out_axis += 1
            continue
        if isinstance(entry, (int, numpy.integer)):
            cuts.append((int(entry), int(entry) + 1 or None, 1, axis))
            dropped.append(axis)
        else:
            out_axis += 1
            if not _whole(entry):
                cuts.append((*_bounds(entry), axis))
        axis += 1
    x = inputs[0]
    if cuts:
        starts, ends, steps, axes = zip(*cuts)
        x = g.slice(x, starts, ends, axes, steps)
    if dropped:
        x = g.squeeze(x, dropped)
    if added:
        x = g.unsqueeze(x, added)
    return x


def _whole(entry):
    start, stop, step = (tuple(entry) if not isinstance(entry, slice) else (entry.start, entry.stop, entry.step))
    return start is None and stop is None and step in (None, 1)


def _bounds(entry):
    """(start, stop, step) of a slice or :class:`SliceTemplate` for ONNX Slice (None bounds made explicit)."""
    start, stop, step = (tuple(entry) if not isinstance(entry, slice) else (entry.start, entry.stop, entry.step))
    step = 1 if step is None else step
    if isinstance(step, Size):
        raise UnsupportedOpError("a slice step that follows the input sizes is not exported")
    if start is None:
        start = 0 if step > 0 else -1
    if stop is None:
        stop = None if step > 0 else INT64_MIN
    return start, stop, int(step)
