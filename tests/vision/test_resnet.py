"""ResNet: parity with the reference definition (checked-in fixture), torchvision names and counts,
freezing, dilation, feature extraction and the hooks video models use."""
import os

import numpy
import pytest

import framework
from vision.models import ResNet, resnet18, resnet34, resnet50, resnet101
from vision.models.resnet import Bottleneck

FIXTURE = os.path.join(os.path.dirname(__file__), "data", "resnet_parity.npz")
FIXTURE_MODELS = {  # as tools/make_vision_fixture.py builds them
    "basic": dict(block="basic", layers=[2, 2, 2, 2], base_channels=3),
    "bottleneck": dict(block="bottleneck", layers=[2, 1, 1, 1], base_channels=2),
}


@pytest.fixture(scope="module")
def reference():
    with numpy.load(FIXTURE, allow_pickle=False) as data:
        return {key: data[key] for key in data.files}


def _section(reference, prefix):
    return {k[len(prefix):]: v for k, v in reference.items() if k.startswith(prefix)}


@pytest.mark.parametrize("name", sorted(FIXTURE_MODELS))
def test_state_dict_names_and_order_are_the_reference_ones(reference, name):
    state = _section(reference, f"{name}/state/")
    model = ResNet(num_classes=10, **FIXTURE_MODELS[name])
    expected = [k for k in state if not k.endswith("num_batches_tracked")]
    assert list(model.state_dict()) == expected
    assert all(model.state_dict()[k].shape == state[k].shape for k in expected)


@pytest.mark.parametrize("name", sorted(FIXTURE_MODELS))
def test_outputs_gradients_and_running_stats_match_the_reference(reference, name):
    model = ResNet(num_classes=10, **FIXTURE_MODELS[name])
    model.set_state_dict(_section(reference, f"{name}/state/"))  # num_batches_tracked included: ignored
    x = reference["x"]
    model.eval()
    with framework.no_grad():
        numpy.testing.assert_allclose(model(framework.to_tensor(x)).numpy(), reference[f"{name}/eval_logits"],
                                      rtol=1e-4, atol=1e-5)
    model.train()
    tx = framework.to_tensor(x, requires_grad=True)
    logits = model(tx)
    logits.backward(reference["grad_out"])
    numpy.testing.assert_allclose(logits.numpy(), reference[f"{name}/train_logits"], rtol=1e-4, atol=1e-5)
    grads = _section(reference, f"{name}/grad/")
    scale = numpy.abs(grads["x"]).max()
    numpy.testing.assert_allclose(tx.grad.numpy(), grads.pop("x"), rtol=1e-3, atol=1e-4 * scale)
    parameters = dict(model.named_parameters())
    for key, expected in grads.items():
        numpy.testing.assert_allclose(parameters[key].grad.numpy(), expected, rtol=1e-3,
                                      atol=1e-4 * numpy.abs(expected).max(), err_msg=key)
    state = model.state_dict()
    for key, expected in _section(reference, f"{name}/running/").items():
        numpy.testing.assert_allclose(state[key].numpy(), expected, rtol=1e-5, atol=1e-6, err_msg=key)


@pytest.mark.parametrize("builder, count", [(resnet18, 11_689_512), (resnet34, 21_797_672),
                                            (resnet50, 25_557_032), (resnet101, 44_549_160)])
def test_parameter_counts_at_1000_classes(builder, count):
    model = builder()
    assert sum(p.size for p in model.parameters()) == count


def test_torchvision_names_and_layouts():
    state = resnet50().state_dict()
    assert tuple(state["conv1.weight"].shape) == (64, 3, 7, 7)
    assert tuple(state["layer1.0.downsample.0.weight"].shape) == (256, 64, 1, 1)
    assert tuple(state["layer2.0.conv2.weight"].shape) == (128, 128, 3, 3)  # v1.5: stride on the 3x3
    assert tuple(state["fc.weight"].shape) == (1000, 2048)  # PyTorch's (out, in)
    assert "bn1.running_mean" in state and "layer4.2.bn3.running_var" in state
    assert len(state) == 320 - 53  # torchvision has 320 entries, 53 of them num_batches_tracked
    assert not any("num_batches_tracked" in k for k in state)
    model = resnet50()
    assert model.layer2[0].conv2.stride == 2 and model.layer2[0].conv1.stride == 1


def test_feature_extractor_without_head():
    model = resnet18(num_classes=0, base_channels=4).eval()
    x = framework.to_tensor(numpy.random.default_rng(0).standard_normal((2, 3, 64, 64)).astype("float32"))
    assert model.forward_features(x).shape == (2, 32, 2, 2)
    assert model(x).shape == (2, 32)
    assert model.num_features == 32 and not any(k.startswith("fc.") for k in model.state_dict())


def test_dilation_keeps_the_resolution():
    model = ResNet("bottleneck", [1, 1, 1, 1], num_classes=5, base_channels=4, strides=[1, 2, 1, 1],
                   dilations=[1, 1, 2, 4])
    x = framework.to_tensor(numpy.zeros((1, 3, 64, 64), "float32"))
    assert model.forward_features(x).shape == (1, 128, 8, 8)
    assert model.layer4[0].conv2.dilation == 4 and model.layer4[0].conv2.padding == 4


def test_frozen_stages_stay_fixed_and_in_eval_mode():
    model = ResNet("basic", [1, 1, 1, 1], num_classes=3, base_channels=4, frozen_stages=1).train()
    frozen = {k: v.numpy().copy() for k, v in model.state_dict().items() if k.startswith(("conv1", "bn1", "layer1"))}
    assert not model.bn1.training and not model.layer1[0].bn1.training and model.layer2[0].bn1.training
    x = framework.to_tensor(numpy.random.default_rng(1).standard_normal((4, 3, 32, 32)).astype("float32"))
    model(x).sum().backward()
    assert model.conv1.weight.grad is None and model.layer1[0].conv1.weight.grad is None
    assert model.layer2[0].conv1.weight.grad is not None
    state = model.state_dict()
    for key, value in frozen.items():
        numpy.testing.assert_array_equal(state[key].numpy(), value)  # running stats untouched too
    assert not numpy.allclose(state["layer2.0.bn1.running_mean"].numpy(), 0)


def test_frozen_stages_can_keep_adapting_their_batch_norm_statistics():
    model = ResNet("basic", [1, 1, 1, 1], num_classes=3, base_channels=4, frozen_stages=1,
                   frozen_bn_stats=False).train()
    frozen = {k: v.numpy().copy() for k, v in model.state_dict().items() if k.startswith(("conv1", "bn1", "layer1"))}
    assert model.bn1.training and model.layer1[0].bn1.training and not model.bn1.weight.trainable
    x = framework.to_tensor(numpy.random.default_rng(1).standard_normal((4, 3, 32, 32)).astype("float32"))
    model(x).sum().backward()
    assert model.conv1.weight.grad is None and model.bn1.weight.grad is None
    state = model.state_dict()
    for key, value in frozen.items():
        if key.endswith(("running_mean", "running_var")):
            assert not numpy.allclose(state[key].numpy(), value), key   # statistics moved
        else:
            numpy.testing.assert_array_equal(state[key].numpy(), value)   # parameters did not
    model.eval()
    assert not model.bn1.training
    norm_eval = ResNet("basic", [1, 1, 1, 1], base_channels=4, frozen_stages=1, frozen_bn_stats=False,
                       norm_eval=True).train()
    assert not norm_eval.bn1.training and not norm_eval.layer2[0].bn1.training   # norm_eval wins


def test_norm_eval_and_freeze_backbone():
    model = ResNet("basic", [1, 1, 1, 1], num_classes=3, base_channels=4, norm_eval=True).train()
    assert all(not layer.training for layer in model.sublayers() if type(layer).__name__ == "BatchNorm2D")
    assert model.layer1[0].conv1.weight.trainable
    model.freeze_backbone()
    assert [n for n, p in model.named_parameters() if p.trainable] == ["fc.weight", "fc.bias"]
    model.freeze_backbone(False)
    assert all(p.trainable for p in model.parameters())


def test_blocks_and_stages_can_be_changed_by_subclasses():
    calls = []

    class HookedBlock(Bottleneck):
        def forward_residual(self, x):
            calls.append(tuple(x.shape))
            return super().forward_residual(x)

    class HookedResNet(ResNet):
        block_types = {**ResNet.block_types, "bottleneck": HookedBlock}

        def make_block(self, block_type, stage, index, *args):
            block = super().make_block(block_type, stage, index, *args)
            block.position = (stage, index)
            return block

    model = HookedResNet("bottleneck", [2, 1, 1, 1], num_classes=2, base_channels=2)
    assert [b.position for b in model.layer1] == [(0, 0), (0, 1)] and model.layer4[0].position == (3, 0)
    assert list(model.state_dict()) == list(ResNet("bottleneck", [2, 1, 1, 1], 2, base_channels=2).state_dict())
    model(framework.to_tensor(numpy.zeros((2, 3, 32, 32), "float32")))
    assert len(calls) == 5 and calls[0] == (2, 2, 8, 8)


def test_zero_init_residual():
    model = ResNet("basic", [1, 1, 1, 1], num_classes=2, base_channels=4, zero_init_residual=True)
    assert all(numpy.all(getattr(model, f"layer{i}")[0].bn2.weight.numpy() == 0) for i in range(1, 5))


def test_bad_input_and_arguments_are_clear_errors():
    model = resnet18(num_classes=2, base_channels=4)
    with pytest.raises(ValueError, match=r"\(N, 3, H, W\), got \(2, 1, 32, 32\)"):
        model(framework.to_tensor(numpy.zeros((2, 1, 32, 32), "float32")))
    with pytest.raises(ValueError, match="block must be one of"):
        ResNet("wide")
    with pytest.raises(ValueError, match="one entry per stage"):
        ResNet("basic", [2, 2], strides=[1, 2, 2])
    with pytest.raises(ValueError, match="frozen_stages"):
        ResNet("basic", [1, 1], frozen_stages=3)
