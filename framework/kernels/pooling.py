"""Window pooling (max or average over each window of 1, 2 or 3 spatial dimensions): the family's one entry,
:func:`pool_forward` / :func:`pool_backward`.

The NumPy and CuPy passes: a running max (with the index of the first maximum) or sum over one strided view of
the padded input per kernel offset (:func:`framework.kernels.im2col.windows`); the backward pass adds each
offset's share of the gradient back (:func:`framework.kernels.im2col.add_windows`). On NumPy the images are
split over the threads (each image on its own, so no bit depends on the thread count), and 2-D max pooling runs
the compiled kernels of :mod:`framework.kernels.cpu.pooling` when ``cpu.enabled()``: the same bits without the
padded copy and the per-offset temporaries.

Geometry: ``kernel``, ``stride``, ``out`` are d ints, ``padding`` d (before, after) pairs (the after side
reaching the last window); ``divisor`` (average pooling) broadcasts against the output's spatial shape.
"""
import math

import numpy

from .. import backend, threadpool
from . import cpu
from .im2col import add_windows, pad, windows

__all__ = ["pool_forward", "pool_backward"]


def _compiled(a, mode, kernel):
    """Whether the compiled kernels take this pooling: 2-D max pooling of a float32/float64 NumPy array ``a``."""
    return (type(a) is numpy.ndarray and a.dtype in (numpy.float32, numpy.float64) and mode == "max"
            and len(kernel) == 2 and cpu.enabled())


def _index_dtype(kernel):
    return numpy.min_scalar_type(math.prod(kernel) - 1)


def pool_forward(x, mode, kernel, stride, padding, out, divisor=None):
    """Max (``mode="max"``) or average (``"avg"``, divided by ``divisor``) over each window.

    Shapes: x (N, C, *size) -> (y (N, C, *out), saved): saved is the index of each window's first maximum (the
    shape of y, the smallest unsigned type for prod(kernel) taps) for max pooling, None for average."""
    xp = backend.get_array_module(x)
    if xp is not numpy:
        return _pool_images(xp, x, mode, kernel, stride, padding, out, divisor)
    y = numpy.empty(x.shape[:2] + tuple(out), dtype=x.dtype)
    argmax = None if mode == "avg" else numpy.empty(y.shape, dtype=_index_dtype(kernel))
    if _compiled(x, mode, kernel):
        from .cpu import pooling as compiled

        def images(lo, hi):
            compiled.max_pool2d_images(x, *kernel, *stride, padding[0][0], padding[1][0], lo, hi, y, argmax)
    else:
        def images(lo, hi):
            y[lo:hi], index = _pool_images(numpy, x[lo:hi], mode, kernel, stride, padding, out, divisor)
            if argmax is not None:
                argmax[lo:hi] = index
    threadpool.run_chunks(images, x.shape[0], y[0].size * math.prod(kernel))
    return y, argmax


def _pool_images(xp, x, mode, kernel, stride, padding, out, divisor):
    """(y, argmax) of images x (n, C, *size): argmax None for average pooling."""
    padded = pad(x, padding, -numpy.inf if mode == "max" else 0)
    views = windows(padded, kernel, stride, (1,) * len(kernel), out)
    y = next(views).copy()
    if mode == "avg":
        for view in views:
            y += view
        return y / divisor, None
    argmax = xp.zeros(y.shape, dtype=_index_dtype(kernel))
    for index, view in enumerate(views, start=1):
        better = view > y  # strictly: the first maximum wins ties
        xp.maximum(y, view, out=y)
        argmax += better * (index - argmax)  # argmax = index where better, without a masked write
    return y, argmax


def pool_backward(saved, gy, x_shape, mode, kernel, stride, padding, out, divisor=None):
    """The input gradient (x_shape, gy's dtype) of :func:`pool_forward` from gy (N, C, *out) and its ``saved``."""
    xp = backend.get_array_module(gy)
    share = gy / divisor if mode == "avg" else None
    gx = xp.zeros(x_shape, dtype=gy.dtype)
    if _compiled(gy, mode, kernel):
        from .cpu import pooling as compiled

        def images(lo, hi):
            compiled.max_pool2d_backward_images(saved, gy, *kernel, *stride, padding[0][0], padding[1][0], lo, hi,
                                                gx)
    else:
        def images(lo, hi):
            def block(index):
                """The gradient that kernel offset ``index`` sends back, (n, C, *out)."""
                return share[lo:hi] if share is not None else (saved[lo:hi] == index) * gy[lo:hi]
            add_windows(gx[lo:hi], block, kernel, stride, padding, (1,) * len(kernel), out)
    if xp is numpy:
        threadpool.run_chunks(images, gy.shape[0], gy[0].size * math.prod(kernel))
    else:
        images(0, gy.shape[0])
    return gx
