"""Specs for framework/ops/activation.py. References are closed forms evaluated
with Python's ``math`` one element at a time (``_each``) or row by row."""
import math

import numpy

import framework as fw
from framework.nn import functional as F
from ..opspec import OpSpec, rand, away_from


def _each(f):
    """Reference applying the scalar function ``f`` to every element."""
    return lambda x: numpy.vectorize(f, otypes=[float])(x)


def _kinked(*points, low=-4.0, high=4.0, shape=(4, 6)):
    """Input maker: uniform values kept away from the kinks at ``points``."""
    return lambda rng: [away_from(rng.uniform(low, high, shape), points)]


def _sigmoid(v):
    return 1 / (1 + math.exp(-v)) if v >= 0 else math.exp(v) / (1 + math.exp(v))


def _gelu_tanh(v):
    return 0.5 * v * (1 + math.tanh(math.sqrt(2 / math.pi) * (v + 0.044715 * v ** 3)))


def _softplus(v, beta, threshold):
    return v if beta * v > threshold else math.log1p(math.exp(beta * v)) / beta


def _rowwise(f, axis):
    """Reference applying ``f`` (list of floats -> list of floats) to every slice along ``axis``."""
    def ref(x):
        moved = numpy.moveaxis(x, axis, -1)
        rows = [f(list(row)) for row in moved.reshape(-1, moved.shape[-1])]
        return numpy.moveaxis(numpy.array(rows).reshape(moved.shape), -1, axis)
    return ref


def _softmax_row(row):
    m = max(row)
    e = [math.exp(v - m) for v in row]
    return [v / sum(e) for v in e]


def _log_softmax_row(row):
    m = max(row)
    lse = m + math.log(sum(math.exp(v - m) for v in row))
    return [v - lse for v in row]


SPECS = [
    OpSpec("relu", F.relu, _kinked(0), _each(lambda v: max(v, 0.0))),
    OpSpec("leaky_relu", F.leaky_relu, _kinked(0), _each(lambda v: v if v > 0 else 0.01 * v)),
    OpSpec("leaky_relu", lambda x: F.leaky_relu(x, negative_slope=0.2), _kinked(0),
           _each(lambda v: v if v > 0 else 0.2 * v)),
    OpSpec("elu", F.elu, rand(4, 6, low=-4, high=4), _each(lambda v: v if v > 0 else math.expm1(v))),
    OpSpec("elu", lambda x: F.elu(x, alpha=1.5), _kinked(0), _each(lambda v: v if v > 0 else 1.5 * math.expm1(v))),
    OpSpec("gelu", F.gelu, rand(5, 8, low=-7, high=7), _each(lambda v: 0.5 * v * math.erfc(-v / math.sqrt(2)))),
    OpSpec("gelu", F.gelu, lambda rng: [numpy.array([-40.0, -9.0, -3.0, -1e-3, 0.0, 1e-3, 2.5, 9.0, 40.0])],
           _each(lambda v: 0.5 * v * math.erfc(-v / math.sqrt(2)))),
    # float64 accuracy of the erf behind exact gelu, across the line and at tiny inputs
    OpSpec("gelu", F.gelu, lambda rng: [numpy.concatenate([numpy.linspace(-12, 12, 241), [1e-12, -1e-9, 1e-300]])],
           _each(lambda v: 0.5 * v * math.erfc(-v / math.sqrt(2))), dtype="float64", atol=1e-15, rtol=1e-13,
           grad=False),
    OpSpec("gelu", lambda x: F.gelu(x, approximate=True), rand(5, 8, low=-6, high=6), _each(_gelu_tanh)),
    OpSpec("sigmoid", F.sigmoid, rand(4, 6, low=-8, high=8), _each(_sigmoid)),
    OpSpec("sigmoid", fw.sigmoid, lambda rng: [numpy.array([-800.0, -30.0, 0.0, 30.0, 800.0])], _each(_sigmoid)),
    OpSpec("tanh", F.tanh, rand(4, 6, low=-3, high=3), _each(math.tanh)),
    OpSpec("softplus", F.softplus, rand(4, 6, low=-6, high=6), _each(lambda v: _softplus(v, 1.0, 20.0))),
    OpSpec("softplus", lambda x: F.softplus(x, beta=2.0, threshold=3.0), _kinked(1.5),
           _each(lambda v: _softplus(v, 2.0, 3.0))),
    OpSpec("silu", F.silu, rand(4, 6, low=-6, high=6), _each(lambda v: v * _sigmoid(v))),
    OpSpec("swish", F.swish, rand(3, 4, low=-6, high=6), _each(lambda v: v * _sigmoid(v))),
    OpSpec("hardswish", F.hardswish, _kinked(-3, 3, low=-5, high=5),
           _each(lambda v: v * min(max(v + 3, 0.0), 6.0) / 6)),
    OpSpec("softmax", F.softmax, rand(3, 5, low=-3, high=3), _rowwise(_softmax_row, -1)),
    OpSpec("softmax", lambda x: F.softmax(x, axis=0), rand(3, 2, 4, low=-3, high=3), _rowwise(_softmax_row, 0)),
    OpSpec("softmax", F.softmax, lambda rng: [rng.uniform(-3, 3, (2, 4)) + 500.0], _rowwise(_softmax_row, -1)),
    OpSpec("log_softmax", F.log_softmax, rand(3, 5, low=-3, high=3), _rowwise(_log_softmax_row, -1)),
    OpSpec("log_softmax", lambda x: F.log_softmax(x, axis=1), rand(2, 3, 4, low=-3, high=3),
           _rowwise(_log_softmax_row, 1)),
    OpSpec("log_softmax", F.log_softmax, lambda rng: [rng.uniform(-3, 3, (2, 4)) * 300.0],
           _rowwise(_log_softmax_row, -1)),
]

