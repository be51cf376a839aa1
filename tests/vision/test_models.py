"""Every registered vision model, built small: forward shape, a gradient on every parameter, no NaN,
save/load round trip, and config-key checking."""
import numpy
import pytest

import framework
import framework.nn.functional as F
from framework.config import ConfigError
from framework.registry import MODELS
from vision.models import load_pretrained

SMALL = {  # the arguments that make each registered vision model small
    "ResNet": {"block": "bottleneck", "layers": [1, 2, 1, 1], "base_channels": 4},
    "resnet18": {"base_channels": 4}, "resnet34": {"base_channels": 4},
    "resnet50": {"base_channels": 4}, "resnet101": {"base_channels": 2},
    "mobilenet_v1": {"scale": 0.25}, "mobilenet_v2": {"width_mult": 0.25},
}
VISION_MODELS = sorted(n for n in MODELS.names() if MODELS.get(n).__module__.startswith("vision."))


def test_every_vision_model_has_a_small_configuration():
    assert sorted(SMALL) == VISION_MODELS


@pytest.mark.parametrize("name", VISION_MODELS)
def test_forward_backward_and_round_trip(name, tmp_path):
    framework.seed(0)
    model = MODELS.build({"type": name, "num_classes": 7, **SMALL[name]})
    x = framework.to_tensor(numpy.random.default_rng(0).standard_normal((2, 3, 32, 32)).astype("float32"))
    logits = model(x)
    assert logits.shape == (2, 7)
    F.cross_entropy(logits, framework.to_tensor(numpy.array([1, 5]))).backward()
    for key, p in model.named_parameters():
        assert p.grad is not None, key
        assert numpy.isfinite(p.grad.numpy()).all(), key
    assert numpy.isfinite(logits.numpy()).all()
    path = tmp_path / "weights.npz"
    framework.save(model.state_dict(), str(path))
    model.eval()
    copy = MODELS.build({"type": name, "num_classes": 7, **SMALL[name]}).eval()
    load_pretrained(copy, str(path))
    with framework.no_grad():
        numpy.testing.assert_array_equal(copy(x).numpy(), model(x).numpy())


def test_unknown_config_keys_are_named():
    with pytest.raises(ConfigError, match="depth"):
        MODELS.build({"type": "resnet50", "depth": 50})
    with pytest.raises(ConfigError, match="layers"):
        MODELS.build({"type": "resnet18", "layers": [1, 1, 1, 1]})  # fixed by the variant
