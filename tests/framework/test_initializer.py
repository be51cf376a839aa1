"""Initializers: fans, gains, statistics of large draws, dtypes and reproducibility."""
import math

import numpy
import pytest

import framework
from framework import nn
from framework.nn import initializer as I

SHAPE = (400, 500)  # 200k draws: the sample std is within ~0.3 % of the true one


def draw(initializer, shape=SHAPE, dtype="float64"):
    return initializer(shape, dtype, numpy)


@pytest.mark.parametrize("shape, fans", [
    ((), (1, 1)),
    ((7,), (7, 7)),
    ((10, 5), (10, 5)),                        # Linear weight (in, out)
    ((64, 3, 7, 7), (3 * 49, 64 * 49)),        # Conv2D weight (out, in, kh, kw)
    ((8, 2, 3), (2 * 3, 8 * 3)),               # Conv1D weight
    ((4, 2, 3, 3, 3), (2 * 27, 4 * 27)),       # Conv3D weight
])
def test_fans_follow_the_weight_layouts(shape, fans):
    assert I.calculate_fan_in_fan_out(shape) == fans


def test_gains():
    assert I.calculate_gain("linear") == 1.0
    assert I.calculate_gain("conv2d") == 1.0
    assert I.calculate_gain("tanh") == pytest.approx(5 / 3)
    assert I.calculate_gain("relu") == pytest.approx(math.sqrt(2))
    assert I.calculate_gain("leaky_relu", 0.2) == pytest.approx(math.sqrt(2 / 1.04))
    with pytest.raises(ValueError, match="softsign"):
        I.calculate_gain("softsign")


def test_constant_and_assign():
    numpy.testing.assert_array_equal(draw(I.Constant(0.5), (2, 3)), numpy.full((2, 3), 0.5))
    value = numpy.arange(6.0).reshape(2, 3)
    numpy.testing.assert_array_equal(draw(I.Assign(value), (2, 3), "float32"), value.astype("float32"))
    with pytest.raises(ValueError, match=r"\(2, 3\).*\(3, 2\)"):
        draw(I.Assign(value), (3, 2))


def test_uniform_bounds_and_moments():
    x = draw(I.Uniform(-0.5, 1.5))
    assert x.min() >= -0.5 and x.max() < 1.5
    assert x.mean() == pytest.approx(0.5, abs=0.01)
    assert x.std() == pytest.approx(2 / math.sqrt(12), rel=0.01)
    with pytest.raises(ValueError):
        I.Uniform(1.0, 0.0)


def test_normal_moments():
    x = draw(I.Normal(mean=2.0, std=0.3))
    assert x.mean() == pytest.approx(2.0, abs=0.003)
    assert x.std() == pytest.approx(0.3, rel=0.01)


def test_truncated_normal_stays_within_two_std():
    x = draw(I.TruncatedNormal(mean=1.0, std=0.5))
    assert x.min() >= 0.0 and x.max() <= 2.0
    assert x.mean() == pytest.approx(1.0, abs=0.005)
    # std of N(0, 1) truncated to [-2, 2]: sqrt(1 - 2 * 2 * phi(2) / (2 * Phi(2) - 1))
    phi2 = math.exp(-2.0) / math.sqrt(2 * math.pi)
    mass = math.erf(2 / math.sqrt(2))
    assert x.std() == pytest.approx(0.5 * math.sqrt(1 - 4 * phi2 / mass), rel=0.01)


@pytest.mark.parametrize("shape", [(300, 700), (96, 48, 3, 3)])
def test_xavier(shape):
    fan_in, fan_out = I.calculate_fan_in_fan_out(shape)
    limit = math.sqrt(6 / (fan_in + fan_out))
    u = draw(I.XavierUniform(), shape)
    assert u.max() <= limit and u.min() >= -limit and u.max() > 0.99 * limit
    assert u.std() == pytest.approx(limit / math.sqrt(3), rel=0.01)
    n = draw(I.XavierNormal(), shape)
    assert n.std() == pytest.approx(math.sqrt(2 / (fan_in + fan_out)), rel=0.01)
    assert draw(I.XavierUniform(fan_in=10, fan_out=20), shape).max() <= math.sqrt(6 / 30)


@pytest.mark.parametrize("shape", [(300, 700), (96, 48, 3, 3)])
def test_kaiming(shape):
    fan_in = I.calculate_fan_in_fan_out(shape)[0]
    u = draw(I.KaimingUniform(), shape)
    limit = math.sqrt(6 / fan_in)  # gain sqrt(2) * sqrt(3 / fan_in)
    assert u.max() <= limit and u.min() >= -limit and u.max() > 0.99 * limit
    assert draw(I.KaimingNormal(), shape).std() == pytest.approx(math.sqrt(2 / fan_in), rel=0.01)
    leaky = draw(I.KaimingNormal(negative_slope=0.2, nonlinearity="leaky_relu"), shape)
    assert leaky.std() == pytest.approx(math.sqrt(2 / 1.04 / fan_in), rel=0.01)
    assert draw(I.KaimingNormal(fan_in=50), shape).std() == pytest.approx(math.sqrt(2 / 50), rel=0.01)


@pytest.mark.parametrize("initializer", [I.Uniform(), I.Normal(), I.TruncatedNormal(), I.XavierUniform(),
                                         I.XavierNormal(), I.KaimingUniform(), I.KaimingNormal(),
                                         I.Constant(1.0)], ids=repr)
def test_dtype_shape_and_reproducibility(initializer):
    framework.seed(7)
    a = initializer((3, 4), "float32", numpy)
    framework.seed(7)
    b = initializer((3, 4), "float64", numpy)
    assert a.shape == (3, 4) and a.dtype == numpy.float32 and b.dtype == numpy.float64
    numpy.testing.assert_array_equal(a, b.astype(numpy.float32))


def test_different_seeds_give_different_draws():
    framework.seed(1)
    a = draw(I.Normal(), (5,))
    framework.seed(2)
    assert not numpy.array_equal(a, draw(I.Normal(), (5,)))


def test_seed_makes_a_model_reproducible():
    def build():
        framework.seed(11)
        return nn.Sequential(nn.Linear(4, 8), nn.Conv1D(2, 3, 3))

    first, second = build(), build()
    for (name, p), (_, q) in zip(first.named_parameters(), second.named_parameters()):
        numpy.testing.assert_array_equal(p.numpy(), q.numpy(), err_msg=name)
