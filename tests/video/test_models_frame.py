"""The frame models (TSN, TSM, StNet, Non-local): trainable-parameter counts at full size, the order
(in)sensitivity, clip-shape errors and pretrained backbones (built small, forward shape, a gradient on every
parameter, save/load round trip: tests/test_registered_models.py)."""
import numpy
import pytest

import framework
import framework.nn.functional as F
import video.models  # noqa: F401  (registers the models)
from framework.registry import MODELS

SMALL = {  # (config, clip frames T)
    "TSN": ({"depth": 18, "base_channels": 4, "num_segments": 3}, 3),
    "TSM": ({"depth": 18, "base_channels": 8, "num_segments": 4}, 4),
    "StNet": ({"depth": 18, "base_channels": 4, "num_segments": 3, "seglen": 2}, 6),
    "NonLocalNet": ({"depth": 18, "base_channels": 4, "mode": "i3d"}, 4),
}


def trainable_parameters(model):
    """Number of trainable parameter values (BatchNorm running statistics are buffers, not counted)."""
    return sum(int(numpy.prod(p.shape)) for p in model.parameters() if p.trainable)


def _array(value):
    return value.numpy() if hasattr(value, "numpy") else numpy.asarray(value)


def _clips(t, size=32, batch=2, seed=0):
    data = numpy.random.default_rng(seed).standard_normal((batch, t, 3, size, size)).astype("float32")
    return framework.to_tensor(data)


@pytest.mark.parametrize("config, expected", [
    ({"type": "TSN", "depth": 50}, 24_327_632),
    ({"type": "TSM", "depth": 50, "num_segments": 8}, 24_327_632),
    ({"type": "StNet", "depth": 50, "num_segments": 7, "seglen": 5}, 33_158_864),
    ({"type": "NonLocalNet", "depth": 50, "mode": "c2d"}, 31_686_096),   # C2D-R50 24,327,632 + 5 NL blocks
    ({"type": "NonLocalNet", "depth": 50, "mode": "i3d"}, 35_401_936),   # I3D-R50 28,043,472 + 5 NL blocks
], ids=["tsn_r50", "tsm_r50", "stnet_r50", "nonlocal_c2d_r50", "nonlocal_i3d_r50"])
def test_full_size_trainable_parameter_counts(config, expected):
    assert trainable_parameters(MODELS.build({**config, "num_classes": 400})) == expected


@pytest.mark.parametrize("name, sees_order", [("TSN", False), ("TSM", True), ("StNet", True), ("NonLocalNet", True)])
def test_only_temporal_models_tell_a_clip_from_its_reverse(name, sees_order):
    framework.seed(0)
    config, t = SMALL[name]
    model = MODELS.build({"type": name, "num_classes": 5, **config}).eval()
    for layer in model.sublayers():  # non-local blocks start as the identity: give them weight
        if type(layer).__name__ == "NonLocalBlock":
            layer.bn.weight.data[...] = 1
    x = _clips(t)
    with framework.no_grad():
        forward = model(x).numpy()
        backward = model(framework.to_tensor(x.numpy()[:, ::-1].copy())).numpy()
    differs = not numpy.allclose(forward, backward, atol=1e-5)
    assert differs == sees_order


def test_wrong_clip_shapes_are_named():
    model = MODELS.build({"type": "TSM", "num_classes": 5, **SMALL["TSM"][0]})
    with pytest.raises(ValueError, match=r"TSM: expected clips of shape \(B, 4, 3, H, W\)"):
        model(_clips(3))
    with pytest.raises(ValueError, match="StNet"):
        MODELS.build({"type": "StNet", "num_classes": 5, **SMALL["StNet"][0]})(_clips(5))  # seglen 2
    with pytest.raises(ValueError, match="mode"):
        MODELS.build({"type": "NonLocalNet", "mode": "x3d"})


def test_pretrained_backbone_loads_from_a_checkpoint_or_an_image_resnet(tmp_path):
    framework.seed(0)
    config = {"num_classes": 5, "depth": 18, "base_channels": 4, "num_segments": 3}
    source = MODELS.build({"type": "TSN", **config})
    checkpoint = str(tmp_path / "best.npz")
    framework.save({"model": source.state_dict()}, checkpoint)
    image_net = str(tmp_path / "resnet.npz")
    framework.save(MODELS.build({"type": "resnet18", "num_classes": 7, "base_channels": 4}).state_dict(), image_net)
    for path, reference in ((checkpoint, source.backbone), (image_net, None)):
        target = MODELS.build({"type": "TSM", **config, "pretrained": path})
        expected = reference.state_dict() if reference is not None else {
            k: v for k, v in framework.load(image_net).items() if not k.startswith("fc.")}
        for key, value in target.backbone.state_dict().items():
            numpy.testing.assert_array_equal(_array(value), _array(expected[key]), err_msg=key)


def _image_resnet(tmp_path, depth_layers=(2, 2, 2, 2), width=4):
    framework.seed(1)
    net = MODELS.build({"type": "ResNet", "block": "basic", "layers": list(depth_layers), "num_classes": 7,
                        "base_channels": width})
    path = str(tmp_path / "resnet.npz")
    framework.save(net.state_dict(), path)
    return net, path


def test_stnet_inflates_an_image_conv1_to_its_super_image(tmp_path):
    net, path = _image_resnet(tmp_path)
    stnet = MODELS.build({"type": "StNet", "num_classes": 5, "depth": 18, "base_channels": 4, "num_segments": 2,
                          "seglen": 3, "pretrained": path})
    assert stnet.backbone.conv1.weight.shape == (4, 9, 7, 7)
    frame = numpy.random.default_rng(0).standard_normal((1, 3, 16, 16)).astype("float32")
    super_image = framework.to_tensor(numpy.tile(frame, (1, 3, 1, 1)))    # three equal frames
    numpy.testing.assert_allclose(F.conv2d(super_image, stnet.backbone.conv1.weight, padding=3).numpy(),
                                  F.conv2d(framework.to_tensor(frame), net.conv1.weight, padding=3).numpy(),
                                  rtol=1e-5, atol=1e-5)
    numpy.testing.assert_array_equal(_array(stnet.backbone.layer3[0].conv1.weight), _array(net.layer3[0].conv1.weight))


def test_nonlocal_inflates_an_image_resnet_into_its_3d_kernels(tmp_path):
    net, path = _image_resnet(tmp_path)
    fresh = MODELS.build({"type": "NonLocalNet", "num_classes": 5, "depth": 18, "base_channels": 4, "mode": "i3d"})
    framework.seed(2)
    model = MODELS.build({"type": "NonLocalNet", "num_classes": 5, "depth": 18, "base_channels": 4, "mode": "i3d",
                          "pretrained": path})
    image, own = net.state_dict(), model.backbone.state_dict()
    conv1 = _array(own["conv1.weight"])
    assert conv1.shape == (4, 3, 5, 7, 7)
    numpy.testing.assert_allclose(conv1.sum(axis=2), _array(image["conv1.weight"]), rtol=1e-5, atol=1e-6)
    numpy.testing.assert_allclose(conv1[:, :, 0] * 5, _array(image["conv1.weight"]), rtol=1e-5, atol=1e-6)
    inflated = _array(own["stages.1.0.convs.0.weight"])                    # 3x3x3 from layer2.0.conv1
    numpy.testing.assert_allclose(inflated.sum(axis=2), _array(image["layer2.0.conv1.weight"]), rtol=1e-5, atol=1e-6)
    for key in ("stages.1.0.convs.1.weight", "stages.1.0.downsample.0.weight", "stages.3.1.bns.1.running_var"):
        name = key.replace("stages.1.0.convs.1", "layer2.0.conv2").replace("stages.1.0", "layer2.0").replace(
            "stages.3.1.bns.1", "layer4.1.bn2")
        numpy.testing.assert_allclose(_array(own[key]).reshape(_array(image[name]).shape), _array(image[name]))
    nonlocal_key = "stages.1.1.nonlocal_block.theta.weight"
    assert nonlocal_key in own and not numpy.allclose(_array(own[nonlocal_key]),
                                                      _array(fresh.backbone.state_dict()[nonlocal_key]))
    assert (_array(own["stages.1.1.nonlocal_block.bn.weight"]) == 0).all()


def test_centre_inflation_starts_each_frame_seen_on_its_own(tmp_path):
    net, path = _image_resnet(tmp_path)
    model = MODELS.build({"type": "NonLocalNet", "num_classes": 5, "depth": 18, "base_channels": 4, "mode": "i3d",
                          "pretrained": path, "inflate_init": "centre"})
    conv1 = model.backbone.conv1.weight
    clip = numpy.random.default_rng(0).standard_normal((1, 3, 4, 16, 16)).astype("float32")   # (B, C, T, H, W)
    got = F.conv3d(framework.to_tensor(clip), conv1, stride=(1, 2, 2), padding=(2, 3, 3)).numpy()
    for t in range(clip.shape[2]):                      # frame t's response is the 2D conv of frame t alone
        want = F.conv2d(framework.to_tensor(clip[:, :, t]), net.conv1.weight, stride=2, padding=3).numpy()
        numpy.testing.assert_allclose(got[:, :, t], want, rtol=1e-5, atol=1e-5)
    inflated = _array(model.backbone.state_dict()["stages.1.0.convs.0.weight"])
    numpy.testing.assert_array_equal(inflated[:, :, 1], _array(net.state_dict()["layer2.0.conv1.weight"]))
    assert not inflated[:, :, [0, 2]].any()


@pytest.mark.parametrize("with_weights", [True, False])
def test_an_unknown_inflation_is_refused(tmp_path, with_weights):
    _, path = _image_resnet(tmp_path)
    with pytest.raises(ValueError, match="inflate_init must be one of"):
        MODELS.build({"type": "NonLocalNet", "num_classes": 5, "depth": 18, "base_channels": 4, "mode": "i3d",
                      "pretrained": path if with_weights else None, "inflate_init": "middle"})


def test_inflation_refuses_a_backbone_of_another_depth(tmp_path):
    _, path = _image_resnet(tmp_path, depth_layers=(1, 1, 1, 1))
    with pytest.raises(Exception, match="does not fit"):
        MODELS.build({"type": "NonLocalNet", "num_classes": 5, "depth": 18, "base_channels": 4, "mode": "i3d",
                      "pretrained": path})


def test_stnet_with_a_frozen_backbone_trains_only_its_temporal_parts_and_head():
    model = MODELS.build({"type": "StNet", "num_classes": 5, "depth": 18, "base_channels": 4, "num_segments": 2,
                          "seglen": 2, "frozen_stages": 4, "norm_eval": True})
    model.train()
    trainable = {name.split(".")[0] for name, p in model.named_parameters() if p.trainable}
    assert trainable == {"temporal3", "temporal4", "xception", "head"}
    assert not model.backbone.bn1.training                         # batch-norm statistics kept
    F.cross_entropy(model(_clips(4, size=32)), framework.to_tensor(numpy.array([0, 1]))).backward()
    assert model.backbone.conv1.weight.grad is None and model.head.fc.weight.grad is not None
    adapting = MODELS.build({"type": "StNet", "num_classes": 5, "depth": 18, "base_channels": 4,
                             "num_segments": 2, "seglen": 2, "frozen_stages": 4, "frozen_bn_stats": False})
    adapting.train()
    assert adapting.backbone.bn1.training and adapting.backbone.layer4[0].bn2.training   # statistics adapt
    assert not adapting.backbone.bn1.weight.trainable
