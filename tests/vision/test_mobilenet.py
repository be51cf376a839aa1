"""MobileNet V1/V2: parameter counts, torchvision names for V2, width multipliers, feature extraction."""
import numpy
import pytest

import framework
from vision.models import MobileNetV1, MobileNetV2, make_divisible, mobilenet_v1, mobilenet_v2


def _count(model):
    return sum(p.size for p in model.parameters())


def test_parameter_counts_at_1000_classes():
    assert _count(mobilenet_v2()) == 3_504_872  # torchvision
    assert _count(mobilenet_v1()) == 4_231_976  # Keras MobileNet(alpha=1.0), trainable parameters


def test_mobilenet_v1_width_multiplier():
    model = MobileNetV1(num_classes=10, scale=0.25)
    assert model.num_features == 256 and model.features[0][0].weight.shape == (8, 3, 3, 3)
    # depthwise convolutions have one input channel per group
    assert model.features[1][0][0].weight.shape == (8, 1, 3, 3)
    assert model.features[1][1][0].weight.shape == (16, 8, 1, 1)
    # Table 1 by hand at scale 0.5: stem conv + BN, then per block depthwise 3x3 + BN + pointwise + BN, then fc
    widths = [16, 32, 64, 64, 128, 128, 256, 256, 256, 256, 256, 256, 512, 512]
    blocks = sum(9 * c + 2 * c + c * out + 2 * out for c, out in zip(widths, widths[1:]))
    assert _count(MobileNetV1(num_classes=1000, scale=0.5)) == 27 * 16 + 2 * 16 + blocks + 512 * 1000 + 1000


def test_mobilenet_v2_torchvision_names():
    state = mobilenet_v2().state_dict()
    names = list(state)
    assert names[:5] == ["features.0.0.weight", "features.0.1.weight", "features.0.1.bias",
                         "features.0.1.running_mean", "features.0.1.running_var"]
    assert names[5:7] == ["features.1.conv.0.0.weight", "features.1.conv.0.1.weight"]
    assert names[-2:] == ["classifier.1.weight", "classifier.1.bias"]
    assert tuple(state["features.1.conv.1.weight"].shape) == (16, 32, 1, 1)  # t=1: no expansion layer
    assert tuple(state["features.2.conv.0.0.weight"].shape) == (96, 16, 1, 1)
    assert tuple(state["features.2.conv.1.0.weight"].shape) == (96, 1, 3, 3)
    assert tuple(state["features.18.0.weight"].shape) == (1280, 320, 1, 1)
    assert tuple(state["classifier.1.weight"].shape) == (1000, 1280)
    assert len(state) == 314 - 52  # torchvision's entries without the 52 num_batches_tracked


def test_make_divisible_matches_torchvision():
    assert [make_divisible(c * 0.35) for c in (32, 16, 24, 64, 320)] == [16, 8, 8, 24, 112]
    assert make_divisible(1280 * 1.4) == 1792


def test_feature_extractors_and_shapes():
    x = framework.to_tensor(numpy.random.default_rng(0).standard_normal((2, 3, 64, 64)).astype("float32"))
    v2 = MobileNetV2(num_classes=0, width_mult=0.25).eval()
    assert v2.forward_features(x).shape == (2, 1280, 2, 2) and v2(x).shape == (2, 1280)
    v1 = MobileNetV1(num_classes=0, scale=0.25).eval()
    assert v1.forward_features(x).shape == (2, 256, 2, 2) and v1(x).shape == (2, 256)
    with pytest.raises(ValueError, match=r"\(N, 3, H, W\)"):
        v2(framework.to_tensor(numpy.zeros((2, 3, 8), "float32")))
