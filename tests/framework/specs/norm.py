"""Specs for framework/ops/norm.py: references are the closed forms per channel, sample or group."""
import numpy
import pytest

from framework import OpError, Tensor
from framework.nn import functional as F
from ..opspec import OpSpec


def _standardise(x, axes, eps):
    mean = x.mean(axis=axes, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=axes, keepdims=True)
    return (x - mean) / numpy.sqrt(var + eps)


def batch_norm_reference(x, running_mean, running_var, w, b, training, eps=1e-5):
    """Per channel c: (x - mean_c) / sqrt(var_c + eps) * w_c + b_c."""
    shape = (1, -1) + (1,) * (x.ndim - 2)
    if training:
        xhat = _standardise(x, (0,) + tuple(range(2, x.ndim)), eps)
    else:
        xhat = (x - running_mean.reshape(shape)) / numpy.sqrt(running_var.reshape(shape) + eps)
    return xhat * w.reshape(shape) + b.reshape(shape)


def group_norm_reference(x, groups, w, b, eps=1e-5):
    """Each sample's channels split into ``groups`` consecutive groups, standardised per group."""
    out = numpy.empty_like(x)
    per = x.shape[1] // groups
    for n in range(x.shape[0]):
        for g in range(groups):
            block = x[n, g * per:(g + 1) * per]
            out[n, g * per:(g + 1) * per] = (block - block.mean()) / numpy.sqrt(block.var() + eps)
    shape = (1, -1) + (1,) * (x.ndim - 2)
    return out * w.reshape(shape) + b.reshape(shape)


def normalize_reference(x, p, axis, eps=1e-12):
    norm = (numpy.abs(x) ** p).sum(axis=axis, keepdims=True) ** (1 / p)
    return x / numpy.maximum(norm, eps)


def _batch_norm(training):
    """batch_norm on private copies of the running stats (the op updates them in place)."""
    def fn(x, running_mean, running_var, w, b):
        return F.batch_norm(x, Tensor(running_mean.data.copy()), Tensor(running_var.data.copy()), w, b,
                            training=training)
    return fn


def _bn_inputs(shape):
    channels = shape[1]
    return lambda rng: [rng.uniform(-1, 1, shape) * 2 + 0.5, rng.uniform(-0.5, 0.5, channels),
                        rng.uniform(0.5, 2, channels), rng.uniform(0.5, 1.5, channels),
                        rng.uniform(-1, 1, channels)]


def _affine_inputs(shape, param_shape):
    return lambda rng: [rng.uniform(-1, 1, shape), rng.uniform(0.5, 1.5, param_shape),
                        rng.uniform(-1, 1, param_shape)]


def _rejects_bad_input(outs, arrays):
    """Mismatched running stats or affine parameters, bad groups or shapes: one OpError naming the op."""
    x, c3, c4 = (Tensor(numpy.zeros(shape, numpy.float32)) for shape in ((2, 3, 4), (3,), (4,)))
    bad_calls = [("batch_norm", lambda: F.batch_norm(x, c4, c4)),
                 ("batch_norm", lambda: F.batch_norm(x, None, None, training=False)),
                 ("batch_norm", lambda: F.batch_norm(x, c3, c3, weight=c4)),
                 ("batch_norm", lambda: F.batch_norm(Tensor(numpy.zeros((1, 3), numpy.float32)), c3, c3,
                                                     training=True)),
                 ("layer_norm", lambda: F.layer_norm(x, 3)),
                 ("group_norm", lambda: F.group_norm(x, 2)),
                 ("normalize", lambda: F.normalize(x, axis=3))]
    for op, call in bad_calls:
        with pytest.raises(OpError, match=op):
            call()

SPECS = [
    OpSpec("batch_norm", _batch_norm(True), _bn_inputs((4, 3, 2, 3)),
           lambda x, m, v, w, b: batch_norm_reference(x, m, v, w, b, True), wrt=[0, 3, 4]),
    OpSpec("batch_norm", _batch_norm(True), _bn_inputs((6, 4)),
           lambda x, m, v, w, b: batch_norm_reference(x, m, v, w, b, True), wrt=[0, 3, 4]),
    OpSpec("batch_norm", _batch_norm(True), _bn_inputs((2, 2, 3, 2, 2)),
           lambda x, m, v, w, b: batch_norm_reference(x, m, v, w, b, True), wrt=[0, 3, 4]),
    OpSpec("batch_norm", _batch_norm(False), _bn_inputs((3, 3, 4)),
           lambda x, m, v, w, b: batch_norm_reference(x, m, v, w, b, False), wrt=[0, 3, 4],
           check=_rejects_bad_input),
    OpSpec("batch_norm", lambda x: F.batch_norm(x, None, None, training=True), lambda rng: [rng.normal(size=(5, 2, 3))],
           lambda x: batch_norm_reference(x, None, None, numpy.ones(2), numpy.zeros(2), True)),
    OpSpec("layer_norm", lambda x, w, b: F.layer_norm(x, 5, w, b), _affine_inputs((3, 4, 5), (5,)),
           lambda x, w, b: _standardise(x, (-1,), 1e-5) * w + b),
    OpSpec("layer_norm", lambda x, w, b: F.layer_norm(x, (3, 4), w, b, epsilon=1e-3), _affine_inputs((2, 3, 4), (3, 4)),
           lambda x, w, b: _standardise(x, (-2, -1), 1e-3) * w + b),
    OpSpec("layer_norm", lambda x: F.layer_norm(x, [6]), lambda rng: [rng.uniform(-1, 1, (4, 6))],
           lambda x: _standardise(x, (-1,), 1e-5)),
    OpSpec("group_norm", lambda x, w, b: F.group_norm(x, 2, w, b), _affine_inputs((2, 4, 3, 2), (4,)),
           lambda x, w, b: group_norm_reference(x, 2, w, b)),
    OpSpec("group_norm", lambda x, w, b: F.group_norm(x, 3, w, b), _affine_inputs((3, 6, 4), (6,)),
           lambda x, w, b: group_norm_reference(x, 3, w, b)),
    OpSpec("channel_affine", F.channel_affine, _affine_inputs((2, 3, 4, 2), (3,)),
           lambda x, s, b: x * s.reshape(1, 3, 1, 1) + b.reshape(1, 3, 1, 1)),
    OpSpec("channel_affine", lambda x, s, b: F.channel_affine(x, s, b, relu=True), _affine_inputs((3, 2, 5), (2,)),
           lambda x, s, b: numpy.maximum(x * s.reshape(1, 2, 1) + b.reshape(1, 2, 1), 0)),
    OpSpec("normalize", F.normalize, lambda rng: [rng.uniform(-1, 1, (3, 4, 2))],
           lambda x: normalize_reference(x, 2, 1)),
    OpSpec("normalize", lambda x: F.normalize(x, p=1, axis=-1), lambda rng: [rng.uniform(0.1, 1, (3, 5))],
           lambda x: normalize_reference(x, 1, -1)),
    OpSpec("normalize", lambda x: F.normalize(x, p=3, axis=0), lambda rng: [rng.uniform(-1, 1, (4, 3))],
           lambda x: normalize_reference(x, 3, 0)),
]
