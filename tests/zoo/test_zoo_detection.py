"""The shipped detector through the installed ``oar`` and the zoo: text lines, JSON, drawn images, the traced
program and ONNX Runtime against eager, and ``oar serve`` with base64 images."""
import base64
import json
import os
import re
import shutil
import subprocess
import sys

import numpy
import pytest

import zoo

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
OAR = shutil.which("oar", path=os.path.dirname(sys.executable)) or shutil.which("oar")
IMAGES = [os.path.join("examples", "detection", "JPEGImages", f"0000{i}.jpg") for i in (16, 17)]
LINE = re.compile(r"^(circle|ring|square|triangle|star|cross) [01]\.\d{3} -?\d+\.\d,-?\d+\.\d,\d+\.\d,\d+\.\d$")


def _oar(*argv):
    return subprocess.run([OAR, *argv], capture_output=True, text=True, cwd=ROOT, timeout=600)


@pytest.fixture(scope="module")
def eager():
    return zoo.load("ssd_mobilenet_v1_shapes", static=False)


def test_oar_run_prints_a_line_per_box_and_draws_them(tmp_path, eager):
    result = _oar("run", "ssd_mobilenet_v1_shapes", "--input_path", *IMAGES, "--output_dir", str(tmp_path))
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    expected = eager.predict(IMAGES)
    assert len(lines) == sum(max(len(r["boxes"]), 1) for r in expected)
    assert all(LINE.match(line) for line in lines if line), lines
    import cv2
    for path in IMAGES:
        drawn = cv2.imread(str(tmp_path / os.path.basename(path)))
        assert drawn.shape == cv2.imread(os.path.join(ROOT, path)).shape
    as_json = _oar("run", "ssd_mobilenet_v1_shapes", "--input_path", *IMAGES, "--json", "--score_threshold", "0.2")
    objects = [json.loads(line) for line in as_json.stdout.splitlines()]
    assert [o["input"] for o in objects] == IMAGES
    for got, want in zip(objects, eager.predict(IMAGES, score_threshold=0.2)):
        assert got["labels"] == want["labels"]
        numpy.testing.assert_allclose(got["scores"], want["scores"], atol=2e-4)


def test_the_traced_program_and_onnx_runtime_give_what_eager_gives(eager):
    pytest.importorskip("onnxruntime")
    want = eager.predict(IMAGES, score_threshold=0.05)
    for task in (zoo.load("ssd_mobilenet_v1_shapes"), zoo.load("ssd_mobilenet_v1_shapes", runtime="onnxruntime")):
        got = task.predict(IMAGES, score_threshold=0.05)
        for g, w in zip(got, want):
            assert g["labels"] == w["labels"]
            numpy.testing.assert_allclose(g["scores"], w["scores"], atol=2e-4)
            numpy.testing.assert_allclose(g["boxes"], w["boxes"], atol=0.2)


def test_oar_serve_takes_base64_images(eager):
    from tests.zoo.serving.conftest import ServerProcess
    httpx = pytest.importorskip("httpx")
    server = ServerProcess("ssd_mobilenet_v1_shapes")
    try:
        data = open(os.path.join(ROOT, IMAGES[0]), "rb").read()
        answer = httpx.post(f"{server.url}/v1/models/ssd_mobilenet_v1_shapes:predict", timeout=120,
                            json={"instances": [{"b64": base64.b64encode(data).decode()}]})
        assert answer.status_code == 200, answer.text
        (got,) = answer.json()["predictions"]
        (want,) = eager.predict(IMAGES[:1])
        assert got["labels"] == want["labels"]
        numpy.testing.assert_allclose(got["scores"], want["scores"], atol=2e-4)
    finally:
        server.stop()


def test_the_own_data_example_fine_tunes_evaluates_and_predicts(tmp_path):
    config = os.path.join("configs", "examples", "detection_own_data.yaml")
    trained = _oar("train", "-c", config, "--output_dir", str(tmp_path), "--quiet", "-o", "train.epochs=1")
    assert trained.returncode == 0, trained.stderr
    records = [json.loads(line) for line in open(tmp_path / "metrics.jsonl")]
    assert records and all(0.0 <= r["map"] <= 1.0 for r in records if "map" in r)
    evaluated = _oar("eval", "--output_dir", str(tmp_path), "--split", "test")
    assert evaluated.returncode == 0, evaluated.stderr
    assert re.search(r"map\W+[01]\.\d+", evaluated.stdout + evaluated.stderr)
    ran = _oar("run", str(tmp_path), "--input_path", IMAGES[0], "--json")
    assert ran.returncode == 0, ran.stderr
    assert set(json.loads(ran.stdout)) == {"input", "boxes", "labels", "scores"}


def test_reproduce_writes_both_sets_once_and_a_results_block(tmp_path, monkeypatch):
    from zoo.catalog import card
    from zoo.reproduce import detection
    monkeypatch.setattr(detection, "SET_SIZES", {"num_train": 2, "num_val": 1, "num_test": 1})
    monkeypatch.setattr(detection, "HELDOUT_IMAGES", 2)
    shapes, heldout = detection.prepare_sets(str(tmp_path))
    listed = {split: open(os.path.join(shapes, "ImageSets", "Main", f"{split}.txt")).read().split()
              for split in ("train", "val", "test")}
    assert listed == {"train": ["000000", "000001"], "val": ["000002"], "test": ["000003"]}
    assert open(os.path.join(heldout, "ImageSets", "Main", "test.txt")).read().split() == ["h00000", "h00001"]
    stamp = os.path.getmtime(os.path.join(shapes, "JPEGImages", "000000.jpg"))
    detection.prepare_sets(str(tmp_path))                                  # kept, not written again
    assert os.path.getmtime(os.path.join(shapes, "JPEGImages", "000000.jpg")) == stamp
    metrics = {"map": 0.5, "map_07": 0.25, "map_coco": 0.125, "map_heldout": 0.375}
    text = detection.results_text(card("ssd_mobilenet_v1_shapes"), metrics, 12.0)
    assert "| ssd_mobilenet_v1_shapes | 0.5000 | 0.2500 | 0.1250 | 0.3750 | 12.0 |" in text
    assert "on 2 data-parallel processes" in text and "`oar train --nproc 2 -c configs/vision/" in text
