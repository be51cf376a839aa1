"""Converters of the layer ops: convolution, pooling, normalisation and the temporal shift."""
import math

import numpy

from ..ops.conv import ConvNd
from ..ops.norm import BatchNorm, ChannelAffine, LpNormalize, Normalize
from ..ops.pooling import AdaptiveAvgPoolNd, PoolNd
from ..ops.temporal import TemporalShift
from ..kernels.temporal_shift import shift_folds
from .errors import UnsupportedOpError
from .graph import converts


def _pads(padding):
    """oar's ((before, after), ...) as ONNX's [before..., after...]."""
    return [int(lo) for lo, _ in padding] + [int(hi) for _, hi in padding]


@converts(ConvNd)
def conv(g, node, inputs):
    """Conv over 1-3 spatial axes with stride, (before, after) padding, dilation and groups."""
    a = node.attrs
    return g.op("Conv", inputs, kernel_shape=list(a["kernel"]), strides=list(a["stride"]), pads=_pads(a["padding"]),
                dilations=list(a["dilation"]), group=int(a["groups"]))


@converts(PoolNd)
def pool(g, node, inputs):
    """MaxPool; AveragePool over the zero-padded windows, rescaled where oar's divisor is not the kernel size."""
    a = node.attrs
    geometry = dict(kernel_shape=list(a["kernel"]), strides=list(a["stride"]), pads=_pads(a["padding"]))
    if a["mode"] == "max":
        return g.op("MaxPool", inputs, **geometry)
    y = g.op("AveragePool", inputs, count_include_pad=1, **geometry)
    divisor = g.constant(a["divisor"], "average pool divisor").astype(numpy.float64)
    taps = math.prod(a["kernel"])
    if numpy.all(divisor == taps):
        return y
    return g.op("Mul", [y, g.const(taps / divisor, dtype=g.dtype(node.inputs[0]), hint="pool_rescale")])


@converts(AdaptiveAvgPoolNd)
def adaptive_avg_pool(g, node, inputs):
    """A mean over the spatial axes when each output is one window over the whole axis, else one averaging
    matrix per axis (as the op computes it)."""
    weights = [g.constant(w, "adaptive pool weights") for w in node.attrs["weights"]]
    x, rank = inputs[0], g.rank(node.inputs[0])
    if all(w.shape[0] == 1 for w in weights):
        return g.reduce("ReduceMean", x, range(2, rank), True)
    dtype = g.dtype(node.inputs[0])
    for axis, w in enumerate(weights, start=2):
        perm = list(range(rank))
        perm[axis], perm[-1] = perm[-1], perm[axis]
        moved = g.op("Transpose", [x], perm=perm)
        x = g.op("Transpose", [g.op("MatMul", [moved, g.const(w.T, dtype=dtype, hint="adaptive_pool")])], perm=perm)
    return x


@converts(BatchNorm)
def batch_norm(g, node, inputs):
    """Inference-mode BatchNormalization with the running statistics (batch statistics are not exported)."""
    fixed = node.attrs["fixed"]
    if fixed is None:
        raise UnsupportedOpError("a batch norm with batch statistics (training mode) is not exported")
    mean, var = (g.ref(r) for r in fixed)
    return g.op("BatchNormalization", inputs + [mean, var], epsilon=float(node.attrs["epsilon"]))


@converts(ChannelAffine)
def channel_affine(g, node, inputs):
    """x * scale + shift with the (C,) constants shaped (C, 1, ..., 1) to broadcast over axis 1, then Relu."""
    x, scale, shift = inputs
    axes = g.const(numpy.arange(1, g.rank(node.inputs[0]) - 1, dtype=numpy.int64), hint="affine_axes")
    y = g.op("Add", [g.op("Mul", [x, g.op("Unsqueeze", [scale, axes])]), g.op("Unsqueeze", [shift, axes])])
    return g.op("Relu", [y]) if node.attrs["relu"] else y


@converts(Normalize)
def normalize(g, node, inputs):
    """(x - mean) / sqrt(var + epsilon) over ``axes`` of ``view``, then * weight + bias (layer and group norm)."""
    x, w, b = inputs
    a = node.attrs
    view = g.op("Reshape", [x, g.shape(a["view"])])
    mean = g.reduce("ReduceMean", view, a["axes"], True)
    centred = g.op("Sub", [view, mean])
    variance = g.reduce("ReduceMean", g.op("Mul", [centred, centred]), a["axes"], True)
    std = g.op("Sqrt", [g.op("Add", [variance, g.scalar_like(node, a["epsilon"])])])
    xhat = g.op("Reshape", [g.op("Div", [centred, std]), g.op("Shape", [x])])
    scale, shift = (g.op("Reshape", [p, g.shape(a["param_shape"])]) for p in (w, b))
    return g.op("Add", [g.op("Mul", [xhat, scale]), shift])


@converts(LpNormalize)
def lp_normalize(g, node, inputs):
    """x / max(||x||_p, epsilon) along ``axis``."""
    x, a = inputs[0], node.attrs
    powered = g.op("Pow", [g.op("Abs", [x]), g.scalar_like(node, a["p"])])
    norm = g.op("Pow", [g.reduce("ReduceSum", powered, [a["axis"]], True), g.scalar_like(node, 1 / a["p"])])
    return g.op("Div", [x, g.op("Max", [norm, g.scalar_like(node, a["epsilon"])])])


@converts(TemporalShift)
def temporal_shift(g, node, inputs):
    """Frames (N*T, C, *spatial) viewed as (N, T, C, *spatial): channels [0, c1) from frame t-1 and [c1, c2) from
    frame t+1 (zero past the clip's ends), the rest unchanged; Slice + Pad + Concat. The views' shapes come from
    the traced shape (the inputs' sizes), not from a Shape of ``x``, so an int8 model keeps ``x`` int8."""
    x = inputs[0]
    frames = list(g.program.spec(node.inputs[0]).shape)
    rank, segments = len(frames), int(node.attrs["num_segments"])
    channels = frames[1]
    c1, c2 = shift_folds(channels, node.attrs["shift_ratio"])
    clips = g.op("Reshape", [x, g.shape([-1, segments] + frames[1:])])

    def shifted(lo, hi, later):
        """Channels [lo, hi) taken from frame t+1 (``later``) or t-1, zero-padded in time."""
        part = g.slice(clips, [1 if later else 0, lo], [None if later else -1, hi], [1, 2])
        widths = [0] * (rank + 1) * 2
        widths[(rank + 1) + 1 if later else 1] = 1
        return g.op("Pad", [part, g.ints(widths)])

    parts = ([shifted(0, c1, False)] if c1 else []) + ([shifted(c1, c2, True)] if c2 > c1 else [])
    if c2 < channels:
        parts.append(g.slice(clips, [c2], [None], [2]))
    out = parts[0] if len(parts) == 1 else g.op("Concat", parts, axis=2)
    return g.op("Reshape", [out, g.shape([-1] + frames[1:])])
