"""Reading weights files and loading them: torchvision-format state dicts, checkpoints, new heads, errors."""
import numpy
import pytest

import framework
from vision.models import ResNet, WeightsError, load_pretrained, read_weights


def _model(num_classes=4, seed=0):
    framework.seed(seed)
    return ResNet("basic", [1, 1, 1, 1], num_classes=num_classes, base_channels=4)


def _arrays(model):
    return {k: v.numpy().copy() for k, v in model.state_dict().items()}


@pytest.mark.parametrize("suffix", ["npz", "safetensors"])
def test_files_load_exactly(tmp_path, suffix):
    source, target = _model(seed=1), _model(seed=2)
    path = str(tmp_path / f"w.{suffix}")
    framework.save(source.state_dict(), path)
    report = load_pretrained(target, path)
    assert report["skipped"] == [] and len(report["loaded"]) == len(source.state_dict())
    for key, value in _arrays(source).items():
        numpy.testing.assert_array_equal(target.state_dict()[key].numpy(), value)


def test_torch_counters_are_ignored_and_checkpoints_accepted(tmp_path):
    source, target = _model(seed=1), _model(seed=2)
    state = _arrays(source)
    state["bn1.num_batches_tracked"] = numpy.array(7, dtype=numpy.int64)
    target.set_state_dict(state)  # the model itself accepts PyTorch's counters
    path = str(tmp_path / "checkpoint.npz")
    framework.save({"model": state, "trainer": {"step": 3}}, path)
    assert "bn1.num_batches_tracked" in read_weights(path)
    load_pretrained(_model(seed=3), path)


def test_skip_head_keeps_the_new_classifier(tmp_path):
    pretrained = _model(num_classes=1000, seed=1)
    path = str(tmp_path / "imagenet.npz")
    framework.save(pretrained.state_dict(), path)
    model = _model(num_classes=3, seed=2)
    fresh_head = model.fc.weight.numpy().copy()
    report = load_pretrained(model, path, skip_head=True)
    assert report["skipped"] == ["fc.weight", "fc.bias"]
    numpy.testing.assert_array_equal(model.fc.weight.numpy(), fresh_head)
    numpy.testing.assert_array_equal(model.conv1.weight.numpy(), pretrained.conv1.weight.numpy())
    with pytest.raises(WeightsError, match=r"fc.weight file \(1000, 32\) vs model \(3, 32\)"):
        load_pretrained(model, path)


def test_mismatches_are_listed_before_anything_changes():
    model = _model()
    before = _arrays(model)
    state = _arrays(_model(seed=5))
    del state["layer2.0.conv1.weight"]
    state["layer9.0.conv1.weight"] = numpy.zeros(3, "float32")
    state["bn1.weight"] = numpy.zeros(5, "float32")
    with pytest.raises(WeightsError) as error:
        load_pretrained(model, state, source="my.pth")
    message = str(error.value)
    assert message.startswith("my.pth does not fit ResNet")
    assert "1 missing: layer2.0.conv1.weight (8, 4, 3, 3)" in message
    assert "1 unexpected: layer9.0.conv1.weight (3,)" in message
    assert "bn1.weight file (5,) vs model (4,)" in message
    for key, value in before.items():
        numpy.testing.assert_array_equal(model.state_dict()[key].numpy(), value)


def test_unreadable_files_are_named(tmp_path):
    with pytest.raises(FileNotFoundError, match="nope.npz"):
        read_weights(str(tmp_path / "nope.npz"))
    bad = tmp_path / "bad.npz"
    bad.write_bytes(b"not a zip file")
    with pytest.raises(WeightsError, match="bad.npz"):
        read_weights(str(bad))
    scalars = str(tmp_path / "scalars.npz")
    framework.save({"a": 1, "b": "text"}, scalars)
    with pytest.raises(WeightsError, match="not arrays"):
        read_weights(scalars)
