"""Int8: quantise/dequantise error bounds, the calibration observers, converting a model (outputs close to the
float model's, int8 weights on disk, a checkpoint at least 3.8x smaller), loading it back, and the errors."""
import os

import numpy
import pytest

from framework import jit, nn, no_grad, to_tensor
from framework.engine.checkpoint import save_checkpoint
from framework.slim import SlimError, load_compressed, save_compressed
from framework.slim import int8
from framework.slim.quant import KL, AbsMax, Percentile, dequantize_weight, fake_quantize, observer, quantize_weight

from .nets import SmallResNet, randomised

RNG = numpy.random.default_rng(3)


@pytest.mark.parametrize("shape, axis", [((6, 4, 3, 3), 0), ((9, 7), 1), ((5, 11), 0)])
def test_weights_round_within_half_a_step_per_channel(shape, axis):
    w = RNG.normal(size=shape).astype(numpy.float32) * RNG.uniform(0.01, 3, shape[axis]).reshape(
        [-1 if i == axis else 1 for i in range(len(shape))])
    q, scale = quantize_weight(w, axis)
    assert q.dtype == numpy.int8 and scale.shape == (shape[axis],) and numpy.abs(q).max() == 127
    moved = numpy.moveaxis(numpy.abs(w), axis, 0).reshape(shape[axis], -1)
    numpy.testing.assert_allclose(scale, moved.max(axis=1) / 127, rtol=1e-6)
    error = numpy.abs(dequantize_weight(q, scale, axis) - w)
    bound = scale.reshape([-1 if i == axis else 1 for i in range(len(shape))]) / 2
    assert numpy.all(error <= bound * (1 + 1e-5))


def test_a_zero_channel_stays_zero():
    q, scale = quantize_weight(numpy.zeros((2, 3), numpy.float32), 0)
    assert not q.any() and numpy.all(scale == 1.0)


def test_activations_round_to_the_grid_and_clip_outside_it():
    s = numpy.float32(0.05)
    x = RNG.uniform(-8, 8, 1000).astype(numpy.float32)
    y = fake_quantize(x, s)
    inside = numpy.abs(x) <= 127 * s
    assert numpy.all(numpy.abs(y[inside] - x[inside]) <= s / 2 + 1e-7)
    numpy.testing.assert_allclose(numpy.unique(numpy.round(y / s)), numpy.arange(-128, 128)[
        numpy.isin(numpy.arange(-128, 128), numpy.unique(numpy.round(y / s)))])
    assert y.max() == pytest.approx(127 * s) and y.min() == pytest.approx(-128 * s)
    assert fake_quantize(numpy.float32([0.025, 0.075]), s).tolist() == pytest.approx([0.0, 0.1])   # ties to even


def _observed(obs, data):
    for _ in range(obs.passes - 1):
        for x in data:
            obs.observe_range(x)
    for x in data:
        obs.observe(x)
    return obs.scale()


def test_observers_choose_their_thresholds():
    data = [RNG.normal(size=5000).astype(numpy.float32) for _ in range(4)]
    data[0][0] = 40.0                                                       # one outlier
    assert _observed(AbsMax(), data) == pytest.approx(40.0 / 127)
    magnitudes = numpy.abs(numpy.concatenate(data))
    assert _observed(Percentile(99.0), data) * 127 == pytest.approx(numpy.percentile(magnitudes, 99.0), rel=0.02)
    kl = _observed(KL(), data) * 127
    assert 2.0 < kl < 10.0                                       # clips the outlier, keeps the Gaussian body
    with pytest.raises(SlimError, match="quant.activation: unknown calibration method 'minmax'"):
        observer("minmax")


class Tagger(nn.Layer):
    """(N, T) ids -> (N, classes): embedding, mean over time, two linear layers."""

    def __init__(self):
        super().__init__()
        self.embedding = nn.Embedding(50, 16)
        self.fc, self.out = nn.Linear(16, 32), nn.Linear(32, 3)

    def forward(self, ids):
        return self.out(self.fc(self.embedding(ids).mean(axis=1)).tanh())


def _quantised(model, batches, method="abs_max"):
    run = lambda x: model(to_tensor(x))                               # noqa: E731
    return int8.quantize(model, run, batches, method)


def test_a_converted_conv_net_stays_close_and_traces():
    model = randomised(SmallResNet())
    batches = [RNG.normal(size=(4, 3, 10, 10)).astype(numpy.float32) for _ in range(3)]
    with no_grad():
        reference = model(to_tensor(batches[0])).numpy()
    recipe = _quantised(model, batches, "kl")
    assert set(recipe["weights"]) == {"stem.weight", "block1.conv1.weight", "block1.conv2.weight",
                                      "block2.conv1.weight", "block2.conv2.weight", "fc.weight"}
    assert all(site["activation"] for site in recipe["weights"].values())
    assert model.stem.weight_int8.dtype == numpy.int8 and "stem.weight" not in dict(model.named_parameters())
    with no_grad():
        out = model(to_tensor(batches[0])).numpy()
    assert numpy.abs(out - reference).max() < 0.05 * numpy.abs(reference).max()
    program = jit.trace(model, (batches[0],), passes=jit.EXACT_PASSES)
    numpy.testing.assert_array_equal(program(batches[0]), out)


def test_an_int8_checkpoint_loads_back_into_a_fresh_model(tmp_path):
    model = Tagger()
    ids = [RNG.integers(1, 50, (8, 6)) for _ in range(2)]
    save_checkpoint(str(tmp_path / "float32.npz"), model)
    recipe = _quantised(model, ids)
    assert recipe["weights"]["embedding.weight"] == {"axis": 0, "activation": False}
    assert recipe["weights"]["fc.weight"] == {"axis": 1, "activation": True}
    path = str(tmp_path / "int8.npz")
    save_compressed(path, model, {"int8": recipe})
    assert os.path.getsize(path) < os.path.getsize(str(tmp_path / "float32.npz"))   # tiny: the zip headers weigh
    fresh = Tagger()
    load_compressed(fresh, path)
    with no_grad():
        numpy.testing.assert_array_equal(fresh(to_tensor(ids[0])).numpy(), model(to_tensor(ids[0])).numpy())


def test_big_weights_make_the_file_at_least_3_8x_smaller(tmp_path):
    model = nn.Sequential(nn.Linear(256, 512), nn.ReLU(), nn.Linear(512, 256))
    save_checkpoint(str(tmp_path / "float32.npz"), model)
    x = [RNG.normal(size=(4, 256)).astype(numpy.float32)]
    save_compressed(str(tmp_path / "int8.npz"), model, {"int8": _quantised(model, x)})
    assert os.path.getsize(str(tmp_path / "float32.npz")) / os.path.getsize(str(tmp_path / "int8.npz")) >= 3.8


def test_empty_or_foreign_calibration_sets_are_refused():
    with pytest.raises(SlimError, match="quant.calibration: the calibration set is empty"):
        _quantised(Tagger(), [])
    model = nn.Sequential(nn.Linear(4, 4), nn.ReLU(), nn.Linear(4, 2))
    with pytest.raises(SlimError, match="gave only zeros"):
        _quantised(model, [numpy.zeros((3, 4), numpy.float32) - 1.0])       # ReLU zeroes the second input
