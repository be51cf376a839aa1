"""Per-channel affine map y = x * scale + shift, the batch norm's arithmetic, and its one entry for an
inference program's fused batch norm and ReLU (:func:`fused_channel_affine`).

:func:`scale_shift` is the NumPy / CuPy version, two ufunc passes chunked over the threads
(:mod:`framework.threadpool`). :func:`fused_channel_affine` adds the ReLU; on NumPy with the compiled CPU kernels on
(:func:`framework.kernels.cpu.enabled`) it runs :mod:`framework.kernels.cpu.affine` instead: one pass over the
activations, the same bits.

Shapes: x (N, C, L), scale and shift (C,) -> (N, C, L).
"""
import numpy

from .. import backend, threadpool
from . import cpu

__all__ = ["scale_shift", "fused_channel_affine"]


def scale_shift(xp, a, scale, shift):
    """``a * scale + shift`` per channel: a (N, C, L), scale and shift (C,) -> a new (N, C, L); chunked over the
    threads on NumPy."""
    y = threadpool.elementwise(xp.multiply, a, scale[:, None])
    return threadpool.elementwise(xp.add, y, shift[:, None], out=y)


def fused_channel_affine(x, scale, shift, relu):
    """``x * scale + shift`` per channel, then ``max(y, 0)`` when ``relu``: x (N, C, L), scale and shift (C,) of
    x's dtype -> a new (N, C, L)."""
    xp = backend.get_array_module(x)
    if xp is numpy and cpu.enabled() and x.dtype in (numpy.float32, numpy.float64):
        from .cpu.affine import channel_affine_channels
        x, scale, shift = (numpy.ascontiguousarray(a) for a in (x, scale, shift))
        y = numpy.empty_like(x)
        threadpool.run_chunks(lambda first, stop: channel_affine_channels(x, scale, shift, bool(relu), first, stop, y),
                              x.shape[1], x.shape[0] * x.shape[2])
        return y
    y = scale_shift(xp, x, scale, shift)
    if relu:
        threadpool.elementwise(xp.maximum, y, y.dtype.type(0), out=y)
    return y
