"""The vision configs are shipped (each one builds: tests/test_configs.py); the shapes config trains, evaluates and
predicts through the runner."""
import glob
import os

import pytest

from framework.config import load_config
from framework.engine import runner
from vision.data import make_shapes

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
CONFIGS = sorted(glob.glob(os.path.join(ROOT, "configs", "vision", "*.yaml")))


def test_there_are_vision_configs():
    assert {os.path.basename(c) for c in CONFIGS} >= {"resnet18_shapes.yaml", "resnet50_imagenet.yaml"}


def test_shapes_config_trains_evaluates_and_predicts(tmp_path):
    folders = make_shapes(str(tmp_path / "shapes"), per_class=8, val_per_class=4, size=48)
    overrides = [f"data.train.root={folders['train']}", f"data.eval.root={folders['val']}", "train.epochs=1",
                 "train.batch_size=12", "model.base_channels=4"]
    cfg = load_config(os.path.join(ROOT, "configs", "vision", "resnet18_shapes.yaml"), overrides)
    out = str(tmp_path / "run")
    _, summary = runner.train(cfg, output_dir=out, progress=False)
    assert summary["epoch"] == 1 and 0.0 <= summary["best"] <= 1.0
    metrics = runner.evaluate_config(cfg, os.path.join(out, "best.npz"))
    assert metrics["acc"] == pytest.approx(summary["best"]) and "top5" in metrics
    image = os.path.join(folders["val"], "triangle", "triangle_0000.png")
    (prediction,) = runner.infer(cfg, os.path.join(out, "best.npz"), [image])
    assert prediction["label"] in ("circle", "square", "triangle") and len(prediction["topk"]) == 3
