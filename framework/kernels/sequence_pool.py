"""The sequence pooling family's one entry pair, :func:`sequence_pool_forward` and :func:`sequence_pool_backward`:
the max and the mean over each sequence's valid positions of a padded batch (Paddle's ``sequence_pool`` with
``pool_type`` max or average), both from one read of the input.

On NumPy with the compiled CPU kernels on (:func:`framework.kernels.cpu.enabled`) they run
:mod:`framework.kernels.cpu.sequence_pool`, the sequences split over the threads (:mod:`framework.threadpool`):
forward reads the input once and writes the max, its position and the mean; backward writes the input's whole
gradient once (the mean's share at every valid position, the max's added at its position, zeros past the length).
Otherwise the array module's passes (NumPy, the reference; CuPy). A sequence of length 0 pools to 0 and gets no
gradient. The max's gradient goes to its first position among equals.
"""
import numpy

from .. import backend, threadpool
from . import cpu

__all__ = ["sequence_pool_forward", "sequence_pool_backward"]


def sequence_pool_forward(x, lengths, want_max, want_mean):
    """The pools of ``x`` over its valid positions: ``(max (N, D) or None, argmax (N, D) int64 or None, mean (N, D)
    or None)``.

    Shapes: x (N, L, D) float, lengths (N,) int64 in [0, L], on one device.
    """
    xp = backend.get_array_module(x)
    if xp is numpy and cpu.enabled() and x.dtype in (numpy.float32, numpy.float64):
        from .cpu.sequence_pool import pool_rows
        x, lengths = numpy.ascontiguousarray(x), numpy.ascontiguousarray(lengths)
        n, _, d = x.shape
        top, where, mean = numpy.empty((n, d), x.dtype), numpy.empty((n, d), numpy.int64), numpy.empty((n, d), x.dtype)
        threadpool.run_chunks(lambda first, stop: pool_rows(x, lengths, first, stop, top, where, mean), n,
                              x.shape[1] * d)
        return (top if want_max else None, where if want_max else None, mean if want_mean else None)
    valid = xp.arange(x.shape[1])[None, :] < lengths[:, None]                                       # (N, L)
    top = where = mean = None
    if want_max:
        scores = xp.where(valid[:, :, None], x, -xp.inf)
        where = scores.argmax(axis=1)                                                                # (N, D)
        top = xp.where(lengths[:, None] > 0, scores.max(axis=1), 0).astype(x.dtype, copy=False)
    if want_mean:
        total = (x * valid[:, :, None].astype(x.dtype)).sum(axis=1)
        mean = (total / xp.maximum(lengths, 1)[:, None].astype(x.dtype)).astype(x.dtype, copy=False)
    return top, where, mean


def sequence_pool_backward(grad_max, where, grad_mean, lengths, shape):
    """The gradient (N, L, D) of the input of :func:`sequence_pool_forward` from the gradients of its pools.

    Shapes: grad_max (N, D) or None with ``where`` (N, D) int64 (the max's positions), grad_mean (N, D) or None,
    lengths (N,) int64, ``shape`` (N, L, D); the gradients of one float dtype and device.
    """
    some = grad_max if grad_max is not None else grad_mean
    xp = backend.get_array_module(some)
    if xp is numpy and cpu.enabled() and some.dtype in (numpy.float32, numpy.float64):
        from .cpu.sequence_pool import pool_rows_backward
        gx = numpy.empty(shape, some.dtype)
        zeros = numpy.zeros((shape[0], shape[2]), some.dtype)           # the gradient of a pool not taken
        top = zeros if grad_max is None else numpy.ascontiguousarray(grad_max)
        mean = zeros if grad_mean is None else numpy.ascontiguousarray(grad_mean)
        spots = zeros.astype(numpy.int64) if where is None else where
        lengths = numpy.ascontiguousarray(lengths)
        threadpool.run_chunks(lambda first, stop: pool_rows_backward(top, spots, mean, lengths, first, stop, gx),
                              shape[0], shape[1] * shape[2])
        return gx
    valid = (xp.arange(shape[1])[None, :] < lengths[:, None])[:, :, None]                         # (N, L, 1)
    gx = xp.zeros(shape, some.dtype)
    if grad_mean is not None:
        share = grad_mean / xp.maximum(lengths, 1)[:, None].astype(some.dtype)
        gx += xp.where(valid, share[:, None, :], 0).astype(some.dtype, copy=False)
    if grad_max is not None:
        kept = xp.where(lengths[:, None] > 0, grad_max, 0).astype(some.dtype, copy=False)
        at_max = xp.arange(shape[1])[None, :, None] == where[:, None, :]                           # (N, L, D)
        gx += xp.where(at_max, kept[:, None, :], 0).astype(some.dtype, copy=False)
    return gx
