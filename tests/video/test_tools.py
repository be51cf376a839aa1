"""tools/make_synthetic_videos.py and tools/extract_features.py end to end."""
import json
import os
import re
import subprocess
import sys

import numpy
import pytest

pytest.importorskip("av")
pytest.importorskip("cv2")

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def _run(tool, *args, progress=None):
    env = {k: v for k, v in os.environ.items() if k != "OAR_PROGRESS"}
    if progress is not None:
        env["OAR_PROGRESS"] = progress
    result = subprocess.run([sys.executable, os.path.join(ROOT, "tools", f"{tool}.py"), *args],
                            capture_output=True, text=True, cwd=ROOT, timeout=300, env=env)
    return result


def _rates(stderr):
    """The videos/s figures of the progress bars in ``stderr``."""
    return [float(rate) for rate in re.findall(r"([0-9.]+)video/s", stderr)]


def test_generate_then_extract_features(tmp_path):
    out = tmp_path / "set"
    made = _run("make_synthetic_videos", "--out", str(out), "--num", "12", "--seed", "3", "--workers", "2",
                "--width", "32", "48", "--height", "32", "32", "--num_frames", "16", "20", "--object_size", "0.2", "0.3",
                progress="1")
    assert made.returncode == 0, made.stderr
    summary = json.loads(made.stdout.strip().splitlines()[-1])
    assert summary["videos"] == 12 and summary["splits"] == {"train": 8, "dev": 2, "test": 2}
    assert "videos:   0%| " in made.stderr and "/12 [" in made.stderr   # a tqdm bar on stderr, stdout only JSON
    assert all(0 < rate < 10_000 for rate in _rates(made.stderr))      # no absurd first rate (was 1e9/s)
    assert len(os.listdir(out / "videos")) == 12
    extracted = _run("extract_features", "--list", str(out / "multilabel_train.txt"), "--out", str(tmp_path / "f"),
                     "--model", "resnet18", "--num_frames", "3", "--size", "32", progress="1")
    assert extracted.returncode == 0, extracted.stderr
    assert "videos:   0%| " in extracted.stderr and "/8 [" in extracted.stderr
    assert len(extracted.stdout.strip().splitlines()) == 1
    result = json.loads(extracted.stdout.strip().splitlines()[-1])
    assert result["extracted"] == 8 and not result["failed"]
    lines = (tmp_path / "f" / "multilabel_train.txt").read_text().splitlines()
    name, labels = lines[0].split()
    assert len(lines) == 8 and "," in labels
    assert numpy.load(tmp_path / "f" / "rgb" / f"{name}.npy").shape == (3, 512)
    narrow = _run("extract_features", "--list", str(out / "multilabel_dev.txt"), "--out", str(tmp_path / "g"),
                  "--model", "resnet18", "--model_args", '{"base_channels": 8}', "--num_frames", "2", "--size", "32")
    assert narrow.returncode == 0 and narrow.stderr == "", narrow.stderr   # stderr not a terminal: no bar
    name = (tmp_path / "g" / "multilabel_dev.txt").read_text().split()[0]
    assert numpy.load(tmp_path / "g" / "rgb" / f"{name}.npy").shape == (2, 64)      # 8 * 8 channels
    bad = _run("extract_features", "--list", str(out / "multilabel_dev.txt"), "--out", str(tmp_path / "h"),
               "--model_args", "[8]")
    assert bad.returncode == 2 and "--model_args must be a JSON object" in bad.stderr


def test_bad_generator_ranges_are_reported(tmp_path):
    result = _run("make_synthetic_videos", "--out", str(tmp_path), "--num", "2", "--travel", "0.1", "0.2")
    assert result.returncode == 2 and "travel must be at least 0.25" in result.stderr


def test_user_mistakes_are_one_line_errors(tmp_path):
    (tmp_path / "file").write_text("")
    (tmp_path / "list.txt").write_text("clip.mp4 swim\n")
    (tmp_path / "clip.mp4").write_text("a text file, not a video\n")
    (tmp_path / "ok.txt").write_text("clip.mp4 0\n")
    cases = [(("make_synthetic_videos", "--out", str(tmp_path / "file" / "set"), "--num", "2"),
              f"make_synthetic_videos.py: error: Not a directory: {tmp_path / 'file' / 'set'}"),
             (("extract_features", "--list", str(tmp_path / "none.txt"), "--out", str(tmp_path / "o")),
              f"extract_features.py: error: list file not found: {tmp_path / 'none.txt'}"),
             (("extract_features", "--list", str(tmp_path / "list.txt"), "--out", str(tmp_path / "o")),
              f"extract_features.py: error: {tmp_path / 'list.txt'}:1: label 'swim' is not a class id"),
             (("extract_features", "--list", str(tmp_path / "ok.txt"), "--out", str(tmp_path / "o"), "--on_error",
               "raise", "--size", "32"),
              f"extract_features.py: error: line 1: cannot open video {tmp_path / 'clip.mp4'}: Invalid data")]
    for args, line in cases:
        result = _run(*args)
        assert result.returncode == 1 and result.stdout == "", result.stderr
        assert result.stderr.startswith(line) and result.stderr.count("\n") == 1, result.stderr
