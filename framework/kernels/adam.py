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
    flat = None
    if xp is numpy and all(a.flags.c_contiguous for a in (p, m, v)):
        flat = [a.reshape(-1) for a in (p, m, v, numpy.ascontiguousarray(g))]
    if flat is not None and cpu.enabled() and p.dtype in (numpy.float32, numpy.float64) and g.dtype == p.dtype:
        from .cpu.adam import adam_elements
        scalar = p.dtype.type
        settings = (scalar(beta1), scalar(1 - beta1), scalar(beta2), scalar(1 - beta2), scalar(epsilon * correction),
                    scalar(lr * correction / (1 - beta1 ** t)))
        threadpool.run_chunks(lambda lo, hi: adam_elements(*flat, lo, hi, *settings), p.size, len(flat) + 3)
        return
    if flat is not None and p.size >= 2 * threadpool.MIN_CHUNK_ELEMENTS:
        threadpool.run_chunks(lambda lo, hi: _adam_passes(*(a[lo:hi] for a in flat), lr, beta1, beta2, epsilon, t,
                                                          xp), p.size)
        return
    _adam_passes(p, m, v, g, lr, beta1, beta2, epsilon, t, xp)


def _adam_passes(p, m, v, g, lr, beta1, beta2, epsilon, t, xp):
    """The Adam update of :func:`adam_update` on one block of the arrays, as ufunc passes."""
    correction = math.sqrt(1 - beta2 ** t)
    m *= beta1
    m += (1 - beta1) * g
    v *= beta2
    v += (1 - beta2) * (g * g)
    step = xp.sqrt(v)
    step += epsilon * correction
    xp.divide(m, step, out=step)
    step *= lr * correction / (1 - beta1 ** t)
    p -= step
