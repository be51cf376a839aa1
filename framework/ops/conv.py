"""Convolution over 1, 2 or 3 spatial dimensions (stride, padding, dilation, groups).

One N-d implementation: the input is unfolded into columns by
``framework.kernels.im2col`` (layout (C * prod(kernel), N * prod(out))), so the
forward pass and the weight gradient are single GEMMs (batched over groups when
groups > 1) and the input gradient is ``col2im(weight.T @ grad)``. On NumPy a
1x1 convolution over large images (:data:`POINTWISE_MIN_POSITIONS`) or of one image skips the
columns: one GEMM per image in the input's own (N, C, positions) layout, which
saves the transposes into and out of the column layout; a depthwise 2-D convolution (one channel per
group) skips them too (:mod:`framework.kernels.depthwise`: one multiply-add pass per kernel offset). Under
``framework.amp.autocast`` float32 inputs are cast down before im2col, the
GEMMs run in the autocast dtype and outputs and gradients are float32.
"""
import math

import numpy

from .. import autocast, threadpool
from ..kernels.depthwise import depthwise_backward, depthwise_forward
from ..kernels.im2col import im2col, col2im_matmul, group_matmul, scratch
from ..kernels.providers import matmul
from ..tensor import Function, OpError

__all__ = ["conv1d", "conv2d", "conv3d"]


# A 1x1, stride-1, unpadded, ungrouped convolution whose output has at least this many positions per image
# (or of one image: then the input is already the column matrix) runs on NumPy as one GEMM per image in the
# (N, C, positions) layout: no columns, no transposes. Below it the per-image GEMMs are too narrow and the
# single im2col GEMM is faster.
POINTWISE_MIN_POSITIONS = 512


class ConvNd(Function):
    """y[n, o] = sum_{c, k} w[o, c, k] * x_padded[n, g(o) * C_g + c, o * stride + k * dilation] + b[o]."""

    def forward(self, x, w, b=None):
        self.io_dtype, self.compute_dtype = x.dtype, autocast.compute_dtype(self.xp, x.dtype)
        x, w = autocast.cast(self.compute_dtype, x, w)  # before im2col, so the columns are in the compute dtype
        n, groups, out_channels = x.shape[0], self.groups, w.shape[0]
        width = n * math.prod(self.out)
        keep = len(self.needs_input_grad) > 1 and self.needs_input_grad[1]  # only the weight gradient needs cols
        self.pointwise = (self.xp is numpy and groups == 1 and math.prod(self.kernel) == 1
                          and max(self.stride) == 1 and not any(lo or hi for lo, hi in self.padding)
                          and (math.prod(self.out) >= POINTWISE_MIN_POSITIONS or n == 1))
        if self.pointwise:
            return self._forward_pointwise(x, w, b, keep)
        self.depthwise = (self.xp is numpy and len(self.kernel) == 2 and groups == x.shape[1] == out_channels
                          and x.dtype == self.io_dtype)
        if self.depthwise:
            return self._forward_depthwise(x, w, b)
        into = None if keep else scratch(self.xp, "conv_cols", (x.shape[1] * math.prod(self.kernel), width),
                                                 x.dtype)
        cols = im2col(x, self.kernel, self.stride, self.padding, self.dilation, self.out, into=into)
        y = scratch(self.xp, "conv_out", (groups, out_channels // groups, width), x.dtype)
        group_matmul(w.reshape(groups, out_channels // groups, -1), cols.reshape(groups, -1, width), out=y)
        # one pass to (N, C_out, *out) in the input dtype (chunked over the threads on NumPy); the bias is added
        # in that dtype
        by_image = y.reshape(out_channels, n, -1).swapaxes(0, 1)
        if self.xp is numpy:
            y = threadpool.copyto(numpy.empty(by_image.shape, dtype=self.io_dtype), by_image)
        else:
            y = by_image.astype(self.io_dtype, order="C")
        if b is not None:
            y = threadpool.elementwise(self.xp.add, y, b.reshape(-1, 1), out=y)
        self.saved = (cols if keep else None), w, x.shape
        return y.reshape(n, out_channels, *self.out)

    def _forward_depthwise(self, x, w, b):
        """One channel per group on NumPy (:mod:`framework.kernels.depthwise`): no columns."""
        y = depthwise_forward(x, w[:, 0], self.stride, self.padding, self.dilation, self.out)
        if b is not None:
            y += b.reshape(-1, 1, 1)
        self.saved = x, w, x.shape
        return y

    def _forward_pointwise(self, x, w, b, keep):
        """The 1x1 case: y[n] = w (O, C) @ x[n] (C, P) for each image n."""
        x_images = x.reshape(x.shape[0], x.shape[1], -1)                       # (N, C, P)
        y = matmul(w.reshape(w.shape[0], -1), x_images).astype(self.io_dtype, copy=False)
        if b is not None:
            y += b.reshape(-1, 1)
        self.saved = (x_images if keep else None), w, x.shape
        return y.reshape(x.shape[0], w.shape[0], *self.out)

    def _backward_pointwise(self, gy):
        """(gx, gw) of the 1x1 case, in the compute dtype."""
        cols, w, x_shape = self.saved  # cols: the input as (N, C, P)
        gy_images = gy.reshape(gy.shape[0], gy.shape[1], -1).astype(w.dtype, copy=False)  # (N, O, P)
        w_rows = w.reshape(w.shape[0], -1)
        gx = matmul(w_rows.T, gy_images).reshape(x_shape) if self.needs_input_grad[0] else None
        gw = (matmul(gy_images, cols.swapaxes(1, 2)).sum(axis=0).reshape(w.shape)
              if self.needs_input_grad[1] else None)
        return gx, gw

    def backward(self, gy):
        if self.pointwise:
            gx, gw = self._backward_pointwise(gy)
        elif self.depthwise:
            x, w, _ = self.saved
            needs_w = len(self.needs_input_grad) > 1 and self.needs_input_grad[1]
            gx, gw = depthwise_backward(x, w[:, 0], gy, self.stride, self.padding, self.dilation, self.out,
                                        self.needs_input_grad[0], needs_w)
            gw = None if gw is None else gw.reshape(w.shape)
        else:
            gx, gw = self._backward_columns(gy)
        gx, gw = autocast.cast(self.io_dtype, gx, gw)
        if len(self.needs_input_grad) == 2:
            return gx, gw
        return gx, gw, gy.reshape(gy.shape[0], gy.shape[1], -1).sum(axis=(0, 2), dtype=self.io_dtype)

    def _backward_columns(self, gy):
        """(gx, gw) through the column layout, in the compute dtype."""
        cols, w, x_shape = self.saved
        xp, groups, out_channels = self.xp, self.groups, w.shape[0]
        gy_rows = scratch(xp, "conv_grad_rows", (out_channels, gy.shape[0], math.prod(self.out)), w.dtype)
        threadpool.copyto(gy_rows, gy.reshape(gy.shape[0], out_channels, -1).swapaxes(0, 1))
        gy_rows = gy_rows.reshape(groups, out_channels // groups, -1)
        gx = gw = None
        if self.needs_input_grad[0]:
            w_t = w.reshape(groups, out_channels // groups, -1).swapaxes(1, 2)
            gx = col2im_matmul(w_t, gy_rows, x_shape, self.kernel, self.stride, self.padding, self.dilation,
                               self.out)
        if self.needs_input_grad[1]:
            cols_t = cols.reshape(groups, -1, cols.shape[1]).swapaxes(1, 2)
            gw = group_matmul(gy_rows, cols_t).reshape(w.shape)
        return gx, gw


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

