"""configs/_base_/datasets/*.yaml: the shipped video dataset sections build and give clips."""
import os

import pytest

pytest.importorskip("av")
pytest.importorskip("cv2")

from framework.config import load_config  # noqa: E402
from framework.engine.runner import build_dataset  # noqa: E402
import video.data  # noqa: E402,F401  (registers the datasets and transforms)

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SYNTHETIC = os.path.join(ROOT, "configs", "_base_", "datasets", "synthetic_motion.yaml")


def test_synthetic_motion_sections_build(tmp_path, capsys):
    tiny = ["num=24", "root=" + str(tmp_path / "set"), "workers=1", "spec.num_frames=[16,20]"]
    overrides = [f"data.{split}.{item}" for split in ("train", "eval", "test") for item in tiny]
    cfg = load_config(SYNTHETIC, overrides)
    datasets = {split: build_dataset(cfg, split) for split in ("train", "eval", "test")}
    assert "generating the synthetic video set (24 videos)" in capsys.readouterr().err
    assert [len(d) for d in datasets.values()] == [18, 3, 3]  # video i: test if i % 10 == 0, dev if 1
    sample = datasets["train"][0]
    assert sample["imgs"].shape == (1, 8, 3, 112, 112) and 0 <= sample["label"] < 12
    assert datasets["test"][0]["imgs"].shape == (1, 8, 3, 112, 112)
    assert (tmp_path / "set" / "complete.json").exists()


def test_a_set_folder_made_with_other_settings_is_refused(tmp_path):
    from video.data.synthetic import SyntheticSpec, ensure_synthetic_set
    spec = SyntheticSpec(num_frames=(16, 18), width=(32, 32), height=(32, 32), object_size=(0.2, 0.3))
    root = ensure_synthetic_set(12, seed=1, spec=spec, root=tmp_path / "set", workers=1)
    assert ensure_synthetic_set(12, seed=1, spec=spec, root=root) == root
    with pytest.raises(ValueError, match="other settings"):
        ensure_synthetic_set(13, seed=1, spec=spec, root=root)
