"""Convolution: the kernel family's one entry (:func:`conv_forward` / :func:`conv_backward`), which picks the
algorithm from the shapes and the array module.

- **columns** (every case; the only one on CuPy): the input is unfolded into columns by :func:`im2col`
  (layout (C * prod(kernel), N * prod(out))), so the forward pass and the weight gradient are single GEMMs
  (batched over groups when groups > 1) and the input gradient is ``col2im(weight.T @ grad)``; on NumPy a
  stride-1 convolution takes it as a convolution of gy with the flipped kernel instead (one GEMM over gy's
  columns, no accumulating passes; :func:`_input_grad_as_correlation`).
- **pointwise** (NumPy): a 1x1, stride-1, unpadded, ungrouped convolution over large images
  (:data:`POINTWISE_MIN_POSITIONS`) or of one image skips the columns: one GEMM per image in the input's own
  (N, C, positions) layout, which saves the transposes into and out of the column layout.
- **depthwise** (NumPy, 2-D, one channel per group): :mod:`framework.kernels.depthwise`, one multiply-add
  pass per kernel offset (compiled when the CPU kernels are on).

Columns are a large multiple of their input (``prod(kernel)`` times, more with a stride of 1), so where the
weight gradient does not need them (inference, frozen weights) a batch whose columns would pass
:data:`COLUMNS_MAX_BYTES` is convolved a part of its images at a time: memory stays bounded whatever the batch.
Where the weight gradient needs them they are kept whole; the batch the caller chose bounds them.

Each algorithm's kernels then pick their own implementation (the GEMM provider, the compiled CPU kernels),
as the table in docs/ARCHITECTURE.md says. Inputs arrive in the compute dtype (the op casts under autocast);
outputs are in ``io_dtype``, gradients in the compute dtype.

Geometry: ``kernel``, ``stride``, ``dilation``, ``out`` are d ints, ``padding`` d (before, after) pairs.
"""
import math
from typing import NamedTuple

import numpy

from .. import backend, threadpool
from .depthwise import depthwise_backward, depthwise_forward
from .im2col import col2im_matmul, group_matmul, im2col, scratch
from .providers import matmul

__all__ = ["ConvGeometry", "conv_forward", "conv_backward", "COLUMNS_MAX_BYTES", "POINTWISE_MIN_POSITIONS"]

#: The most bytes of columns an inference convolution unfolds at once (the batch is split above it). At
#: 256 MiB the GEMM of a part is still tens of thousands of columns wide for any layer of the zoo.
COLUMNS_MAX_BYTES = 1 << 28

# A 1x1, stride-1, unpadded, ungrouped convolution whose output has at least this many positions per image
# (or of one image: then the input is already the column matrix) runs on NumPy as one GEMM per image in the
# (N, C, positions) layout: no columns, no transposes. Below it the per-image GEMMs are too narrow and the
# single im2col GEMM is faster.
POINTWISE_MIN_POSITIONS = 512


class ConvGeometry(NamedTuple):
    """A convolution's window: d ints each but ``padding`` (d (before, after) pairs); ``groups`` an int."""
    kernel: tuple
    stride: tuple
    padding: tuple
    dilation: tuple
    out: tuple
    groups: int


class ConvSaved(NamedTuple):
    """What :func:`conv_backward` needs: the algorithm's name and its arrays."""
    algorithm: str
    arrays: tuple


def _algorithm(x, w, geometry, io_dtype):
    """'pointwise', 'depthwise' or 'columns' for x (N, C, *size), w (O, C / groups, *kernel)."""
    if backend.get_array_module(x) is not numpy:
        return "columns"
    if (geometry.groups == 1 and math.prod(geometry.kernel) == 1 and max(geometry.stride) == 1
            and not any(lo or hi for lo, hi in geometry.padding)
            and (math.prod(geometry.out) >= POINTWISE_MIN_POSITIONS or x.shape[0] == 1)):
        return "pointwise"
    if len(geometry.kernel) == 2 and geometry.groups == x.shape[1] == w.shape[0] and x.dtype == io_dtype:
        return "depthwise"
    return "columns"


def conv_forward(x, w, b, geometry, io_dtype, keep_for_weight_grad):
    """y[n, o] = sum_{c, k} w[o, c, k] * x_padded[n, g(o) * C_g + c, o * stride + k * dilation] + b[o].

    Shapes: x (N, C, *size), w (O, C / groups, *kernel), b (O,) or None -> y (N, O, *out) in ``io_dtype``,
    and the :class:`ConvSaved` for :func:`conv_backward`. ``keep_for_weight_grad``: keep what the weight
    gradient needs (the columns); without it the columns go to a scratch buffer.
    """
    algorithm = _algorithm(x, w, geometry, io_dtype)
    images = _images_per_part(x, geometry) if algorithm == "columns" and not keep_for_weight_grad else x.shape[0]
    if images >= x.shape[0]:
        y, arrays = _FORWARD[algorithm](x, w, b, geometry, io_dtype, keep_for_weight_grad)
        return y, ConvSaved(algorithm, arrays)
    xp = backend.get_array_module(x)
    y = xp.empty((x.shape[0], w.shape[0], *geometry.out), dtype=io_dtype)
    for start in range(0, x.shape[0], images):
        _columns_forward(x[start:start + images], w, b, geometry, io_dtype, False, out=y[start:start + images])
    return y, ConvSaved(algorithm, (None, w, x.shape))


def _images_per_part(x, geometry):
    """How many images of x (N, C, *size) fit their columns in :data:`COLUMNS_MAX_BYTES` (at least one)."""
    per_image = x.shape[1] * math.prod(geometry.kernel) * math.prod(geometry.out) * x.dtype.itemsize
    return max(1, COLUMNS_MAX_BYTES // per_image)


def conv_backward(saved, gy, geometry, needs_x, needs_w):
    """(gx (N, C, *size) or None, gw (O, C / groups, *kernel) or None) in the compute dtype, from gy
    (N, O, *out) and the :class:`ConvSaved` of :func:`conv_forward`."""
    return _BACKWARD[saved.algorithm](saved.arrays, gy, geometry, needs_x, needs_w)


def _columns_forward(x, w, b, geometry, io_dtype, keep, out=None):
    """``out``: a C-contiguous (N, O, *out) array in ``io_dtype`` to write y to (default: a new one)."""
    xp, n, groups, out_channels = backend.get_array_module(x), x.shape[0], geometry.groups, w.shape[0]
    width = n * math.prod(geometry.out)
    into = None if keep else scratch(xp, "conv_cols", (x.shape[1] * math.prod(geometry.kernel), width), x.dtype)
    cols = im2col(x, geometry.kernel, geometry.stride, geometry.padding, geometry.dilation, geometry.out,
                  into=into)
    y = scratch(xp, "conv_out", (groups, out_channels // groups, width), x.dtype)
    group_matmul(w.reshape(groups, out_channels // groups, -1), cols.reshape(groups, -1, width), out=y)
    # one pass to (N, C_out, *out) in the input dtype (chunked over the threads on NumPy); the bias is added
    # in that dtype
    by_image = y.reshape(out_channels, n, -1).swapaxes(0, 1)
    y = (xp.empty(by_image.shape, dtype=io_dtype) if out is None else out).reshape(by_image.shape)
    if xp is numpy:
        threadpool.copyto(y, by_image)
    else:
        y[...] = by_image
    if b is not None:
        y = threadpool.elementwise(xp.add, y, b.reshape(-1, 1), out=y)
    return y.reshape(n, out_channels, *geometry.out), ((cols if keep else None), w, x.shape)


def _columns_backward(arrays, gy, geometry, needs_x, needs_w):
    cols, w, x_shape = arrays
    xp, groups, out_channels = backend.get_array_module(w), geometry.groups, w.shape[0]
    gy_rows = scratch(xp, "conv_grad_rows", (out_channels, gy.shape[0], math.prod(geometry.out)), w.dtype)
    threadpool.copyto(gy_rows, gy.reshape(gy.shape[0], out_channels, -1).swapaxes(0, 1))
    gy_rows = gy_rows.reshape(groups, out_channels // groups, -1)
    gx = gw = None
    if needs_x and xp is numpy and _correlation_suits(geometry, cols is not None, gy_rows.nbytes):
        gx = _input_grad_as_correlation(w, gy, gy_rows, x_shape, geometry)
    elif needs_x:
        w_t = w.reshape(groups, out_channels // groups, -1).swapaxes(1, 2)
        gx = col2im_matmul(w_t, gy_rows, x_shape, geometry.kernel, geometry.stride, geometry.padding,
                           geometry.dilation, geometry.out)
    if needs_w:
        cols_t = cols.reshape(groups, -1, cols.shape[1]).swapaxes(1, 2)
        gw = group_matmul(gy_rows, cols_t).reshape(w.shape)
    return gx, gw


def _correlation_suits(geometry, columns_kept, gy_bytes):
    """Whether to take the input gradient by :func:`_input_grad_as_correlation`: the input gradient is itself a
    convolution of gy (stride 1, no side padded by more than the dilated kernel's reach, (kernel - 1) *
    dilation), and gy's columns (``gy_bytes`` times prod(kernel); none for a 1x1 kernel) either stand in for
    columns of the same order that the forward kept (``columns_kept``) or fit :data:`COLUMNS_MAX_BYTES`, so a
    backward through a frozen weight stays as bounded as its forward."""
    taps = math.prod(geometry.kernel)
    return max(geometry.stride) == 1 and all(
        max(lo, hi) <= (k - 1) * d for (lo, hi), k, d in zip(geometry.padding, geometry.kernel, geometry.dilation)
    ) and (columns_kept or taps == 1 or gy_bytes * taps <= COLUMNS_MAX_BYTES)


def _input_grad_as_correlation(w, gy, gy_rows, x_shape, geometry):
    """The input gradient of a stride-1 convolution, gx = gy correlated with the flipped kernel:
    gx[n, c, i] = sum_{o, k} w[o, c, K - 1 - k] * gy_padded[n, o, i + k * dilation], gy padded by
    (k - 1) * dilation - padding on each side. One GEMM over the columns of gy (of a 1x1 kernel: gy's rows
    themselves), where :func:`col2im_matmul` makes one narrower GEMM and one accumulating pass per offset.

    Shapes: w (O, C / G, *kernel), gy (N, O, *out), gy_rows (G, O / G, N * prod(out)) -> gx x_shape (N, C, *size).
    """
    n, c, *size = x_shape
    groups, kernel, out_channels = geometry.groups, geometry.kernel, w.shape[0]
    width = n * math.prod(size)
    if math.prod(kernel) == 1:      # w's transpose as a view (BLAS reads it transposed), gy's rows as the columns
        w_rows, cols = w.reshape(groups, out_channels // groups, c // groups).swapaxes(1, 2), gy_rows
    else:
        flipped = w[(slice(None), slice(None)) + (slice(None, None, -1),) * len(kernel)]
        flipped = flipped.reshape(groups, out_channels // groups, c // groups, -1).swapaxes(1, 2)  # (G, C_g, O_g, K)
        w_rows = numpy.ascontiguousarray(flipped).reshape(groups, c // groups, -1)
        padding = tuple(((k - 1) * d - lo, (k - 1) * d - hi)
                        for (lo, hi), k, d in zip(geometry.padding, kernel, geometry.dilation))
        cols = im2col(gy.astype(w.dtype, copy=False), kernel, (1,) * len(kernel), padding, geometry.dilation,
                      tuple(size), into=scratch(numpy, "conv_grad_cols", (out_channels * math.prod(kernel), width),
                                                w.dtype)).reshape(groups, -1, width)
    gx_rows = group_matmul(w_rows, cols, out=scratch(numpy, "conv_grad_x", (groups, c // groups, width), w.dtype))
    return threadpool.copyto(numpy.empty(x_shape, dtype=w.dtype), gx_rows.reshape(c, n, *size).swapaxes(0, 1))


def _pointwise_forward(x, w, b, geometry, io_dtype, keep):
    """The 1x1 case: y[n] = w (O, C) @ x[n] (C, P) for each image n."""
    x_images = x.reshape(x.shape[0], x.shape[1], -1)                       # (N, C, P)
    y = matmul(w.reshape(w.shape[0], -1), x_images).astype(io_dtype, copy=False)
    if b is not None:
        y += b.reshape(-1, 1)
    return y.reshape(x.shape[0], w.shape[0], *geometry.out), ((x_images if keep else None), w, x.shape)


def _pointwise_backward(arrays, gy, geometry, needs_x, needs_w):
    x_images, w, x_shape = arrays                                           # x_images: (N, C, P)
    gy_images = gy.reshape(gy.shape[0], gy.shape[1], -1).astype(w.dtype, copy=False)  # (N, O, P)
    gx = matmul(w.reshape(w.shape[0], -1).T, gy_images).reshape(x_shape) if needs_x else None
    gw = matmul(gy_images, x_images.swapaxes(1, 2)).sum(axis=0).reshape(w.shape) if needs_w else None
    return gx, gw


def _depthwise_forward(x, w, b, geometry, io_dtype, keep):
    """One channel per group: no columns."""
    y = depthwise_forward(x, w[:, 0], geometry.stride, geometry.padding, geometry.dilation, geometry.out)
    if b is not None:
        y += b.reshape(-1, 1, 1)
    return y, (x, w)


def _depthwise_backward(arrays, gy, geometry, needs_x, needs_w):
    x, w = arrays
    gx, gw = depthwise_backward(x, w[:, 0], gy, geometry.stride, geometry.padding, geometry.dilation,
                                geometry.out, needs_x, needs_w)
    return gx, (None if gw is None else gw.reshape(w.shape))


_FORWARD = {"columns": _columns_forward, "pointwise": _pointwise_forward, "depthwise": _depthwise_forward}
_BACKWARD = {"columns": _columns_backward, "pointwise": _pointwise_backward, "depthwise": _depthwise_backward}
