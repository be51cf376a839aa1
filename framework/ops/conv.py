"""Convolution over 1, 2 or 3 spatial dimensions (stride, padding, dilation, groups): the checks, the
geometry and the Function; the kernel family's entry (:mod:`framework.kernels.conv`) picks the algorithm
(columns and GEMM, pointwise, depthwise). Under ``framework.amp.autocast`` float32 inputs are cast down
before the kernels, the GEMMs run in the autocast dtype and outputs and gradients are float32.
"""
import numpy

from .. import autocast
from ..kernels.conv import ConvGeometry, conv_backward, conv_forward
from ..tensor import Function, OpError

__all__ = ["conv1d", "conv2d", "conv3d"]


class ConvNd(Function):
    """y[n, o] = sum_{c, k} w[o, c, k] * x_padded[n, g(o) * C_g + c, o * stride + k * dilation] + b[o]."""

    def forward(self, x, w, b=None):
        self.io_dtype, compute_dtype = x.dtype, autocast.compute_dtype(self.xp, x.dtype)
        x, w = autocast.cast(compute_dtype, x, w)  # before im2col, so the columns are in the compute dtype
        self.geometry = ConvGeometry(self.kernel, self.stride, self.padding, self.dilation, self.out, self.groups)
        keep = len(self.needs_input_grad) > 1 and self.needs_input_grad[1]  # only the weight gradient needs cols
        y, self.saved = conv_forward(x, w, b, self.geometry, self.io_dtype, keep)
        return y

    def backward(self, gy):
        needs_w = len(self.needs_input_grad) > 1 and self.needs_input_grad[1]
        gx, gw = conv_backward(self.saved, gy, self.geometry, self.needs_input_grad[0], needs_w)
        gx, gw = autocast.cast(self.io_dtype, gx, gw)
        if len(self.needs_input_grad) == 2:
            return gx, gw
        return gx, gw, gy.reshape(gy.shape[0], gy.shape[1], -1).sum(axis=(0, 2), dtype=self.io_dtype)


def per_dim(value, ndim, what, op):
    """``value`` (int or sequence of ``ndim`` ints) as a tuple of ``ndim`` ints."""
    values = (value,) * ndim if isinstance(value, (int, numpy.integer)) else tuple(value)
    if len(values) != ndim or not all(isinstance(v, (int, numpy.integer)) for v in values):
        raise OpError(f"{op}: {what} must be an int or {ndim} ints, got {value!r}")
    return tuple(int(v) for v in values)


def conv_geometry(op, size, kernel, stride, padding, dilation):
    """Per-dimension (before, after) padding and output size of a convolution or pooling window.

    Args:
        size, kernel: spatial input size and kernel size (tuples of d ints).
        stride, dilation: ints or d ints, at least 1.
        padding: an int, d ints (the same before and after), "valid" (none) or
            "same" (output size ceil(size / stride), as Paddle; the odd extra
            element goes after).

    Returns ``(stride, padding, dilation, out)``; padding is d (before, after) pairs.
    """
    ndim = len(size)
    stride = per_dim(stride, ndim, "stride", op)
    dilation = per_dim(dilation, ndim, "dilation", op)
    if min(stride + dilation) < 1:
        raise OpError(f"{op}: stride {stride} and dilation {dilation} must be at least 1")
    span = tuple(d * (k - 1) + 1 for k, d in zip(kernel, dilation))
    if isinstance(padding, str):
        if padding.lower() == "valid":
            pads = ((0, 0),) * ndim
        elif padding.lower() == "same":
            totals = (max((-(-n // s) - 1) * s + k - n, 0) for n, s, k in zip(size, stride, span))
            pads = tuple((t // 2, t - t // 2) for t in totals)
        else:
            raise OpError(f"{op}: padding must be an int, {ndim} ints, 'same' or 'valid', got {padding!r}")
    else:
        pads = tuple((p, p) for p in per_dim(padding, ndim, "padding", op))
        if min(lo for lo, _ in pads) < 0:
            raise OpError(f"{op}: padding {padding!r} must not be negative")
    out = tuple((n + lo + hi - k) // s + 1 for n, (lo, hi), k, s in zip(size, pads, span, stride))
    if min(out) < 1:
        raise OpError(f"{op}: input of spatial size {tuple(size)} is smaller than the (dilated) kernel "
                      f"{span} with padding {pads}")
    return stride, pads, dilation, out


def _conv(ndim, x, weight, bias, stride, padding, dilation, groups):
    op = f"conv{ndim}d"
    if x.ndim != ndim + 2 or weight.ndim != ndim + 2:
        raise OpError(f"{op}: expected x (N, C, *spatial) and weight (out, in/groups, *kernel) with "
                      f"{ndim + 2} dims each, got x {x.shape} and weight {weight.shape}")
    if x.dtype.kind != "f" or x.dtype != weight.dtype:
        raise OpError(f"{op}: x {x.shape} {x.dtype} and weight {weight.shape} {weight.dtype} "
                      "must share one float dtype")
    channels, out_channels = x.shape[1], weight.shape[0]
    if groups < 1 or channels % groups or out_channels % groups or weight.shape[1] * groups != channels:
        raise OpError(f"{op}: x {x.shape} has {channels} channels and weight {weight.shape} expects "
                      f"{weight.shape[1]} per group with groups={groups}; both channel counts must divide "
                      "by groups")
    if bias is not None and (bias.shape != (out_channels,) or bias.dtype != weight.dtype):
        raise OpError(f"{op}: bias {bias.shape} {bias.dtype} must be ({out_channels},) {weight.dtype}")
    kernel = weight.shape[2:]
    stride, pads, dilation, out = conv_geometry(op, x.shape[2:], kernel, stride, padding, dilation)
    inputs = (x, weight) if bias is None else (x, weight, bias)
    return ConvNd.apply(*inputs, kernel=kernel, stride=stride, padding=pads, dilation=dilation,
                        out=out, groups=int(groups))


def conv1d(x, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """1-d convolution (cross-correlation) over the last axis.

    Shapes: x (N, C_in, L), weight (C_out, C_in / groups, K), bias (C_out,) or None
    -> (N, C_out, L_out) with L_out = (L + pad_before + pad_after - dilation * (K - 1) - 1) // stride + 1.
    ``padding`` is an int, a 1-tuple, "same" or "valid".
    """
    return _conv(1, x, weight, bias, stride, padding, dilation, groups)


def conv2d(x, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """2-d convolution (cross-correlation), as Paddle's ``F.conv2d`` in NCHW layout.

    Shapes: x (N, C_in, H, W), weight (C_out, C_in / groups, KH, KW), bias (C_out,)
    or None -> (N, C_out, H_out, W_out). ``stride``, ``dilation`` and ``padding``
    are ints or pairs; ``padding`` may also be "same" or "valid".

    Example: ``conv2d(x, w, padding=1)`` keeps H and W for a 3x3 kernel.
    """
    return _conv(2, x, weight, bias, stride, padding, dilation, groups)


def conv3d(x, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """3-d convolution (cross-correlation) in NCDHW layout.

    Shapes: x (N, C_in, D, H, W), weight (C_out, C_in / groups, KD, KH, KW),
    bias (C_out,) or None -> (N, C_out, D_out, H_out, W_out).
    """
    return _conv(3, x, weight, bias, stride, padding, dilation, groups)

