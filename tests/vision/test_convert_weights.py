"""tools/convert_weights.py: key checks without PyTorch, and a real .pth round trip when PyTorch is installed."""
import importlib.util
import json
import os
import subprocess
import sys

import numpy
import pytest

import framework
from vision.models import ResNet, WeightsError, load_pretrained, mobilenet_v2

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
TOOL = os.path.join(ROOT, "tools", "convert_weights.py")


def _tool():
    spec = importlib.util.spec_from_file_location("convert_weights", TOOL)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _torch_style(model, prefix=""):
    """A model's state as PyTorch writes it: with BatchNorm counters (and an optional key prefix)."""
    state = {}
    for key, value in model.state_dict().items():
        state[prefix + key] = value.numpy()
        if key.endswith("running_var"):
            state[prefix + key.replace("running_var", "num_batches_tracked")] = numpy.array(5, numpy.int64)
    return state


def test_convert_strips_containers_and_reads_the_head_size():
    framework.seed(0)
    model = mobilenet_v2(num_classes=6, width_mult=0.25)
    weights, report = _tool().convert(_torch_style(model, "module."), "mobilenet_v2",
                                      model_args={"width_mult": 0.25})
    assert report["num_classes"] == 6 and report["stripped_prefix"] == "module."
    assert len(report["dropped"]) == 52 and report["converted"] == list(model.state_dict())
    target = mobilenet_v2(num_classes=6, width_mult=0.25)
    load_pretrained(target, weights)
    numpy.testing.assert_array_equal(target.classifier[1].weight.numpy(), model.classifier[1].weight.numpy())


def test_convert_names_the_keys_that_do_not_match():
    state = _torch_style(ResNet("basic", [1, 1, 1, 1], num_classes=4, base_channels=4))
    state["fc.weight"] = state["fc.weight"].T  # a Paddle-layout (in, out) head
    with pytest.raises(WeightsError, match=r"fc.weight file \(32, 4\) vs model \(4, 32\)"):
        _tool().convert(state, "ResNet", model_args={"block": "basic", "layers": [1, 1, 1, 1],
                                                     "base_channels": 4}, source="x.pth")


def test_pth_file_round_trip(tmp_path):
    torch = pytest.importorskip("torch")
    from zoo.bench.torch_twins import torch_resnet
    torch.manual_seed(0)
    reference = torch_resnet("basic", (1, 1, 1, 1), num_classes=5, base_channels=4).eval()
    source = str(tmp_path / "model.pth")
    torch.save({"state_dict": reference.state_dict()}, source)
    target = str(tmp_path / "model.npz")
    args = json.dumps({"block": "basic", "layers": [1, 1, 1, 1], "base_channels": 4})
    result = subprocess.run([sys.executable, TOOL, source, target, "--model", "ResNet", "--model_args", args],
                            capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["num_classes"] == 5
    model = ResNet("basic", [1, 1, 1, 1], num_classes=5, base_channels=4).eval()
    load_pretrained(model, target)
    x = numpy.random.default_rng(0).standard_normal((2, 3, 32, 32)).astype("float32")
    with torch.no_grad(), framework.no_grad():
        numpy.testing.assert_allclose(model(framework.to_tensor(x)).numpy(),
                                      reference(torch.from_numpy(x)).numpy(), rtol=1e-4, atol=1e-5)
    bad = subprocess.run([sys.executable, TOOL, source, str(tmp_path / "x.npz"), "--model", "resnet18"],
                         capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert bad.returncode == 2 and "model.pth does not fit ResNet" in bad.stderr and "missing" in bad.stderr
