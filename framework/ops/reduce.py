"""Reductions: sum, mean, max, min, var, std, logsumexp, argmax, argmin.

Every reduction takes ``axis`` (None for all axes, an int, or a sequence of
ints; negative axes count from the end) and ``keepdim`` (keep the reduced axes
with size 1). Shapes: x (*s) -> s with the reduced axes removed (or set to 1).
"""
import numpy

from ..tensor import Function, Tensor, OpError
from .utils import normalize_axes, check_float
from .math import sqrt

__all__ = ["sum", "mean", "max", "min", "var", "std", "logsumexp", "argmax", "argmin"]


def _kept_shape(shape, axes):
    """``shape`` with every axis in ``axes`` set to 1 (the keepdim shape)."""
    return tuple(1 if i in axes else n for i, n in enumerate(shape))


def _count(shape, axes):
    """Number of elements reduced into each output element."""
    return int(numpy.prod([shape[a] for a in axes], dtype=numpy.int64))


class Sum(Function):
    def forward(self, x):
        self.shape = x.shape
        return x.sum(axis=self.axes, keepdims=self.keepdim)

    def backward(self, gy):
        return self.xp.broadcast_to(gy.reshape(_kept_shape(self.shape, self.axes)), self.shape)


class Mean(Function):
    def forward(self, x):
        self.shape = x.shape
        return x.mean(axis=self.axes, keepdims=self.keepdim)

    def backward(self, gy):
        scale = gy.dtype.type(1.0 / _count(self.shape, self.axes))
        return self.xp.broadcast_to(gy.reshape(_kept_shape(self.shape, self.axes)) * scale, self.shape)


class Extremum(Function):
    """max or min (``self.largest``); the gradient is split evenly among tied extrema."""

    def forward(self, x):
        y = x.max(axis=self.axes, keepdims=True) if self.largest else x.min(axis=self.axes, keepdims=True)
        self.saved = x, y
        return y if self.keepdim else y.reshape([n for i, n in enumerate(x.shape) if i not in self.axes])

    def backward(self, gy):
        x, y = self.saved
        hit = x == y
        share = gy.reshape(y.shape) / hit.sum(axis=self.axes, keepdims=True).astype(gy.dtype)
        return hit * share


class Var(Function):
    def forward(self, x):
        centred = x - x.mean(axis=self.axes, keepdims=True)
        self.saved = centred
        return (centred * centred).sum(axis=self.axes, keepdims=self.keepdim) / centred.dtype.type(self.divisor)

    def backward(self, gy):
        centred = self.saved
        scale = centred.dtype.type(2.0 / self.divisor)
        return gy.reshape(_kept_shape(centred.shape, self.axes)) * scale * centred


class LogSumExp(Function):
    def forward(self, x):
        xp = self.xp
        peak = x.max(axis=self.axes, keepdims=True)
        peak = xp.where(xp.isfinite(peak), peak, 0)
        total = xp.exp(x - peak).sum(axis=self.axes, keepdims=True)
        empty = total == 0  # every entry -inf: the result is -inf, without NaN or log(0)
        y = xp.where(empty, -numpy.inf, xp.log(total + empty) + peak)
        self.saved = x, y
        return y if self.keepdim else y.reshape([n for i, n in enumerate(x.shape) if i not in self.axes])

    def backward(self, gy):
        x, y = self.saved
        return gy.reshape(y.shape) * self.xp.exp(x - y)


def sum(x, axis=None, keepdim=False):
    """Sum of the elements over ``axis`` (all axes when None).

    Shape: x (*s) -> s without the reduced axes (kept as 1 with ``keepdim``).
    Example: ``sum(x, axis=1)`` of a (2, 3) tensor has shape (2,).
    """
    return Sum.apply(x, axes=normalize_axes(axis, x.data.ndim, "sum"), keepdim=keepdim)


def mean(x, axis=None, keepdim=False):
    """Arithmetic mean over ``axis`` (all axes when None). Shapes as in :func:`sum`."""
    return Mean.apply(x, axes=normalize_axes(axis, x.data.ndim, "mean"), keepdim=keepdim)


def _extremum(x, axis, keepdim, largest, op):
    if x.data.size == 0:
        raise OpError(f"{op}: cannot reduce an empty tensor of shape {x.shape}")
    return Extremum.apply(x, axes=normalize_axes(axis, x.data.ndim, op), keepdim=keepdim, largest=largest)


def max(x, axis=None, keepdim=False):
    """Largest element over ``axis`` (all axes when None). Shapes as in :func:`sum`.

    The gradient is shared evenly among elements that tie for the maximum
    (each of k tied elements gets 1/k of the output gradient).
    """
    return _extremum(x, axis, keepdim, True, "max")


def min(x, axis=None, keepdim=False):
    """Smallest element over ``axis``; ties share the gradient evenly, as in :func:`max`."""
    return _extremum(x, axis, keepdim, False, "min")


def var(x, axis=None, keepdim=False, unbiased=True):
    """Variance over ``axis``: sum((x - mean)**2) / (n - 1) when ``unbiased``, else / n.

    Shapes as in :func:`sum`. An unbiased variance over a single element is an error.
    """
    check_float(x, "var")
    axes = normalize_axes(axis, x.data.ndim, "var")
    n = _count(x.shape, axes)
    divisor = n - 1 if unbiased else n
    if divisor <= 0:
        raise OpError(f"var: {'unbiased ' if unbiased else ''}variance over {n} element(s) "
                      f"(axis={axis}, shape {x.shape}) is undefined")
    return Var.apply(x, axes=axes, keepdim=keepdim, divisor=divisor)


def std(x, axis=None, keepdim=False, unbiased=True):
    """Standard deviation, sqrt(var(x, axis, keepdim, unbiased)). Shapes as in :func:`sum`."""
    return sqrt(var(x, axis, keepdim, unbiased))


def logsumexp(x, axis=None, keepdim=False):
    """log(sum(exp(x))) over ``axis``, computed stably (the maximum is subtracted first).

    Shapes as in :func:`sum`. The gradient is softmax(x) over the reduced axes.
    """
    check_float(x, "logsumexp")
    if x.data.size == 0:
        raise OpError(f"logsumexp: cannot reduce an empty tensor of shape {x.shape}")
    return LogSumExp.apply(x, axes=normalize_axes(axis, x.data.ndim, "logsumexp"), keepdim=keepdim)


def _arg_extremum(x, axis, keepdim, largest, op):
    data = x.data
    if data.size == 0:
        raise OpError(f"{op}: cannot reduce an empty tensor of shape {x.shape}")
    if axis is not None:
        if not isinstance(axis, (int, numpy.integer)):
            raise OpError(f"{op}: axis must be an int or None, got {axis!r}")
        axis = normalize_axes(axis, data.ndim, op)[0]
    index = data.argmax(axis=axis, keepdims=keepdim) if largest else data.argmin(axis=axis, keepdims=keepdim)
    return Tensor(index.astype(numpy.int64, copy=False))


def argmax(x, axis=None, keepdim=False):
    """Index of the largest element along ``axis`` (int), or in the flattened tensor when None.

    Not differentiable; the result is int64. Shape: x (*s) -> s without ``axis``
    (kept as 1 with ``keepdim``); () for ``axis=None`` (all ones with ``keepdim``).
    The first index wins on ties.
    """
    return _arg_extremum(x, axis, keepdim, True, "argmax")


def argmin(x, axis=None, keepdim=False):
    """Index of the smallest element along ``axis``; see :func:`argmax`."""
    return _arg_extremum(x, axis, keepdim, False, "argmin")
