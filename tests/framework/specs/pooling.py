"""Specs for framework/ops/pooling.py: references loop over output positions (for sequence pooling, over each
sequence's valid positions)."""
import itertools
import math

import numpy
import pytest

from framework import OpError, Tensor
from framework.nn import functional as F
from ..opspec import OpSpec


def pool_reference(x, mode, kernel, stride, pad, ceil_mode=False, exclusive=True):
    """Max or average over each window, with PyTorch's ceil_mode and count_include_pad rules.

    ``kernel``, ``stride`` and ``pad`` are tuples (one entry per spatial dimension).
    """
    size = x.shape[2:]
    out = []
    for n, k, s, p in zip(size, kernel, stride, pad):
        o = (math.ceil((n + 2 * p - k) / s) if ceil_mode else (n + 2 * p - k) // s) + 1
        out.append(o - 1 if ceil_mode and (o - 1) * s >= n + p else o)
    y = numpy.zeros(x.shape[:2] + tuple(out))
    for pos in itertools.product(*map(range, out)):
        starts = [o * s - p for o, s, p in zip(pos, stride, pad)]
        inside = [[i for i in range(b, b + k) if 0 <= i < n] for b, k, n in zip(starts, kernel, size)]
        window = x[(slice(None), slice(None)) + numpy.ix_(*inside)].reshape(x.shape[:2] + (-1,))
        if mode == "max":
            y[(slice(None), slice(None)) + pos] = window.max(axis=-1)
        else:
            padded_count = math.prod(min(b + k, n + p) - b for b, k, n, p in zip(starts, kernel, size, pad))
            y[(slice(None), slice(None)) + pos] = window.sum(axis=-1) / (
                window.shape[-1] if exclusive else padded_count)
    return y


def adaptive_reference(x, out):
    """Bin i of each axis covers [floor(i * L / out), ceil((i + 1) * L / out))."""
    size = x.shape[2:]
    y = numpy.zeros(x.shape[:2] + tuple(out))
    for pos in itertools.product(*map(range, out)):
        bins = tuple(slice(i * n // o, -(-(i + 1) * n // o)) for i, n, o in zip(pos, size, out))
        y[(slice(None), slice(None)) + pos] = x[(slice(None), slice(None)) + bins].mean(
            axis=tuple(range(2, x.ndim)))
    return y


def _per_dim(value, nd):
    return (value,) * nd if isinstance(value, int) else value


def _pool_spec(mode, shape, kernel, stride=None, padding=0, ceil_mode=False, exclusive=True, check=None):
    nd = len(shape) - 2
    op = getattr(F, f"{mode}_pool{nd}d")
    options = dict(ceil_mode=ceil_mode) if mode == "max" else dict(ceil_mode=ceil_mode, exclusive=exclusive)
    ref_stride = _per_dim(kernel if stride is None else stride, nd)
    return OpSpec(f"{mode}_pool{nd}d", lambda x: op(x, kernel, stride, padding, **options),
                  lambda rng: [rng.uniform(-1, 1, shape)],
                  lambda x: pool_reference(x, mode, _per_dim(kernel, nd), ref_stride, _per_dim(padding, nd),
                                           ceil_mode, exclusive), check=check)


def _adaptive_spec(shape, out):
    nd = len(shape) - 2
    op = getattr(F, f"adaptive_avg_pool{nd}d")
    return OpSpec(f"adaptive_avg_pool{nd}d", lambda x: op(x, out), lambda rng: [rng.uniform(-1, 1, shape)],
                  lambda x: adaptive_reference(x, _per_dim(out, nd)))


def _rejects_bad_input(outs, arrays):
    """Wrong ndim, integer input, too much padding or an empty output size: one OpError naming the op."""
    x = Tensor(numpy.zeros((2, 3, 4, 4), numpy.float32))
    bad_calls = [("max_pool2d", lambda: F.max_pool2d(Tensor(numpy.zeros((2, 3, 4), numpy.float32)), 2)),
                 ("max_pool2d", lambda: F.max_pool2d(Tensor(numpy.zeros((2, 3, 4, 4), numpy.int64)), 2)),
                 ("avg_pool2d", lambda: F.avg_pool2d(x, 2, padding=2)),
                 ("avg_pool2d", lambda: F.avg_pool2d(x, (2, 2, 2))),
                 ("adaptive_avg_pool2d", lambda: F.adaptive_avg_pool2d(x, 0))]
    for op, call in bad_calls:
        with pytest.raises(OpError, match=op):
            call()

def sequence_pool_reference(x, lengths, pool_type):
    """Max and / or mean of each sequence's first lengths[n] rows, one sequence at a time (0 for an empty one)."""
    pools = []
    for n, length in enumerate(lengths):
        rows = x[n, :length]
        top = rows.max(axis=0) if length else numpy.zeros(x.shape[2])
        mean = rows.sum(axis=0) / length if length else numpy.zeros(x.shape[2])
        pools.append({"max": [top], "average": [mean], "max_average": [top, mean]}[pool_type])
    return numpy.stack([numpy.concatenate(p) for p in pools])


def _sequence_spec(pool_type, lengths):
    def check(outputs, inputs):      # padding never counts: a huge value past the lengths changes nothing
        x, lengths_ = inputs
        far = x.copy()
        for n, length in enumerate(lengths_):
            far[n, length:] = 1e6
        again = F.sequence_pool(Tensor(far), Tensor(lengths_), pool_type).numpy()
        numpy.testing.assert_array_equal(again, outputs[0].numpy())
        with pytest.raises(OpError, match="pool_type must be one of max, average, max_average, got 'sum'"):
            F.sequence_pool(Tensor(x), Tensor(lengths_), "sum")
        with pytest.raises(OpError, match=r"lengths must lie in \[0, 5\]"):
            F.sequence_pool(Tensor(x), Tensor(numpy.full(len(x), 6)), pool_type)
    return OpSpec("sequence_pool", lambda x, lengths: F.sequence_pool(x, lengths, pool_type),
                  lambda rng: [rng.uniform(-1, 1, (len(lengths), 5, 3)), numpy.array(lengths, dtype=numpy.int64)],
                  lambda x, lengths: sequence_pool_reference(x, lengths, pool_type), check=check,
                  id=f"pooling.sequence_pool[{pool_type}, lengths={lengths}]")


SPECS = [
    _pool_spec("max", (2, 3, 8), 2),
    _pool_spec("max", (2, 2, 9), 3, 2, 1, ceil_mode=True),
    _pool_spec("max", (2, 3, 6, 7), 2, check=_rejects_bad_input),
    _pool_spec("max", (2, 2, 7, 6), 3, 2, 1),
    _pool_spec("max", (1, 2, 7, 8), (3, 2), (2, 3), (1, 1), ceil_mode=True),
    _pool_spec("max", (2, 2, 4, 5, 4), 2),
    _pool_spec("max", (1, 2, 5, 6, 5), 3, 2, 1, ceil_mode=True),
    _pool_spec("avg", (2, 3, 8), 3, 2, 1),
    _pool_spec("avg", (2, 2, 9), 3, 2, 1, ceil_mode=True, exclusive=False),
    _pool_spec("avg", (2, 3, 6, 7), 2),
    _pool_spec("avg", (2, 2, 7, 6), 3, 2, 1),
    _pool_spec("avg", (2, 2, 7, 6), 3, 2, 1, exclusive=False),
    _pool_spec("avg", (1, 2, 7, 8), (3, 2), (2, 3), (1, 1), ceil_mode=True),
    _pool_spec("avg", (1, 2, 7, 8), (3, 2), (2, 3), (1, 1), ceil_mode=True, exclusive=False),
    _pool_spec("avg", (2, 2, 4, 5, 4), 2),
    _pool_spec("avg", (1, 2, 5, 6, 5), 3, 2, 1, ceil_mode=True, exclusive=False),
    _adaptive_spec((2, 3, 10), 4),
    _adaptive_spec((2, 3, 7, 5), (3, 2)),
    _adaptive_spec((2, 2, 6, 6), 1),
    _adaptive_spec((1, 2, 5, 7, 6), (2, 3, 4)),
    *[_sequence_spec(pool_type, lengths) for pool_type in ("max", "average", "max_average")
      for lengths in ([5, 2, 4, 1], [5, 0, 3, 5])],
]
