"""TSN's motion stream (cross-modality initialisation) and the two-stream fusion (video.models)."""
import numpy
import pytest

import framework
from framework.config import ConfigError
from video.models import TSN, TwoStreamTSN
from video.models.tsn import cross_modality_conv1
from video.models.two_stream import fuse_states

SMALL = {"num_classes": 5, "depth": 10, "base_channels": 8, "num_segments": 2}


def test_cross_modality_conv1_averages_colour_and_repeats_it():
    weight = numpy.arange(2 * 3 * 1 * 2, dtype=numpy.float32).reshape(2, 3, 1, 2)
    out = cross_modality_conv1(weight, 4)
    assert out.shape == (2, 4, 1, 2)
    expected = weight.astype(numpy.float64).mean(axis=1)            # (2, 1, 2)
    for channel in range(4):
        assert numpy.allclose(out[:, channel], expected)


def test_flow_network_starts_from_the_rgb_network(tmp_path):
    framework.seed(0)
    rgb = TSN(**SMALL)
    path = str(tmp_path / "rgb.npz")
    framework.save({"model": rgb.state_dict()}, path)
    flow = TSN(**SMALL, in_channels=10, pretrained=path)
    rgb_conv1 = rgb.backbone.conv1.weight.numpy()
    assert flow.backbone.conv1.weight.shape == (8, 10, 7, 7)
    assert numpy.allclose(flow.backbone.conv1.weight.numpy(),
                          numpy.repeat(rgb_conv1.mean(axis=1, keepdims=True), 10, axis=1), atol=1e-6)
    assert numpy.array_equal(flow.backbone.layer1[0].conv1.weight.numpy(), rgb.backbone.layer1[0].conv1.weight.numpy())
    rgbdiff = TSN(**SMALL, in_channels=6, pretrained=path)          # 3k channels: also cross-modality, not tiled / k
    assert numpy.allclose(rgbdiff.backbone.conv1.weight.numpy()[:, 5], rgb_conv1.mean(axis=1), atol=1e-6)


def test_a_motion_network_with_colour_keeps_the_rgb_conv1_there(tmp_path):
    framework.seed(0)
    rgb = TSN(**SMALL)
    path = str(tmp_path / "rgb.npz")
    framework.save({"model": rgb.state_dict()}, path)
    fused = TSN(**SMALL, in_channels=9, colour_channels=3, pretrained=path)
    rgb_conv1, conv1 = rgb.backbone.conv1.weight.numpy(), fused.backbone.conv1.weight.numpy()
    assert numpy.array_equal(conv1[:, :3], rgb_conv1)
    assert numpy.allclose(conv1[:, 3:], numpy.repeat(rgb_conv1.mean(axis=1, keepdims=True), 6, axis=1), atol=1e-6)
    with pytest.raises(ValueError, match="colour_channels"):
        TSN(**SMALL, colour_channels=3)                            # no motion stack after the colour


def test_a_motion_network_with_colour_sees_the_whole_input():
    framework.seed(0)
    model = TwoStreamTSN(rgb=SMALL, motion={**SMALL, "in_channels": 7, "colour_channels": 3}, fusion=[1.0, 1.5])
    model.eval()
    x = numpy.random.default_rng(0).standard_normal((2, 2, 7, 32, 32)).astype(numpy.float32)
    with framework.no_grad():
        fused = model(framework.to_tensor(x)).numpy()
        rgb = model.rgb(framework.to_tensor(x[:, :, :3])).numpy()
        motion = model.motion(framework.to_tensor(x)).numpy()
        streams = [scores.numpy() for scores in model.stream_scores(framework.to_tensor(x))]
    assert numpy.allclose(fused, (1.0 * rgb + 1.5 * motion) / 2.5, atol=1e-5)
    assert numpy.array_equal(streams[0], rgb) and numpy.array_equal(streams[1], motion)


def test_two_stream_scores_are_the_weighted_average_of_the_streams():
    framework.seed(0)
    model = TwoStreamTSN(rgb=SMALL, motion={**SMALL, "in_channels": 4}, fusion=[1.0, 1.5])
    model.eval()
    x = numpy.random.default_rng(0).standard_normal((2, 2, 7, 32, 32)).astype(numpy.float32)
    with framework.no_grad():
        fused = model(framework.to_tensor(x)).numpy()
        rgb = model.rgb(framework.to_tensor(x[:, :, :3])).numpy()
        motion = model.motion(framework.to_tensor(x[:, :, 3:])).numpy()
    assert fused.shape == (2, 5)
    assert numpy.allclose(fused, (1.0 * rgb + 1.5 * motion) / 2.5, atol=1e-5)
    assert model.fusion == pytest.approx((0.4, 0.6))


def test_two_stream_weights_come_from_the_two_runs():
    framework.seed(0)
    rgb, motion = TSN(**SMALL), TSN(**SMALL, in_channels=4)
    model = TwoStreamTSN(rgb=SMALL, motion={**SMALL, "in_channels": 4})
    model.set_state_dict(fuse_states(rgb.state_dict(), motion.state_dict()))
    assert numpy.array_equal(model.motion.backbone.conv1.weight.numpy(), motion.backbone.conv1.weight.numpy())
    assert numpy.array_equal(model.rgb.head.fc.weight.numpy(), rgb.head.fc.weight.numpy())


@pytest.mark.parametrize("fusion", [[1.0], [-1.0, 2.0], [0.0, 0.0]])
def test_bad_fusion_weights_are_refused(fusion):
    with pytest.raises(ConfigError, match="fusion"):
        TwoStreamTSN(rgb=SMALL, motion={**SMALL, "in_channels": 4}, fusion=fusion)
