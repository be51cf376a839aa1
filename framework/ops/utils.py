"""Helpers shared by the op modules: scalar wrapping, broadcasting undo, axes."""
import numpy

from .. import backend
from ..tensor import Tensor, OpError

__all__ = ["as_tensor", "unbroadcast", "normalize_axes", "check_float"]


def as_tensor(value, like):
    """``value`` as a Tensor on ``like``'s device; Python scalars take ``like``'s dtype."""
    if isinstance(value, Tensor):
        return value
    xp = backend.get_array_module(like.data)
    if isinstance(value, (int, float, bool)):
        return Tensor(xp.asarray(value, dtype=like.data.dtype))
    return Tensor(xp.asarray(value))


def unbroadcast(grad, shape):
    """Sum ``grad`` down to ``shape``, undoing NumPy broadcasting.

    Shapes: grad (*broadcast_shape) -> (*shape).
    """
    if grad.shape == shape:
        return grad
    extra = grad.ndim - len(shape)
    axes = tuple(range(extra)) + tuple(i + extra for i, n in enumerate(shape) if n == 1 and grad.shape[i + extra] != 1)
    if axes:
        grad = grad.sum(axis=axes, keepdims=True)
    return grad.reshape(shape)


def normalize_axes(axis, ndim, op):
    """``axis`` (None, int or sequence) as a sorted tuple of non-negative axes; errors name ``op``."""
    if axis is None:
        return tuple(range(ndim))
    axes = (axis,) if isinstance(axis, (int, numpy.integer)) else tuple(axis)
    out = []
    for a in axes:
        if not -ndim <= a < max(ndim, 1):
            raise OpError(f"{op}: axis {a} is out of range for a tensor of {ndim} dimensions")
        out.append(int(a) % max(ndim, 1))
    if len(set(out)) != len(out):
        raise OpError(f"{op}: repeated axis in {axis}")
    return tuple(sorted(out))


def check_float(x, op):
    """Raise unless Tensor ``x`` has a floating dtype."""
    if x.data.dtype.kind != "f":
        raise OpError(f"{op}: expected a floating-point tensor, got {x.data.dtype} of shape {x.shape}")
