"""Max and average pooling over 1, 2 or 3 spatial dimensions, adaptive average pooling, and pooling over
the valid positions of a padded batch of sequences (:func:`sequence_pool`).

Window pooling is one entry pair of :mod:`framework.kernels.pooling` (an N-d
running max or sum over one strided view per kernel offset, 2-D max pooling
compiled on the CPU). Adaptive average
pooling is separable: one averaging matrix per spatial dimension. Sequence
pooling is one entry pair of :mod:`framework.kernels.sequence_pool`: the max and
the mean of a sequence from one read of the input.
"""
import functools

import numpy

from ..kernels.pooling import pool_backward, pool_forward
from ..kernels.sequence_pool import sequence_pool_backward, sequence_pool_forward
from ..tensor import Function, OpError
from .conv import conv_geometry, per_dim
from .rnn import sequence_lengths
from .utils import check_float

__all__ = ["max_pool1d", "max_pool2d", "max_pool3d", "avg_pool1d", "avg_pool2d", "avg_pool3d",
           "adaptive_avg_pool1d", "adaptive_avg_pool2d", "adaptive_avg_pool3d", "sequence_pool"]

SEQUENCE_POOLS = ("max", "average", "max_average")    # what sequence_pool takes


class PoolNd(Function):
    """Max (``mode="max"``) or average (``mode="avg"``, divided by ``divisor``) over each window
    (:mod:`framework.kernels.pooling`)."""

    def forward(self, x):
        self.x_shape = x.shape
        if self.mode == "avg":
            self.divisor = self.xp.asarray(self.divisor, dtype=x.dtype)
        y, self.saved = pool_forward(x, self.mode, self.kernel, self.stride, self.padding, self.out, self._divisor())
        return y

    def backward(self, gy):
        return pool_backward(self.saved, gy, self.x_shape, self.mode, self.kernel, self.stride, self.padding,
                             self.out, self._divisor())

    def _divisor(self):
        """Average pooling's divisor (an attribute of the op, so of a saved program); max pooling has none."""
        return self.divisor if self.mode == "avg" else None


class AdaptiveAvgPoolNd(Function):
    """y = x averaged along each spatial axis d by the (out_d, size_d) matrix ``self.weights[d]``."""

    def forward(self, x):
        self.weights = [self.xp.asarray(w, dtype=x.dtype) for w in self.weights]
        return self._apply(x, [w.T for w in self.weights])

    def backward(self, gy):
        return self._apply(gy, self.weights)

    def _apply(self, a, matrices):
        xp = self.xp
        for axis, m in enumerate(matrices, start=2):
            a = xp.moveaxis(xp.matmul(xp.moveaxis(a, axis, -1), m), -1, axis)
        return xp.ascontiguousarray(a)


def _check_input(op, x, ndim):
    if x.ndim != ndim + 2:
        raise OpError(f"{op}: expected x of shape (N, C, *spatial) with {ndim + 2} dims, got {x.shape}")
    if x.dtype.kind != "f":
        raise OpError(f"{op}: expected a floating-point tensor, got {x.dtype} of shape {x.shape}")


def _window_counts(kernel, stride, before, out, low, high):
    """How many taps of each window fall inside [low, high) along one axis; shape (out,)."""
    starts = numpy.arange(out) * stride - before
    return numpy.clip(numpy.minimum(starts + kernel, high) - numpy.maximum(starts, low), 0, None)


def _pool(mode, ndim, x, kernel_size, stride, padding, ceil_mode, exclusive=True):
    op = f"{mode}_pool{ndim}d"
    _check_input(op, x, ndim)
    size = x.shape[2:]
    kernel = per_dim(kernel_size, ndim, "kernel_size", op)
    stride, pads, _, out = conv_geometry(op, size, kernel, kernel if stride is None else stride, padding, 1)
    if not isinstance(padding, str) and any(lo > k // 2 for (lo, _), k in zip(pads, kernel)):
        raise OpError(f"{op}: padding {padding!r} must be at most half the kernel {kernel}")
    if ceil_mode:  # as PyTorch: round up, but no window may start in the padding after the input
        out = tuple(-(-(n + lo + hi - k) // s) + 1 for n, (lo, hi), k, s in zip(size, pads, kernel, stride))
        out = tuple(o - 1 if (o - 1) * s >= n + lo else o for o, n, (lo, _), s in zip(out, size, pads, stride))
    reach = tuple((lo, max(hi, (o - 1) * s + k - n - lo))
                  for (lo, hi), o, s, k, n in zip(pads, out, stride, kernel, size))
    attrs = dict(mode=mode, kernel=kernel, stride=stride, padding=reach, out=out)
    if mode == "avg":
        counts = [_window_counts(k, s, lo, o, 0 if exclusive else -lo, n if exclusive else n + hi)
                  for n, k, s, (lo, hi), o in zip(size, kernel, stride, pads, out)]
        attrs["divisor"] = functools.reduce(numpy.multiply.outer, counts)
    return PoolNd.apply(x, **attrs)


def max_pool1d(x, kernel_size, stride=None, padding=0, ceil_mode=False):
    """Maximum over windows of the last axis. x (N, C, L) -> (N, C, L_out).

    ``stride`` defaults to ``kernel_size``; padded positions never win. The
    gradient goes to the first maximum of each window.
    """
    return _pool("max", 1, x, kernel_size, stride, padding, ceil_mode)


def max_pool2d(x, kernel_size, stride=None, padding=0, ceil_mode=False):
    """Maximum over KH x KW windows. x (N, C, H, W) -> (N, C, H_out, W_out).

    H_out = (H + 2 * pad - KH) // stride + 1 (rounded up when ``ceil_mode``).
    ``kernel_size``, ``stride`` (default: ``kernel_size``) and ``padding`` are
    ints or pairs; ``padding`` may be "same" or "valid". The gradient goes to
    the first maximum of each window.
    """
    return _pool("max", 2, x, kernel_size, stride, padding, ceil_mode)


def max_pool3d(x, kernel_size, stride=None, padding=0, ceil_mode=False):
    """Maximum over KD x KH x KW windows. x (N, C, D, H, W) -> (N, C, D_out, H_out, W_out)."""
    return _pool("max", 3, x, kernel_size, stride, padding, ceil_mode)


def avg_pool1d(x, kernel_size, stride=None, padding=0, ceil_mode=False, exclusive=True):
    """Mean over windows of the last axis. x (N, C, L) -> (N, C, L_out).

    With ``exclusive`` (Paddle's default) padded positions are not counted in the mean.
    """
    return _pool("avg", 1, x, kernel_size, stride, padding, ceil_mode, exclusive)


def avg_pool2d(x, kernel_size, stride=None, padding=0, ceil_mode=False, exclusive=True):
    """Mean over KH x KW windows. x (N, C, H, W) -> (N, C, H_out, W_out).

    With ``exclusive`` (Paddle's default) the mean is over the window's
    positions inside the input; otherwise zero padding counts too (but never
    the extra positions ``ceil_mode`` adds).
    """
    return _pool("avg", 2, x, kernel_size, stride, padding, ceil_mode, exclusive)


def avg_pool3d(x, kernel_size, stride=None, padding=0, ceil_mode=False, exclusive=True):
    """Mean over KD x KH x KW windows. x (N, C, D, H, W) -> (N, C, D_out, H_out, W_out)."""
    return _pool("avg", 3, x, kernel_size, stride, padding, ceil_mode, exclusive)


def _adaptive_weights(size, out):
    """(out, size) averaging matrix: row i averages [floor(i * size / out), ceil((i + 1) * size / out))."""
    i = numpy.arange(out)
    start, end = (i * size) // out, -(-((i + 1) * size) // out)
    j = numpy.arange(size)
    inside = (j >= start[:, None]) & (j < end[:, None])
    return inside / (end - start)[:, None]


def _adaptive_avg_pool(ndim, x, output_size):
    op = f"adaptive_avg_pool{ndim}d"
    _check_input(op, x, ndim)
    out = per_dim(output_size, ndim, "output_size", op)
    if min(out) < 1:
        raise OpError(f"{op}: output_size {output_size!r} must be positive")
    return AdaptiveAvgPoolNd.apply(x, weights=[_adaptive_weights(n, o) for n, o in zip(x.shape[2:], out)])


def adaptive_avg_pool1d(x, output_size):
    """Average pooling to a fixed length, with PyTorch's bins. x (N, C, L) -> (N, C, output_size).

    Bin i covers [floor(i * L / out), ceil((i + 1) * L / out)).
    """
    return _adaptive_avg_pool(1, x, output_size)


def adaptive_avg_pool2d(x, output_size):
    """Average pooling to a fixed (H_out, W_out) (an int means square). x (N, C, H, W) -> (N, C, H_out, W_out).

    Example: ``adaptive_avg_pool2d(x, 1)`` is global average pooling.
    """
    return _adaptive_avg_pool(2, x, output_size)


def adaptive_avg_pool3d(x, output_size):
    """Average pooling to a fixed (D_out, H_out, W_out). x (N, C, D, H, W) -> (N, C, D_out, H_out, W_out)."""
    return _adaptive_avg_pool(3, x, output_size)


class SequencePool(Function):
    """The max and / or the mean over each sequence's valid positions; attributes ``lengths`` (N,) int64 and
    ``pool_type`` (one of :data:`SEQUENCE_POOLS`)."""

    def forward(self, x):
        self.shape = x.shape
        top, self.where, mean = sequence_pool_forward(x, self.lengths, self.pool_type != "average",
                                                      self.pool_type != "max")
        if self.pool_type == "max_average":
            return self.xp.concatenate([top, mean], axis=1)
        return top if self.pool_type == "max" else mean

    def backward(self, gy):
        width = self.shape[2]
        grad_max = gy[:, :width] if self.pool_type != "average" else None
        grad_mean = gy[:, -width:] if self.pool_type != "max" else None
        return sequence_pool_backward(grad_max, self.where, grad_mean, self.lengths, self.shape)


def sequence_pool(x, lengths, pool_type="max"):
    """Pool each sequence of a padded batch over its valid positions t < lengths[n] (Paddle's ``sequence_pool``):
    ``max``, ``average`` (the mean), or ``max_average`` (both side by side, max first). Positions past a length
    neither count nor get a gradient; a sequence of length 0 pools to 0.

    Shapes: x (N, L, D) float, lengths (N,) ints in [0, L] or None (every sequence L long) -> (N, D), or
    (N, 2 D) for ``max_average``.
    """
    check_float(x, "sequence_pool")
    if x.ndim != 3:
        raise OpError(f"sequence_pool: expected x of shape (N, L, D), got {x.shape}")
    if pool_type not in SEQUENCE_POOLS:
        raise OpError(f"sequence_pool: pool_type must be one of {', '.join(SEQUENCE_POOLS)}, got {pool_type!r}")
    return SequencePool.apply(x, lengths=sequence_lengths(lengths, x, "sequence_pool"), pool_type=pool_type)
