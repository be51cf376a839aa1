"""Layers: parameter counts, output shapes, values against NumPy, default initialisation,
train/eval behaviour, gradients reaching every parameter, and input errors."""
import math

import numpy
import pytest

import framework
from framework import nn


def randn(*shape, seed=0, dtype="float32"):
    return framework.to_tensor(numpy.random.default_rng(seed).standard_normal(shape).astype(dtype))


def count(layer):
    return sum(p.size for p in layer.parameters())


@pytest.mark.parametrize("layer, n_params", [
    (nn.Linear(10, 5), 55),
    (nn.Linear(10, 5, bias_attr=False), 50),
    (nn.Conv2D(3, 64, 7), 9408 + 64),
    (nn.Conv2D(8, 16, 3, groups=4, bias_attr=False), 16 * 2 * 9),
    (nn.Conv1D(4, 6, 5), 6 * 4 * 5 + 6),
    (nn.Conv3D(2, 4, (1, 3, 3)), 4 * 2 * 9 + 4),
    (nn.BatchNorm2D(8), 16),
    (nn.LayerNorm([4, 5]), 40),
    (nn.Embedding(100, 16, padding_idx=0), 1600),
    (nn.ReLU(), 0),
])
def test_parameter_counts(layer, n_params):
    assert count(layer) == n_params


def test_parameter_shapes_follow_paddle():
    assert nn.Linear(10, 5).weight.shape == (10, 5)
    assert nn.Conv2D(8, 16, (3, 5), groups=2).weight.shape == (16, 4, 3, 5)
    bn = nn.BatchNorm2D(8)
    assert [(n, t.shape) for n, t in bn.state_dict().items()] == [
        ("weight", (8,)), ("bias", (8,)), ("running_mean", (8,)), ("running_var", (8,))]
    assert sum(b.size for b in bn.buffers()) == 16


def test_default_initialisation():
    framework.seed(0)
    linear = nn.Linear(200, 300)
    limit = math.sqrt(6 / 500)
    assert numpy.abs(linear.weight.numpy()).max() <= limit
    assert linear.weight.numpy().std() == pytest.approx(limit / math.sqrt(3), rel=0.03)
    assert not linear.bias.numpy().any()
    conv = nn.Conv2D(32, 64, 3)
    assert conv.weight.numpy().std() == pytest.approx(math.sqrt(2 / (32 * 9)), rel=0.03)
    assert not conv.bias.numpy().any()
    bn = nn.BatchNorm1D(4)
    numpy.testing.assert_array_equal(bn.weight.numpy(), numpy.ones(4, "float32"))
    numpy.testing.assert_array_equal(bn.running_var.numpy(), numpy.ones(4, "float32"))
    assert not bn.bias.numpy().any() and not bn.running_mean.numpy().any()


def test_linear_values():
    layer = nn.Linear(4, 3)
    x = randn(2, 5, 4)
    expected = x.numpy() @ layer.weight.numpy() + layer.bias.numpy()
    out = layer(x)
    assert out.shape == (2, 5, 3)
    numpy.testing.assert_allclose(out.numpy(), expected, rtol=1e-5, atol=1e-6)


def test_conv_shapes():
    assert nn.Conv1D(4, 6, 3, padding=1)(randn(2, 4, 9)).shape == (2, 6, 9)
    assert nn.Conv2D(3, 64, 7, stride=2, padding=3)(randn(1, 3, 32, 32)).shape == (1, 64, 16, 16)
    assert nn.Conv2D(4, 8, 3, dilation=2, groups=2)(randn(2, 4, 9, 9)).shape == (2, 8, 5, 5)
    assert nn.Conv3D(2, 4, (1, 3, 3), padding=(0, 1, 1))(randn(1, 2, 3, 5, 5)).shape == (1, 4, 3, 5, 5)


def test_conv_values_match_a_loop():
    layer = nn.Conv2D(2, 3, 2)
    x = randn(1, 2, 3, 3)
    w, b = layer.weight.numpy(), layer.bias.numpy()
    expected = numpy.zeros((1, 3, 2, 2))
    for o in range(3):
        for i in range(2):
            for j in range(2):
                expected[0, o, i, j] = (x.numpy()[0, :, i:i + 2, j:j + 2] * w[o]).sum() + b[o]
    numpy.testing.assert_allclose(layer(x).numpy(), expected, rtol=1e-5, atol=1e-5)


def test_pooling_and_flatten_shapes():
    x = randn(2, 3, 8, 8)
    assert nn.MaxPool2D(2)(x).shape == (2, 3, 4, 4)
    assert nn.MaxPool2D(3, stride=2, padding=1)(x).shape == (2, 3, 4, 4)
    assert nn.AvgPool2D(2, stride=2)(x).shape == (2, 3, 4, 4)
    assert nn.AdaptiveAvgPool2D(1)(x).shape == (2, 3, 1, 1)
    assert nn.AdaptiveAvgPool2D((2, 4))(x).shape == (2, 3, 2, 4)
    assert nn.Flatten()(x).shape == (2, 192)
    assert nn.Flatten(start_axis=2)(x).shape == (2, 3, 64)
    v = randn(2, 3, 4, 6, 6)
    assert nn.MaxPool3D(2)(v).shape == (2, 3, 2, 3, 3)
    assert nn.AvgPool3D((1, 2, 2))(v).shape == (2, 3, 4, 3, 3)
    assert nn.AdaptiveAvgPool3D(1)(v).shape == (2, 3, 1, 1, 1)
    assert nn.AdaptiveAvgPool1D(2)(randn(2, 3, 8)).shape == (2, 3, 2)


def test_pooling_values():
    x = randn(1, 2, 4, 4)
    blocks = x.numpy().reshape(1, 2, 2, 2, 2, 2)
    numpy.testing.assert_allclose(nn.MaxPool2D(2)(x).numpy(), blocks.max(axis=(3, 5)), rtol=1e-6)
    numpy.testing.assert_allclose(nn.AvgPool2D(2)(x).numpy(), blocks.mean(axis=(3, 5)), rtol=1e-5, atol=1e-6)
    numpy.testing.assert_allclose(nn.AdaptiveAvgPool2D(1)(x).numpy(), x.numpy().mean(axis=(2, 3), keepdims=True),
                                  rtol=1e-5, atol=1e-6)


def test_activation_layers():
    x = randn(3, 4)
    a = x.numpy().astype("float64")
    cases = [(nn.ReLU(), numpy.maximum(a, 0)),
             (nn.LeakyReLU(0.1), numpy.where(a > 0, a, 0.1 * a)),
             (nn.Sigmoid(), 1 / (1 + numpy.exp(-a))),
             (nn.Tanh(), numpy.tanh(a)),
             (nn.GELU(), 0.5 * a * (1 + numpy.vectorize(math.erf)(a / math.sqrt(2)))),
             (nn.Softmax(axis=0), numpy.exp(a) / numpy.exp(a).sum(axis=0, keepdims=True)),
             (nn.Identity(), a)]
    for layer, expected in cases:
        numpy.testing.assert_allclose(layer(x).numpy(), expected, rtol=1e-5, atol=1e-6,
                                      err_msg=type(layer).__name__)
    assert repr(nn.LeakyReLU(0.1)) == "LeakyReLU(negative_slope=0.1)"


def test_embedding_and_padding_idx():
    layer = nn.Embedding(10, 4, padding_idx=-1)
    assert layer.padding_idx == 9
    ids = framework.to_tensor(numpy.array([[1, 9], [3, 1]], dtype="int64"))
    out = layer(ids)
    assert out.shape == (2, 2, 4)
    numpy.testing.assert_array_equal(out.numpy()[0, 0], layer.weight.numpy()[1])
    assert not out.numpy()[0, 1].any()
    out.sum().backward()
    assert not layer.weight.grad.numpy()[9].any() and layer.weight.grad.numpy()[1].sum() == 8
    with pytest.raises(ValueError, match="padding_idx 10"):
        nn.Embedding(10, 4, padding_idx=10)


def test_layer_norm_values():
    layer = nn.LayerNorm(6)
    x = randn(2, 3, 6)
    a = x.numpy().astype("float64")
    expected = (a - a.mean(-1, keepdims=True)) / numpy.sqrt(a.var(-1, keepdims=True) + 1e-5)
    numpy.testing.assert_allclose(layer(x).numpy(), expected, rtol=1e-4, atol=1e-5)


def test_dropout_depends_on_mode():
    layer = nn.Dropout(0.5)
    x = framework.to_tensor(numpy.ones((100, 100), "float32"))
    framework.seed(0)
    y = layer(x).numpy()
    assert set(numpy.unique(y)) == {0.0, 2.0}
    assert 0.4 < (y == 0).mean() < 0.6
    numpy.testing.assert_array_equal(layer.eval()(x).numpy(), x.numpy())
    with pytest.raises(ValueError, match="1.5"):
        nn.Dropout(1.5)


def test_batch_norm_train_and_eval():
    bn = nn.BatchNorm2D(3, momentum=0.9)
    x = randn(4, 3, 5, 5) * 2.0 + 1.0
    a = x.numpy().astype("float64")
    mean, var = a.mean(axis=(0, 2, 3)), a.var(axis=(0, 2, 3))
    out = bn(x).numpy()
    normalised = (a - mean.reshape(1, 3, 1, 1)) / numpy.sqrt(var.reshape(1, 3, 1, 1) + 1e-5)
    numpy.testing.assert_allclose(out, normalised, rtol=1e-4, atol=1e-4)
    numpy.testing.assert_allclose(bn.running_mean.numpy(), 0.1 * mean, rtol=1e-4, atol=1e-6)
    assert not numpy.allclose(bn.running_var.numpy(), 1.0)
    bn.eval()
    running_mean, running_var = bn.running_mean.numpy().copy(), bn.running_var.numpy().copy()
    expected = (a - running_mean.reshape(1, 3, 1, 1)) / numpy.sqrt(running_var.reshape(1, 3, 1, 1) + 1e-5)
    numpy.testing.assert_allclose(bn(x).numpy(), expected, rtol=1e-4, atol=1e-4)
    numpy.testing.assert_array_equal(bn.running_mean.numpy(), running_mean)  # eval does not update


def test_batch_norm_1d_and_3d_shapes():
    assert nn.BatchNorm1D(4)(randn(8, 4)).shape == (8, 4)
    assert nn.BatchNorm1D(4)(randn(8, 4, 3)).shape == (8, 4, 3)
    assert nn.BatchNorm3D(2)(randn(2, 2, 3, 3, 3)).shape == (2, 2, 3, 3, 3)


def test_bad_inputs_name_the_layer_and_shape():
    with pytest.raises(ValueError, match=r"BatchNorm2D.*\(N, C, H, W\).*\(4, 3\)"):
        nn.BatchNorm2D(3)(randn(4, 3))
    with pytest.raises(ValueError, match=r"BatchNorm1D: expected 4 channels.*\(2, 5\)"):
        nn.BatchNorm1D(4)(randn(2, 5))
    with pytest.raises(ValueError, match=r"MaxPool2D.*\(2, 3, 4\)"):
        nn.MaxPool2D(2)(randn(2, 3, 4))
    with pytest.raises(ValueError, match="groups=3"):
        nn.Conv2D(4, 6, 3, groups=3)
    with pytest.raises(ValueError, match="kernel_size"):
        nn.Conv2D(4, 6, (3, 3, 3))
    with pytest.raises(ValueError, match=r"linear.*\(2, 4\)"):
        nn.Linear(3, 2)(randn(2, 4))


def test_gradients_reach_every_parameter():
    model = nn.Sequential(nn.Conv2D(2, 4, 3, padding=1), nn.BatchNorm2D(4), nn.ReLU(), nn.MaxPool2D(2),
                          nn.Conv2D(4, 4, 3, groups=2), nn.AdaptiveAvgPool2D(1), nn.Flatten(),
                          nn.Linear(4, 8), nn.LayerNorm(8), nn.GELU(), nn.Dropout(0.1), nn.Linear(8, 3))
    model(randn(3, 2, 8, 8)).sum().backward()
    for name, p in model.named_parameters():
        assert p.grad is not None and p.grad.shape == p.shape, name
        assert numpy.isfinite(p.grad.numpy()).all() and numpy.abs(p.grad.numpy()).sum() > 0, name
    assert all(b.grad is None for b in model.buffers())


def test_state_dict_round_trip_of_a_conv_net():
    def net():
        return nn.Sequential(nn.Conv2D(3, 4, 3), nn.BatchNorm2D(4), nn.ReLU(), nn.Flatten(), nn.Linear(64, 2))

    framework.seed(0)
    source = net()
    source(randn(2, 3, 6, 6))  # training step moves the running statistics
    source.eval()
    framework.seed(1)
    target = net().eval()
    assert list(target.state_dict()) == ["0.weight", "0.bias", "1.weight", "1.bias", "1.running_mean",
                                         "1.running_var", "4.weight", "4.bias"]
    target.set_state_dict({k: v.numpy() for k, v in source.state_dict().items()})
    x = randn(2, 3, 6, 6, seed=5)
    numpy.testing.assert_array_equal(target(x).numpy(), source(x).numpy())
