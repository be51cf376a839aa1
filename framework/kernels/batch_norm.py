"""Batch norm with batch statistics (training): the kernel family's one entry, :func:`batch_norm_train` and
:func:`batch_norm_train_backward`, and the per-channel sums the other channel ops share.

- **compiled** (NumPy arrays of float32/float64 with the compiled CPU kernels on,
  :func:`framework.kernels.cpu.enabled`): :mod:`framework.kernels.cpu.batch_norm`, statistics and output in
  three passes over the activations (two reads, one write), both gradients in two (one read of gy and x, one
  write), x itself kept for backward.
- **passes** (otherwise, and on CuPy): ufunc passes chunked over the threads (:mod:`framework.threadpool`),
  the centred x kept for backward, temporaries in reused scratch buffers (fresh multi-MB arrays cost page
  faults that rival the arithmetic).

Both give y = (x - mean) * weight / sqrt(var + epsilon) + bias with the biased batch variance, and the same
gradients to rounding. Shapes: x, y, gy, gx (N, C, L); weight, bias, mean, var (C,).
"""
from typing import NamedTuple

import numpy

from .. import backend, threadpool
from . import cpu
from .affine import scale_shift
from .im2col import scratch

__all__ = ["BatchNormSaved", "batch_norm_train", "batch_norm_train_backward", "channel_total", "channel_sum",
           "input_grad"]


class BatchNormSaved(NamedTuple):
    """What :func:`batch_norm_train_backward` needs: ``source`` (N, C, L) is x when ``mean`` (C,) is given (the
    compiled kernels), else x - mean; ``inv_std`` and ``weight`` (C,)."""
    source: object
    mean: object
    inv_std: object
    weight: object


def _compiled(xp, a):
    return xp is numpy and cpu.enabled() and a.dtype in (numpy.float32, numpy.float64)


def _by_channel(kernel, a):
    """``kernel(first, stop)`` over the channels of a (N, C, L), chunked over the threads."""
    threadpool.run_chunks(kernel, a.shape[1], a.shape[0] * a.shape[2])


def batch_norm_train(x, weight, bias, epsilon):
    """Normalise x (N, C, L) by its own per-channel statistics: returns (y (N, C, L), mean (C,), var (C,) biased,
    :class:`BatchNormSaved`)."""
    xp = backend.get_array_module(x)
    if _compiled(xp, x):
        from .cpu import batch_norm as compiled
        x = numpy.ascontiguousarray(x)
        mean, var = numpy.empty(x.shape[1], dtype=x.dtype), numpy.empty(x.shape[1], dtype=x.dtype)
        _by_channel(lambda first, stop: compiled.batch_statistics(x, first, stop, mean, var), x)
        inv_std = 1 / numpy.sqrt(var + epsilon)
        scale = numpy.ascontiguousarray(weight * inv_std, dtype=x.dtype)
        shift = numpy.ascontiguousarray(bias, dtype=x.dtype)
        y = numpy.empty_like(x)
        _by_channel(lambda first, stop: compiled.normalize_channels(x, mean, scale, shift, first, stop, y), x)
        return y, mean, var, BatchNormSaved(x, mean, inv_std, weight)
    count = x.shape[0] * x.shape[2]
    mean = channel_total(xp, x) / count
    centred = threadpool.elementwise(xp.subtract, x, mean[:, None])
    var = channel_sum(xp, "bn_square", centred, centred) / count
    inv_std = 1 / xp.sqrt(var + epsilon)
    return scale_shift(xp, centred, weight * inv_std, bias), mean, var, BatchNormSaved(centred, None, inv_std, weight)


def batch_norm_train_backward(saved, gy, need_x, need_w, need_b):
    """(gx (N, C, L) or None, gweight (C,) or None, gbias (C,) or None) of :func:`batch_norm_train` for the
    output gradient gy (N, C, L)."""
    source, mean, inv_std, weight = saved
    xp = backend.get_array_module(gy)
    count = gy.shape[0] * gy.shape[2]
    if mean is not None and _compiled(xp, source):
        from .cpu import batch_norm as compiled
        gy = numpy.ascontiguousarray(gy, dtype=source.dtype)
        sum_g, sum_g_centred = numpy.empty_like(mean), numpy.empty_like(mean)
        _by_channel(lambda first, stop: compiled.gradient_sums(gy, source, mean, first, stop, sum_g, sum_g_centred),
                    gy)
        gw = sum_g_centred * inv_std
        gx = None
        if need_x:
            scale = weight * inv_std
            factor, shift = scale * inv_std * gw / count, scale * sum_g / count
            gx = numpy.empty_like(gy)
            _by_channel(lambda first, stop: compiled.input_grad_channels(gy, source, mean, scale, factor, shift,
                                                                         first, stop, gx), gy)
        return gx, (gw if need_w else None), (sum_g if need_b else None)
    if mean is not None:                        # saved by the compiled kernels, which are off now
        source = threadpool.elementwise(xp.subtract, source, mean[:, None])
    gb = channel_total(xp, gy) if need_b or need_x else None
    gw = channel_sum(xp, "bn_product", gy, source) * inv_std if need_w or need_x else None
    gx = None
    if need_x:                                   # subtract the projections on 1 and on xhat
        scale = weight * inv_std
        gx = input_grad(xp, gy, scale, source, scale * inv_std * gw / count, scale * gb / count)
    return gx, (gw if need_w else None), (gb if need_b else None)


def input_grad(xp, g, scale, source, source_factor, shift):
    """``g * scale - source * source_factor - shift`` per channel: g and source (N, C, L), the rest (C,). On
    NumPy each thread takes a block of images, with its own temporary."""
    gx = xp.empty(g.shape, dtype=g.dtype)

    def block(lo, hi):
        out = gx[lo:hi]
        xp.multiply(g[lo:hi], scale[:, None], out=out)
        out -= xp.multiply(source[lo:hi], source_factor[:, None],
                           out=scratch(xp, "bn_scaled", out.shape, out.dtype))
        out -= shift[:, None]

    if xp is numpy:
        threadpool.run_chunks(block, g.shape[0], g[0].size)
    else:
        block(0, g.shape[0])
    return gx


def _blas_ready(xp, a):
    """Whether ``a`` is a NumPy float32/float64 array (the dtypes NumPy hands to BLAS)."""
    return xp is numpy and a.dtype in (numpy.float32, numpy.float64)


def channel_total(xp, a):
    """sum over axes 0 and 2 of ``a`` (N, C, L) -> (C,).

    On NumPy float32/float64 as a matrix-vector product with ones (BLAS), several times faster than a
    reduction over two axes that are not adjacent, and as accurate in float32.
    """
    if not _blas_ready(xp, a):
        return a.sum(axis=(0, 2))
    return numpy.matmul(a, numpy.ones(a.shape[2], dtype=a.dtype)).sum(axis=0)


def channel_sum(xp, name, a, b):
    """sum over axes 0 and 2 of ``a * b``, both (N, C, L) -> (C,).

    On NumPy float32/float64 one ``einsum`` pass with no temporary; otherwise the product goes to the scratch
    buffer ``name``.
    """
    if _blas_ready(xp, a):
        total = numpy.empty(a.shape[1], dtype=a.dtype)     # per channel: chunks over channels change no bit
        threadpool.run_chunks(lambda lo, hi: numpy.einsum("ncl,ncl->c", a[:, lo:hi], b[:, lo:hi], out=total[lo:hi]),
                              a.shape[1], a.shape[0] * a.shape[2])
        return total
    return xp.multiply(a, b, out=scratch(xp, name, a.shape, a.dtype)).sum(axis=(0, 2))
