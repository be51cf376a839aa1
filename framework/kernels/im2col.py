"""im2col / col2im for N-d convolution, and the per-offset window helpers pooling uses.

Column layout (shared by both versions): for x of shape (N, C, *size), a kernel
of shape ``kernel`` and output spatial shape ``out``, the columns are

    cols[(c, k_1, ..., k_d), (n, o_1, ..., o_d)]
        = x_padded[n, c, o_1 * s_1 + k_1 * d_1, ..., o_d * s_d + k_d * d_d]

of shape (C * prod(kernel), N * prod(out)). Rows are grouped by input channel,
so a grouped convolution sees its groups as contiguous row blocks, and
``weight.reshape(out_channels, -1) @ cols`` is one contiguous 2-D GEMM.
:func:`col2im` is the adjoint: it sums every column entry back onto the input
position it was read from. ``padding`` is one (before, after) pair per spatial
dimension; padded positions read as ``pad_value``.

:func:`im2col` and :func:`col2im` have a NumPy version and a CuPy
``ElementwiseKernel`` version, picked by the array's module. :func:`windows`
and :func:`add_windows` are the same pair one kernel offset at a time (one
strided view per offset, and its adjoint), written once against ``xp``;
pooling uses them directly. On NumPy, temporaries that never leave a kernel
live in per-thread scratch buffers (:func:`scratch`) reused from call to call:
fresh multi-MB arrays cost page faults that are a large share of a
convolution on a CPU.
"""
import functools
import math
import threading

import numpy
from numpy.lib.stride_tricks import as_strided

from .. import backend, threadpool
from . import providers

__all__ = ["im2col", "col2im", "col2im_matmul", "group_matmul", "pad", "windows", "add_windows", "add_window", "scratch"]

_scratch = threading.local()


def scratch(xp, name, shape, dtype):
    """An uninitialised array of ``shape`` for a temporary that is dead before the caller returns.

    On NumPy it is a view of a buffer kept per thread and ``name`` (grown to the
    largest request), so it is overwritten by the next request with the same
    name; on CuPy it is ``cupy.empty`` (CuPy's memory pool already reuses).
    """
    if xp is not numpy:
        return xp.empty(shape, dtype=dtype)
    dtype = numpy.dtype(dtype)
    nbytes = math.prod(shape) * dtype.itemsize
    buffers = _scratch.__dict__
    buffer = buffers.get(name)
    if buffer is None or buffer.size < nbytes:
        buffer = buffers[name] = numpy.empty(nbytes, dtype=numpy.uint8)
    return buffer[:nbytes].view(dtype).reshape(shape)


def group_matmul(a, b, out=None):
    """``matmul(a, b)`` of two stacks of G matrices; with G == 1 it is one 2-D GEMM.

    Shapes: a (G, m, k), b (G, k, n) -> (G, m, n), written to ``out`` when given.
    CuPy's batched GEMM is many times slower than its 2-D GEMM in float16. On NumPy the GEMMs run on the
    GEMM provider when one is active (:func:`framework.kernels.providers.matmul`).
    """
    xp = backend.get_array_module(a)
    if xp is numpy:
        return providers.matmul(a, b, out=out)
    if a.shape[0] == 1:
        return xp.matmul(a[0], b[0], out=None if out is None else out[0])[None]
    return xp.matmul(a, b, out=out)


def im2col(x, kernel, stride, padding, dilation, out, pad_value=0, into=None):
    """Columns of ``x`` (N, C, *size) -> (C * prod(kernel), N * prod(out)); see the module docstring.

    ``into``: an optional C-contiguous array of that shape to write the columns to.
    """
    xp = backend.get_array_module(x)
    n, c = x.shape[:2]
    shape = (c * math.prod(kernel), n * math.prod(out))
    cols = xp.empty(shape, dtype=x.dtype) if into is None else into
    if xp is not numpy:
        _im2col_cupy(xp.ascontiguousarray(x), kernel, stride, padding, dilation, out, pad_value, cols)
        return cols
    x = pad(x, padding, pad_value)
    batch_stride, channel_stride, *spatial = x.strides
    strided = as_strided(
        x, shape=(c, *kernel, n, *out),
        strides=(channel_stride, *(s * d for s, d in zip(spatial, dilation)),
                 batch_stride, *(s * st for s, st in zip(spatial, stride))),
        writeable=False)
    target = cols.reshape(strided.shape)
    threadpool.run_chunks(lambda lo, hi: numpy.copyto(target[lo:hi], strided[lo:hi]), c, target[0].size)
    return cols


def col2im(cols, x_shape, kernel, stride, padding, dilation, out):
    """Adjoint of :func:`im2col`: (C * prod(kernel), N * prod(out)) -> (N, C, *size) = ``x_shape``."""
    xp = backend.get_array_module(cols)
    if xp is not numpy:
        return _col2im_cupy(xp, cols, x_shape, kernel, stride, padding, dilation, out)
    n, c = x_shape[:2]
    blocks = cols.reshape(c, -1, n, *out)
    return _fold_channels_first(lambda index: blocks[:, index], cols.dtype, x_shape, kernel, stride, padding,
                                dilation, out)


def col2im_matmul(w_t, gy, x_shape, kernel, stride, padding, dilation, out):
    """``col2im(matmul(w_t, gy))``, the input gradient of a convolution.

    Shapes: w_t (G, C_g * prod(kernel), O_g), gy (G, O_g, N * prod(out)) -> (N, C, *size).
    On NumPy the product is formed one kernel offset at a time (on the GEMM provider when one is active), so
    each (C, N * prod(out)) block is added back while it is still in cache.
    """
    xp = backend.get_array_module(gy)
    if xp is not numpy:
        cols = group_matmul(w_t, gy).reshape(-1, gy.shape[-1])
        return _col2im_cupy(xp, cols, x_shape, kernel, stride, padding, dilation, out)
    groups, rows, _ = w_t.shape
    per_offset = w_t.reshape(groups, rows // math.prod(kernel), math.prod(kernel), -1)
    block = scratch(numpy, "col2im_block", (groups, per_offset.shape[1], gy.shape[-1]), gy.dtype)
    n, c = x_shape[:2]

    def product(index):
        return providers.matmul(per_offset[:, :, index], gy, out=block).reshape(c, n, *out)

    return _fold_channels_first(product, gy.dtype, x_shape, kernel, stride, padding, dilation, out)


def _fold_channels_first(block, dtype, x_shape, kernel, stride, padding, dilation, out):
    """Sum ``block(i)`` (C, N, *out), the columns of the i-th kernel offset, back onto a new (N, C, *size).

    Each offset's sums run over channel chunks on the threads (:mod:`framework.threadpool`); every
    element's terms are added in the same order, so the result is the same bit for bit.
    """
    n, c, *size = x_shape
    dx = threadpool.fill(scratch(numpy, "col2im_sum", (c, n, *size), dtype), 0)
    per_channel = dx[0].size
    for index, offset in enumerate(numpy.ndindex(*kernel)):
        values = block(index)
        threadpool.run_chunks(lambda lo, hi: add_window(dx[lo:hi], values[lo:hi], offset, stride, padding, dilation,
                                                      out), c, per_channel)
    return threadpool.copyto(numpy.empty(x_shape, dtype=dtype), dx.swapaxes(0, 1))


# ---- Window helpers, written against xp (NumPy and CuPy) ---------------------

def pad(x, padding, value):
    """``x`` (N, C, *size) with ``padding`` ((before, after) per spatial dim) of ``value``.

    Returns ``x`` itself when there is no padding, else a :func:`scratch` array.
    """
    if not any(lo or hi for lo, hi in padding):
        return x
    xp = backend.get_array_module(x)
    padded = scratch(xp, "pad", x.shape[:2] + tuple(n + lo + hi for n, (lo, hi) in zip(x.shape[2:], padding)),
                     x.dtype)
    interior = (slice(None), slice(None)) + tuple(slice(lo, lo + n) for n, (lo, _) in zip(x.shape[2:], padding))
    if xp is not numpy:
        padded.fill(value)
        padded[interior] = x
        return padded
    threadpool.fill(padded, value)
    threadpool.copyto(padded[interior], x)
    return padded


def windows(padded, kernel, stride, dilation, out):
    """One strided view (N, C, *out) of ``padded`` per kernel offset (in ``numpy.ndindex`` order):
    view_i[n, c, o] = padded[n, c, o * stride + offset_i * dilation]."""
    for offset in numpy.ndindex(*kernel):
        yield padded[(slice(None), slice(None)) + tuple(
            slice(k * d, k * d + s * (o - 1) + 1, s) for k, d, s, o in zip(offset, dilation, stride, out))]


def add_windows(into, block, kernel, stride, padding, dilation, out):
    """The adjoint of :func:`windows` on the unpadded input, accumulated in place.

    For every kernel offset i, ``into[:, :, p] += block(i)[:, :, o]`` wherever
    output o reads unpadded input position p. Shapes: into (A, B, *size),
    block(i) (A, B, *out); ``padding`` gives the (before, after) pairs.
    """
    for index, offset in enumerate(numpy.ndindex(*kernel)):
        add_window(into, block(index), offset, stride, padding, dilation, out)


def add_window(into, values, offset, stride, padding, dilation, out):
    """One kernel offset of :func:`add_windows`: ``into[:, :, p] += values[:, :, o]`` wherever output o reads
    unpadded input position p at ``offset`` (a tuple of d ints). Shapes: into (A, B, *size), values (A, B, *out)."""
    spans = [_overlap(*args) for args in zip(offset, dilation, stride, (lo for lo, _ in padding), into.shape[2:], out)]
    if None in spans:
        return
    inputs, outputs = zip(*spans)
    everything = (slice(None), slice(None))
    into[everything + inputs] += values[everything + outputs]


def _overlap(offset, dilation, stride, before, size, out):
    """The input positions (a slice) that one kernel offset reads inside the unpadded input,
    and the outputs (a slice) that read them; None when there are none."""
    start = offset * dilation - before  # input position read by output 0
    first = max(0, -(start // stride))
    stop = min(out, -((start - size) // stride))
    if stop <= first:
        return None
    return slice(start + first * stride, start + (stop - 1) * stride + 1, stride), slice(first, stop)


# ---- CuPy -------------------------------------------------------------------
# Both kernels work on 3 spatial dimensions; 1-d and 2-d inputs are given
# leading spatial dimensions of size 1 (kernel 1, stride 1, no padding).

_GEOMETRY = ("int32 N, int32 C, int32 D, int32 H, int32 W, int32 KD, int32 KH, int32 KW, "
             "int32 OD, int32 OH, int32 OW, int32 SD, int32 SH, int32 SW, "
             "int32 PD, int32 PH, int32 PW, int32 DD, int32 DH, int32 DW")

_IM2COL = """
    // i indexes cols[(c, a, b, e), (n, od, oh, ow)]
    index_t r = (index_t)i;
    const int ow = r % OW; r /= OW;
    const int oh = r % OH; r /= OH;
    const int od = r % OD; r /= OD;
    const int n = r % N; r /= N;
    const int e = r % KW; r /= KW;
    const int b = r % KH; r /= KH;
    const int a = r % KD;
    const int c = r / KD;
    const int z = od * SD - PD + a * DD;
    const int y = oh * SH - PH + b * DH;
    const int x_ = ow * SW - PW + e * DW;
    const bool inside = z >= 0 && z < D && y >= 0 && y < H && x_ >= 0 && x_ < W;
    col = inside ? x[(((long long)(n * C + c) * D + z) * H + y) * W + x_] : pad_value;
"""

_COL2IM = """
    // i indexes dx[n, c, z, y, x]; sum every column entry read from that position
    index_t r = (index_t)i;
    const int x_ = r % W; r /= W;
    const int y = r % H; r /= H;
    const int z = r % D; r /= D;
    const int c = r % C;
    const int n = r / C;
    const long long width = (long long)N * OD * OH * OW;
    T sum = 0;
    for (int a = 0; a < KD; ++a) {
        const int tz = z + PD - a * DD;
        if (tz < 0 || tz % SD != 0 || tz / SD >= OD) continue;
        for (int b = 0; b < KH; ++b) {
            const int ty = y + PH - b * DH;
            if (ty < 0 || ty % SH != 0 || ty / SH >= OH) continue;
            for (int e = 0; e < KW; ++e) {
                const int tx = x_ + PW - e * DW;
                if (tx < 0 || tx % SW != 0 || tx / SW >= OW) continue;
                const long long row = ((long long)(c * KD + a) * KH + b) * KW + e;
                const long long q = (((long long)n * OD + tz / SD) * OH + ty / SH) * OW + tx / SW;
                sum += col[row * width + q];
            }
        }
    }
    dx = sum;
"""


@functools.lru_cache(maxsize=None)
def _cupy_kernels(wide):
    """The two ElementwiseKernels (compiled by CuPy on first use, per dtype). ``wide``: index with 64-bit
    integers (arrays of 2**31 elements or more); otherwise 32-bit, whose divisions are several times faster."""
    cupy = backend.array_module("gpu")
    preamble = f"typedef {'long long' if wide else 'unsigned int'} index_t;\n"
    suffix = "_wide" if wide else ""
    im2col_kernel = cupy.ElementwiseKernel(f"raw T x, {_GEOMETRY}, T pad_value", "T col",
                                           _IM2COL, "oar_im2col" + suffix, preamble=preamble)
    col2im_kernel = cupy.ElementwiseKernel(f"raw T col, {_GEOMETRY}", "T dx", _COL2IM, "oar_col2im" + suffix,
                                           preamble=preamble)
    return im2col_kernel, col2im_kernel


def _wide(*arrays):
    """Whether any of ``arrays`` has 2**31 elements or more (the kernels then index with 64-bit integers)."""
    return max(a.size for a in arrays) >= 2 ** 31


def _as_3d(size, kernel, stride, padding, dilation, out):
    """Geometry arguments of the CuPy kernels, with 1-d and 2-d problems lifted to 3-d."""
    lift = 3 - len(size)
    ones, zeros = (1,) * lift, (0,) * lift
    return (*ones, *size, *ones, *kernel, *ones, *out, *ones, *stride,
            *zeros, *(lo for lo, _ in padding), *ones, *dilation)


def _im2col_cupy(x, kernel, stride, padding, dilation, out, pad_value, cols):
    """One thread per column entry; padded positions are never materialised."""
    n, c, *size = x.shape
    im2col_kernel, _ = _cupy_kernels(_wide(x, cols))
    im2col_kernel(x, n, c, *_as_3d(size, kernel, stride, padding, dilation, out), x.dtype.type(pad_value), cols)


def _col2im_cupy(cupy, cols, x_shape, kernel, stride, padding, dilation, out):
    """One thread per input element, gathering its column entries (no atomics)."""
    n, c, *size = x_shape
    dx = cupy.empty(tuple(x_shape), dtype=cols.dtype)
    cols = cupy.ascontiguousarray(cols)
    _, col2im_kernel = _cupy_kernels(_wide(cols, dx))
    col2im_kernel(cols, n, c, *_as_3d(size, kernel, stride, padding, dilation, out), dx)
    return dx
