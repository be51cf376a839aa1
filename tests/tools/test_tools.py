"""tools/train.py, eval.py, infer.py and the `oar` command, end to end on configs/_test/tiny.yaml."""
import json
import os
import subprocess
import sys

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
TINY = os.path.join(ROOT, "configs", "_test", "tiny.yaml")


def _run(tool, *args, check=True):
    result = subprocess.run([sys.executable, os.path.join(ROOT, "tools", f"{tool}.py"), *args],
                            capture_output=True, text=True, cwd=ROOT, timeout=300)
    if check and result.returncode != 0:
        raise AssertionError(f"{tool} failed ({result.returncode}):\n{result.stderr}")
    return result


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    out = tmp_path_factory.mktemp("tiny")
    result = _run("train", "-c", TINY, "--output_dir", str(out), "-o", "train.epochs=6")
    summary = json.loads(result.stdout.strip().splitlines()[-1])
    return out, summary


def test_train_reaches_known_accuracy(trained):
    out, summary = trained
    assert summary["epoch"] == 6 and summary["best"] >= 0.9
    assert (out / "best.npz").exists() and (out / "metrics.jsonl").exists()


def test_eval_and_infer_use_the_checkpoint(trained):
    out, summary = trained
    metrics = json.loads(_run("eval", "-c", TINY, "--output_dir", str(out)).stdout)
    assert metrics["acc"] == pytest.approx(summary["best"])
    test_metrics = json.loads(_run("eval", "-c", TINY, "--output_dir", str(out), "--split", "test").stdout)
    assert test_metrics["acc"] >= 0.85
    lines = _run("infer", "-c", TINY, "--output_dir", str(out), "--input", "0.05 0.1", "2.1 0.0", "--json").stdout
    predictions = [json.loads(line) for line in lines.splitlines()]
    assert [p["label"] for p in predictions] == [0, 1]
    assert all(0.5 < p["score"] <= 1.0 for p in predictions)


def test_infer_reads_a_file_and_writes_json_lines(trained, tmp_path):
    out, _ = trained
    inputs = tmp_path / "inputs.txt"
    inputs.write_text("0 0.1\n\n-2.0 0.1\n")
    target = tmp_path / "out.jsonl"
    _run("infer", "-c", TINY, "--output_dir", str(out), "--input_file", str(inputs), "--output", str(target),
         "--json")
    records = [json.loads(line) for line in target.read_text().splitlines()]
    assert [r["input"] for r in records] == ["0 0.1", "", "-2.0 0.1"]     # one line per input line, blank included
    assert [r.get("label") for r in records] == [0, None, 1]


def test_resume_continues_from_the_last_checkpoint(trained, tmp_path):
    out, _ = trained
    result = _run("train", "-c", TINY, "--output_dir", str(out), "-o", "train.epochs=7", "--resume", "--quiet")
    assert json.loads(result.stdout.strip().splitlines()[-1])["epoch"] == 7


@pytest.mark.parametrize("args, expected", [
    (["-c", "missing.yaml"], "missing.yaml"),
    (["-c", TINY, "-o", "train.epoch=2"], "did you mean 'epochs'"),
    (["-c", TINY, "-o", "model.hiden=2"], "did you mean 'hidden'"),
    (["-c", TINY, "-o", "model.type=Nope"], "known types"),
])
def test_bad_input_gives_one_clear_line(args, expected, tmp_path):
    result = _run("train", *args, "--output_dir", str(tmp_path), check=False)
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and expected in lines[0], result.stderr


def test_yaml_float_without_dot_is_explained(tmp_path):
    config = tmp_path / "lr.yaml"
    config.write_text(f"_base_: {TINY}\noptimizer: {{learning_rate: 1e-3}}\n")
    result = _run("train", "-c", str(config), "--output_dir", str(tmp_path), check=False)
    assert result.returncode == 1 and "write 1.0e-3" in result.stderr and str(config) in result.stderr


def test_eval_with_another_models_checkpoint(trained, tmp_path):
    out, _ = trained
    result = _run("eval", "-c", TINY, "--output_dir", str(tmp_path), "--checkpoint", str(out / "best.npz"),
                  "-o", "model.hidden=8", check=False)
    lines = result.stderr.strip().splitlines()
    assert result.returncode == 1 and len(lines) == 1 and "Traceback" not in result.stderr
    assert "(2, 32)" in lines[0] and "(2, 8)" in lines[0] and "model.hidden" in lines[0], lines[0]


def test_oar_command_matches_tools(trained):
    out, _ = trained
    result = subprocess.run([sys.executable, "-m", "zoo.cli", "eval", "-c", TINY, "--output_dir", str(out)],
                            capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == json.loads(_run("eval", "-c", TINY, "--output_dir", str(out)).stdout)
