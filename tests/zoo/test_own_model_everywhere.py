"""A model trained on one's own files goes everywhere a zoo model goes (through the installed ``oar``).

For a sentiment, a matching, a LAC, a video and a detection model trained on the
small own-data examples (a detector's test file is a VOC folder): ``oar eval --test_file`` → ``zoo.load(run)`` → ``oar export
run`` (program and ONNX) → ``oar run export`` on both runtimes equal to ``oar
infer`` → ``oar serve run`` answering the same → ``oar compress --model run``
→ ``oar run`` / ``oar serve`` / ``oar export`` of what compress wrote. The
commands other than training run from a folder outside the repository, so the
runs must resolve their own files.
"""
import base64
import json
import os

import numpy
import pytest

import zoo

from .serving.conftest import ServerProcess, httpx
from .test_cli import OAR, oar

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
pytest.importorskip("onnxruntime")

# family -> (own-data config, training overrides, test file in the training format, how inputs are given, inputs)
FAMILIES = {
    "sentiment": ("sentiment_own_data", [], "examples/sentiment.tsv", "--input_text", ["老师讲课很清楚", "屏幕坏了"]),
    "matching": ("matching_own_data", [], "examples/matching_dev.tsv", "--input_text",
                 ["火车晚点了\t列车延误了", "小王把书借给了小李\t小李把书借给了小王"]),
    "lac": ("lac_own_data", ["train.epochs=3"], "examples/lac_tagged.txt", "--input_text",
            ["我买了一台白色的格力空调"]),
    "video": ("video_own_data", ["train.epochs=1"], "examples/videos/val.txt", "--input_path",
              ["examples/videos/clips/grow_3.mp4"]),
    "detection": ("detection_own_data", ["train.epochs=1"], "examples/detection", "--input_path",
                  ["examples/detection/JPEGImages/000016.jpg", "examples/detection/JPEGImages/000019.jpg"]),
}
QUANT = ["-o", "quant.calibration_samples=4", "quant.calibration_split=eval"]


def _inputs(family):
    flag, values = FAMILIES[family][3], FAMILIES[family][4]
    return [flag] + ([os.path.join(ROOT, v) for v in values] if flag == "--input_path" else values)


def _results(*args, cwd):
    """The ``--json`` results of an ``oar`` command, one dict per input."""
    code, out, err = oar(*args, "--json", cwd=cwd)
    assert code == 0, err
    return [json.loads(line) for line in out.splitlines()]


def assert_same(ours, theirs):
    """Equal results: labels, words and tags exactly, scores within 1e-4 (a detector's boxes within 0.05
    pixels)."""
    assert len(ours) == len(theirs)
    for a, b in zip(ours, theirs):
        a, b = {k: v for k, v in a.items() if k != "input"}, {k: v for k, v in b.items() if k != "input"}
        assert a.keys() == b.keys()
        for key in a:
            if isinstance(a[key], float):
                assert a[key] == pytest.approx(b[key], abs=1e-4)
            elif key in ("boxes", "scores"):
                assert numpy.allclose(a[key], b[key], atol=0.05 if key == "boxes" else 1e-4), key
            elif key == "topk":
                assert [n for n, _ in a[key]] == [n for n, _ in b[key]]
                assert [p for _, p in a[key]] == pytest.approx([p for _, p in b[key]], abs=1e-4)
            else:
                assert a[key] == b[key]


@pytest.fixture(scope="module")
def place(tmp_path_factory):
    """A working folder outside the repository."""
    return tmp_path_factory.mktemp("own")


@pytest.fixture(scope="module")
def runs(place):
    """``{family: run directory}``: each own-data example trained (from the repository, as the README does)."""
    made = {}
    for family, (config, overrides, *_) in FAMILIES.items():
        made[family] = str(place / "runs" / family)
        code, _, err = oar("train", "-c", f"configs/examples/{config}.yaml", "--output_dir", made[family], "--quiet",
                           *(["-o", *overrides] if overrides else []), cwd=ROOT)
        assert code == 0, err
    return made


@pytest.fixture(scope="module")
def inferred(runs, place):
    """``{family: oar infer --json results}``: what every other path must answer."""
    return {family: _results("infer", "--output_dir", run, *_inputs(family), cwd=place) for family, run in runs.items()}


@pytest.fixture(scope="module")
def compressed(runs, place):
    """``{family: folder oar compress wrote}`` (post-training int8 of each run)."""
    made = {}
    for family, run in runs.items():
        made[family] = str(place / "int8" / family)
        code, out, err = oar("compress", "-c", os.path.join(ROOT, "configs/slim/int8.yaml"), "--model", run,
                             "--output_dir", made[family], "--quiet", *QUANT, cwd=place)
        assert code == 0, err
        shown = json.loads(out)
        assert shown["after"]["params"] == shown["before"]["params"] > 0
    return made


@pytest.mark.parametrize("family", FAMILIES)
def test_eval_reads_every_line_of_an_own_test_file(family, runs, place):
    code, out, err = oar("eval", "--output_dir", runs[family], "--test_file", os.path.join(ROOT, FAMILIES[family][2]),
                         cwd=place)
    assert code == 0, err
    metrics = json.loads(out)
    scores = [v for k, v in metrics.items() if not k.startswith("support/")]
    assert scores and all(0.0 <= v <= 1.0 for v in scores)


@pytest.mark.parametrize("family", FAMILIES)
def test_a_run_loads_exports_and_runs_on_both_runtimes_as_oar_infer_does(family, runs, inferred, place, monkeypatch):
    monkeypatch.chdir(place)
    task = zoo.load(runs[family])
    assert task.card.name == family and task.card.origin == "run" and task.card.kind == "trained"
    given = _inputs(family)[1:]
    assert_same(task.predict([v.split("\t") if "\t" in v else v for v in given]), inferred[family])
    assert_same(_results("run", runs[family], *_inputs(family), cwd=place), inferred[family])
    export = str(place / "exports" / family)
    code, _, err = oar("export", runs[family], "--output", export, "--format", "onnx", cwd=place)
    assert code == 0, err
    manifest = json.load(open(os.path.join(export, "manifest.json"), encoding="utf-8"))
    assert manifest["card"]["name"] == family and "model.onnx" in manifest["files"]
    for runtime in ("oar", "onnxruntime"):
        assert_same(_results("run", export, "--runtime", runtime, *_inputs(family), cwd=place), inferred[family])


@pytest.mark.parametrize("family", FAMILIES)
def test_what_compress_writes_is_a_run_that_runs_and_exports(family, compressed, place):
    folder = compressed[family]
    report = json.load(open(os.path.join(folder, "report.json"), encoding="utf-8"))
    assert report["measured_on"]["split"] in ("test", "eval")
    for side in ("before", "after"):
        assert report[side]["metrics"] and set(report[side]["speed"]) == {"static", "onnxruntime"}
        assert all(s["latency_ms"] > 0 and s["throughput"] > 0 for s in report[side]["speed"].values())
    assert set(report["speedup"]) == {"static", "onnxruntime"}
    for name in os.listdir(folder):                  # no absolute path of this machine in the run's files
        path = os.path.join(folder, name)
        if name.endswith((".json", ".yaml", ".txt")):
            assert str(place) not in open(path, encoding="utf-8").read(), name
    ran = _results("run", folder, *_inputs(family), cwd=place)
    assert_same(_results("infer", "--output_dir", folder, *_inputs(family), cwd=place), ran)
    export = str(place / "int8_exports" / family)
    code, _, err = oar("export", folder, "--output", export, cwd=place)
    assert code == 0, err
    assert_same(_results("run", export, *_inputs(family), cwd=place), ran)


def _instance(family, value):
    if FAMILIES[family][3] == "--input_path":
        with open(os.path.join(ROOT, value), "rb") as f:
            return {"b64": base64.b64encode(f.read()).decode()}
    return value.split("\t") if "\t" in value else value


def test_one_server_serves_runs_by_their_names_and_compressed_outputs_by_given_names(runs, compressed, inferred):
    served = list(runs.values()) + [f"{family}_int8={folder}" for family, folder in compressed.items()]
    server = ServerProcess(*served)
    try:
        listed = httpx.get(server.url + "/v1/models", timeout=10).json()["models"]
        assert sorted(m["name"] for m in listed) == sorted(list(runs) + [f"{f}_int8" for f in compressed])
        for family in runs:
            instances = [_instance(family, v) for v in FAMILIES[family][4]]
            for name in (family, f"{family}_int8"):
                answer = httpx.post(f"{server.url}/v1/models/{name}:predict", json={"instances": instances},
                                    timeout=120)
                assert answer.status_code == 200, answer.text
                if name == family:
                    assert_same(answer.json()["predictions"], inferred[family])
    finally:
        code, _, err = server.stop()
    assert code == 0, err


def test_anything_else_is_one_line_saying_what_a_model_can_be(place):
    (place / "empty").mkdir(exist_ok=True)
    for given in (str(place / "empty"), str(place / "missing" / "run"), OAR):
        code, out, err = oar("run", given, "--input_text", "好", cwd=place)
        assert code == 1 and out == "" and len(err.strip().splitlines()) == 1, err
        assert "a run directory of `oar train` or `oar compress`" in err and "Traceback" not in err
