"""The finetune API on a real image folder (shapes drawn and written to disk): learning, frozen phase, outputs."""
import json
import os

import numpy
import pytest

import framework
import vision
from framework.config import load_config
from framework.engine import runner
from vision.data import make_shapes
from vision.finetune import find_image_splits
from vision.models import ResNet


@pytest.fixture(scope="module")
def shapes(tmp_path_factory):
    return make_shapes(str(tmp_path_factory.mktemp("shapes")), per_class=100, val_per_class=20, size=32)


def test_finetune_learns_the_shapes(shapes):
    result = vision.finetune("resnet18", data_dir=os.path.dirname(shapes["train"]), epochs=8, batch_size=16,
                             image_size=32, crop_scale=(0.6, 1.0), model_args={"base_channels": 8},
                             optimizer={"type": "Adam", "learning_rate": 0.002}, progress=False)
    assert result["class_names"] == ["circle", "square", "triangle"]
    assert len(result["history"]) == 8
    assert result["best"] >= 0.55  # chance is 1/3
    predictions = result["task"].predict_raw([os.path.join(shapes["val"], "circle", "circle_0000.png")])
    assert predictions[0]["label"] in result["class_names"] and len(predictions[0]["topk"]) == 3


def test_pretrained_backbone_stays_fixed_while_frozen(shapes, tmp_path):
    framework.seed(1)
    pretrained = ResNet("basic", [1, 1, 1, 1], num_classes=1000, base_channels=4)
    weights = str(tmp_path / "pretrained.npz")
    framework.save(pretrained.state_dict(), weights)
    out = str(tmp_path / "run")
    result = vision.finetune("ResNet", weights=weights, data_dir=os.path.dirname(shapes["train"]), epochs=1,
                             freeze_epochs=1, batch_size=32, image_size=32,
                             model_args={"block": "basic", "layers": [1, 1, 1, 1], "base_channels": 4},
                             output_dir=out, progress=False)
    assert result["weights"]["skipped"] == ["fc.weight", "fc.bias"]
    model = result["task"].model
    state = model.state_dict()
    for key, value in pretrained.state_dict().items():
        if not key.startswith("fc."):  # weights and BatchNorm statistics untouched
            numpy.testing.assert_array_equal(state[key].numpy(), value.numpy(), err_msg=key)
    assert state["fc.weight"].shape == (3, 32)
    assert all(p.trainable for p in model.parameters())  # unfrozen after the frozen phase
    # the run is an ordinary oar config + checkpoint: `oar infer` works on it
    cfg = load_config(os.path.join(out, "config.yaml"))
    image = os.path.join(shapes["val"], "square", "square_0001.jpg")
    predicted = runner.infer(cfg, os.path.join(out, "best.npz"), [image])
    assert predicted == result["task"].predict_raw([image])


def test_data_dir_layouts(tmp_path, shapes):
    train, evaluation = find_image_splits(os.path.dirname(shapes["train"]))
    assert train == {"type": "ImageFolder", "root": shapes["train"]} and evaluation["root"] == shapes["val"]
    train, evaluation = find_image_splits(shapes["train"])  # class folders directly: divided by the split rule
    assert (train["split"], evaluation["split"]) == ("train", "eval") and train["root"] == shapes["train"]
    with pytest.raises(FileNotFoundError, match="data_dir not found"):
        find_image_splits(str(tmp_path / "missing"))
    with pytest.raises(ValueError, match="freeze_epochs"):
        vision.finetune(data_dir=shapes["train"], epochs=1, freeze_epochs=2)


def test_command_line(shapes, capsys):
    from vision.finetune import main
    main(["--data_dir", shapes["train"], "--backbone", "ResNet", "--epochs", "1", "--image_size", "32",
          "--optimizer", "Adam", "--learning_rate", "0.001",
          "--model_args", '{"block": "basic", "layers": [1, 1, 1, 1], "base_channels": 4}'])
    summary = json.loads(capsys.readouterr().out)
    assert summary["class_names"] == ["circle", "square", "triangle"] and len(summary["history"]) == 1
    assert 0.0 <= summary["best_acc"] <= 1.0
