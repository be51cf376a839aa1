"""Specs for framework/ops/reduce.py. References loop over the kept index set
(``_reduce_ref``) and apply a plain Python reduction to each group."""
import itertools
import math

import numpy

import framework as fw
from ..opspec import OpSpec


def _reduce_ref(x, axis, keepdim, fold):
    """Apply ``fold`` (list of floats -> float) to every group of elements reduced together."""
    axes = tuple(range(x.ndim)) if axis is None else tuple(a % x.ndim for a in numpy.atleast_1d(axis))
    out_shape = tuple(1 if i in axes else n for i, n in enumerate(x.shape))
    out = numpy.empty(out_shape)
    for kept in itertools.product(*[range(n) for n in out_shape]):
        group = [x[tuple(r[k] if k in axes else kept[k] for k in range(x.ndim))]
                 for r in [dict(zip(axes, combo)) for combo in
                           itertools.product(*[range(x.shape[a]) for a in axes])]]
        out[kept] = fold(group)
    return out if keepdim else out.reshape([n for i, n in enumerate(x.shape) if i not in axes])


def _variance(group, ddof):
    m = sum(group) / len(group)
    return sum((v - m) ** 2 for v in group) / (len(group) - ddof)


def _logsumexp(group):
    m = max(group)
    return m + math.log(sum(math.exp(v - m) for v in group))


def _distinct(*shape):
    """Values with no ties closer than the gradient check's step."""
    return lambda rng: [(rng.permutation(int(numpy.prod(shape))) / 7.0 + rng.uniform(0, 0.01)).reshape(shape)]


def _rand(*shape):
    return lambda rng: [rng.uniform(-1, 1, shape)]


AXES = [(None, False), (1, False), (-1, True), ((0, 2), False), ((0, 2), True)]

SPECS = []
for axis, keepdim in AXES:
    opts = dict(axis=axis, keepdim=keepdim)
    SPECS += [
        OpSpec("sum", lambda x, o=opts: fw.sum(x, **o), _rand(2, 3, 4),
               lambda x, o=opts: _reduce_ref(x, o["axis"], o["keepdim"], sum)),
        OpSpec("mean", lambda x, o=opts: fw.mean(x, **o), _rand(2, 3, 4),
               lambda x, o=opts: _reduce_ref(x, o["axis"], o["keepdim"], lambda g: sum(g) / len(g))),
        OpSpec("max", lambda x, o=opts: fw.max(x, **o), _distinct(2, 3, 4),
               lambda x, o=opts: _reduce_ref(x, o["axis"], o["keepdim"], max)),
        OpSpec("min", lambda x, o=opts: fw.min(x, **o), _distinct(2, 3, 4),
               lambda x, o=opts: _reduce_ref(x, o["axis"], o["keepdim"], min)),
        OpSpec("logsumexp", lambda x, o=opts: fw.logsumexp(x, **o), _rand(2, 3, 4),
               lambda x, o=opts: _reduce_ref(x, o["axis"], o["keepdim"], _logsumexp)),
    ]
    for unbiased in (True, False):
        o = dict(opts, unbiased=unbiased)
        SPECS += [
            OpSpec("var", lambda x, o=o: fw.var(x, **o), _rand(2, 3, 4),
                   lambda x, o=o: _reduce_ref(x, o["axis"], o["keepdim"], lambda g: _variance(g, int(o["unbiased"])))),
            OpSpec("std", lambda x, o=o: fw.std(x, **o), _rand(2, 3, 4),
                   lambda x, o=o: _reduce_ref(x, o["axis"], o["keepdim"],
                                              lambda g: math.sqrt(_variance(g, int(o["unbiased"]))))),
        ]

# Two-way ties: the central difference at a tie is 1/2 for each tied element,
# which is exactly the even split max/min use.
_TIES = lambda rng: [numpy.array([[1.0, 3.0, 3.0, 0.5], [2.0, 2.0, -1.0, 0.0]])]  # noqa: E731
SPECS += [
    OpSpec("max", lambda x: fw.max(x, axis=1), _TIES, lambda x: numpy.array([3.0, 2.0])),
    OpSpec("min", lambda x: fw.min(x, axis=0), lambda rng: [numpy.array([[1.0, 3.0], [1.0, 4.0]])],
           lambda x: numpy.array([1.0, 3.0])),
    # stability: huge inputs whose exp overflows, and a row of -inf
    OpSpec("logsumexp", lambda x: fw.logsumexp(x + 1000.0, axis=1),
           _rand(3, 4), lambda x: _reduce_ref(x, 1, False, _logsumexp) + 1000.0),
    OpSpec("logsumexp", lambda x: fw.exp(fw.logsumexp(x, axis=1)),
           lambda rng: [numpy.array([[-numpy.inf, -numpy.inf], [0.0, -numpy.inf]])],
           lambda x: numpy.array([0.0, 1.0]), grad=False),
]


def _int64(outs, inputs):
    assert all(o.dtype == numpy.int64 for o in outs), [o.dtype for o in outs]


def _argref(x, axis, keepdim, pick):
    """Index of the first extreme element along ``axis`` (or of the flattened array), by loops."""
    def first(values):
        best = pick(values)
        return values.index(best)
    if axis is None:
        idx = numpy.array(first(list(x.ravel())))
        return idx.reshape((1,) * x.ndim) if keepdim else idx
    moved = numpy.moveaxis(x, axis, -1)
    out = numpy.array([first(list(row)) for row in moved.reshape(-1, moved.shape[-1])]).reshape(moved.shape[:-1])
    return numpy.expand_dims(out, axis) if keepdim else out


_ARG_INPUT = lambda rng: [rng.integers(0, 4, (3, 4, 5)).astype(float)]  # noqa: E731  (ties: first wins)
for axis, keepdim in [(None, False), (None, True), (1, False), (-1, True), (0, False)]:
    SPECS += [
        OpSpec("argmax", lambda x, a=axis, k=keepdim: fw.argmax(x, axis=a, keepdim=k), _ARG_INPUT,
               lambda x, a=axis, k=keepdim: _argref(x, a, k, max), grad=False, check=_int64),
        OpSpec("argmin", lambda x, a=axis, k=keepdim: fw.argmin(x, axis=a, keepdim=k), _ARG_INPUT,
               lambda x, a=axis, k=keepdim: _argref(x, a, k, min), grad=False, check=_int64),
    ]
