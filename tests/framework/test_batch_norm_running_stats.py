"""batch_norm updates its running statistics in place by Paddle's rule, and eval mode uses them."""
import numpy

from framework import Tensor
from framework.nn import functional as F
from framework.testing import assert_allclose


def test_training_updates_running_stats_by_momentum_rule():
    rng = numpy.random.default_rng(0)
    x = rng.normal(1.0, 2.0, (8, 3, 4, 5)).astype(numpy.float32)
    mean0 = rng.uniform(-1, 1, 3).astype(numpy.float32)
    var0 = rng.uniform(0.5, 2, 3).astype(numpy.float32)
    running_mean, running_var = Tensor(mean0.copy()), Tensor(var0.copy())
    F.batch_norm(Tensor(x), running_mean, running_var, training=True, momentum=0.8)
    per_channel = x.transpose(1, 0, 2, 3).reshape(3, -1).astype(numpy.float64)
    count = per_channel.shape[1]
    batch_mean = per_channel.sum(axis=1) / count
    unbiased_var = ((per_channel - batch_mean[:, None]) ** 2).sum(axis=1) / (count - 1)
    assert_allclose(running_mean, 0.8 * mean0 + 0.2 * batch_mean, rtol=1e-5, atol=1e-6)
    assert_allclose(running_var, 0.8 * var0 + 0.2 * unbiased_var, rtol=1e-5, atol=1e-6)
    assert running_mean.dtype == numpy.float32 and running_var.dtype == numpy.float32


def test_eval_mode_uses_and_keeps_running_stats():
    rng = numpy.random.default_rng(1)
    x = rng.normal(size=(4, 2, 3)).astype(numpy.float32)
    mean0, var0 = numpy.array([0.5, -1.0], numpy.float32), numpy.array([2.0, 0.25], numpy.float32)
    running_mean, running_var = Tensor(mean0.copy()), Tensor(var0.copy())
    y = F.batch_norm(Tensor(x), running_mean, running_var, training=False, epsilon=0.0)
    assert_allclose(y, (x - mean0[None, :, None]) / numpy.sqrt(var0)[None, :, None], rtol=1e-5, atol=1e-6)
    assert_allclose(running_mean, mean0, rtol=0, atol=0)
    assert_allclose(running_var, var0, rtol=0, atol=0)


def test_repeated_training_steps_converge_to_the_batch_stats():
    x = numpy.arange(24, dtype=numpy.float64).reshape(6, 4)
    running_mean, running_var = Tensor(numpy.zeros(4)), Tensor(numpy.ones(4))
    for _ in range(200):
        F.batch_norm(Tensor(x), running_mean, running_var, training=True, momentum=0.9)
    assert_allclose(running_mean, x.mean(axis=0), rtol=1e-6, atol=1e-6)
    assert_allclose(running_var, x.var(axis=0, ddof=1), rtol=1e-6, atol=1e-6)
