"""The own-data text classification example with three classes, through the installed `oar` in subprocesses:
train reads the class names from the file and keeps them in the run directory; eval reports accuracy, macro
F1 and each class's figures, also on a test file of the user's (whose labels must be the run's); infer and
an exported ONNX model answer with the names."""
import json
import os
import shutil
import subprocess
import sys

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
CONFIG = "configs/examples/text_classes_own_data.yaml"
OAR = shutil.which("oar", path=os.path.dirname(sys.executable)) or shutil.which("oar")
NAMES = ("delivery", "quality", "service")


def _oar(argv, home):
    """The installed `oar` as a process with a private $OAR_HOME; returns the finished process."""
    env = {**os.environ, "OAR_HOME": str(home)}
    return subprocess.run([OAR, *argv], capture_output=True, text=True, cwd=ROOT, timeout=600, env=env)


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """A run of the example (the trained directory), trained once for the module."""
    base = tmp_path_factory.mktemp("topics")
    result = _oar(["train", "-c", CONFIG, "--output_dir", str(base / "run"), "--quiet"], base / "home")
    assert result.returncode == 0, result.stderr
    return base


def test_the_run_keeps_the_files_class_names_and_evaluates_each_class(run):
    assert (run / "run" / "labels.txt").read_text(encoding="utf-8").split() == list(NAMES)
    records = [json.loads(line) for line in (run / "run" / "metrics.jsonl").read_text().splitlines()]
    last = records[-1]
    assert len(records) == 15 and 0.0 <= last["acc"] <= 1.0 and 0.0 <= last["macro_f1"] <= 1.0
    assert [last[f"support/{name}"] for name in NAMES] == [2.0, 2.0, 2.0]    # the dev lines: 1, 11, …, 51


def test_eval_on_a_users_test_file_and_infer_answer_with_the_names(run):
    test = run / "test.tsv"
    test.write_text("label\ttext\ndelivery\t快递送了五天才到\nservice\t客服一直不回消息\nquality\t用了两天就坏了\n",
                    encoding="utf-8")
    result = _oar(["eval", "--output_dir", str(run / "run"), "--test_file", str(test)], run / "home")
    assert result.returncode == 0, result.stderr
    scores = json.loads(result.stdout.strip().splitlines()[-1])
    assert [scores[f"support/{name}"] for name in NAMES] == [1.0, 1.0, 1.0]
    assert scores["acc"] in (0.0, 1 / 3, 2 / 3, 1.0) and set(scores) >= {"macro_f1", "f1/service"}
    wrong = run / "wrong.tsv"
    wrong.write_text("price\t太贵了\n", encoding="utf-8")
    result = _oar(["eval", "--output_dir", str(run / "run"), "--test_file", str(wrong)], run / "home")
    assert result.returncode == 1
    assert result.stderr.strip() == f"oar: error: {wrong}:1: label must be one of delivery, quality, service, got 'price'"
    result = _oar(["infer", "--output_dir", str(run / "run"), "--input_text", "快递三天才到"], run / "home")
    assert result.returncode == 0, result.stderr
    label, score = result.stdout.strip().splitlines()[-1].split("\t")
    assert label in NAMES and 1 / 3 <= float(score) <= 1.0


def test_an_exported_model_runs_with_the_names(run):
    pytest.importorskip("onnx")
    result = _oar(["export", str(run / "run"), "--output", str(run / "exported"), "--format", "onnx"], run / "home")
    assert result.returncode == 0, result.stderr
    interface = json.loads((run / "exported" / "onnx_interface.json").read_text(encoding="utf-8"))
    assert interface["labels"] == list(NAMES)
    result = _oar(["run", str(run / "exported"), "--input_text", "客服不理人"], run / "home")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().splitlines()[-1].split("\t")[0] in NAMES
