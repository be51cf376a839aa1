"""The Adam update family's one entry, :func:`adam_update` (the optimizers :class:`~framework.optimizer.Adam` and
``AdamW`` call it and nothing else).

On NumPy with the compiled CPU kernels on (:func:`framework.kernels.cpu.enabled`) it runs
:mod:`framework.kernels.cpu.adam`: one pass over the four arrays, split over the threads (an element of the
parameter moves seven array elements: four read, three written). Otherwise the array
module's ufuncs (NumPy, the reference, over flat chunks on the threads; CuPy): nine passes. The compiled pass
gives the NumPy passes' bits, and the update is elementwise, so a thread count changes no bit either.
"""
import math

import numpy

from .. import threadpool
from . import cpu

__all__ = ["adam_update"]


def adam_update(p, m, v, g, lr, beta1, beta2, epsilon, t, xp):
    """Adam update number ``t`` of ``p`` with its moments ``m`` and ``v`` and gradient ``g``, in place (Paddle's
    formula, :class:`framework.optimizer.Adam`).

    Shapes: p, m, v, g one shape and float dtype, on the device of module ``xp``.
    """
    correction = math.sqrt(1 - beta2 ** t)
    settings = (beta1, 1 - beta1, beta2, 1 - beta2, epsilon * correction, lr * correction / (1 - beta1 ** t))
    flat = None
    if xp is numpy and all(a.flags.c_contiguous for a in (p, m, v)):
        flat = [a.reshape(-1) for a in (p, m, v, numpy.ascontiguousarray(g))]
    if flat is not None and cpu.enabled() and p.dtype in (numpy.float32, numpy.float64) and g.dtype == p.dtype:
        from .cpu.adam import adam_elements
        scalars = [p.dtype.type(value) for value in settings]
        threadpool.run_chunks(lambda lo, hi: adam_elements(*flat, lo, hi, *scalars), p.size, len(flat) + 3)
        return
    if flat is not None and p.size >= 2 * threadpool.MIN_CHUNK_ELEMENTS:
        threadpool.run_chunks(lambda lo, hi: _adam_passes(*(a[lo:hi] for a in flat), *settings, xp), p.size)
        return
    _adam_passes(p, m, v, g, *settings, xp)


def _adam_passes(p, m, v, g, beta1, rest1, beta2, rest2, epsilon, step_size, xp):
    """The Adam update of :func:`adam_update` on one block of the arrays, as ufunc passes (the scalars as
    :mod:`framework.kernels.cpu.adam` takes them, here Python floats)."""
    m *= beta1
    m += rest1 * g
    v *= beta2
    v += rest2 * (g * g)
    step = xp.sqrt(v)
    step += epsilon
    xp.divide(m, step, out=step)
    step *= step_size
    p -= step
