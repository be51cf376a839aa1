"""``oar compress`` through the installed console script: the FLOPs report, pruning and int8 on the tiny
config end to end (exit status, one JSON line on stdout, the files written, the weights loading back), and
every bad setting as one error line naming it, exit 1."""
import json
import os

import numpy
import pytest

from zoo.build import build
from zoo.resolver import resolve

from ..test_cli import assert_one_error_line, oar

TINY = "configs/_test/tiny.yaml"
PRUNE = "configs/slim/tsm_synth_prune.yaml"
INT8 = "configs/slim/int8.yaml"


def _json_line(code, stdout, stderr):
    assert code == 0, stderr
    lines = stdout.splitlines()
    assert len(lines) == 1, stdout
    return json.loads(lines[0])


def _compressed_task(out):
    """The task of the run directory ``oar compress`` wrote (its config.yaml and compressed weights.npz)."""
    entry = resolve(out)
    assert entry.kind == "compressed" and entry.origin == "run" and entry.weights.path == "weights.npz"
    return build(entry).task


def test_report_counts_multiply_adds_and_parameters():
    report = _json_line(*oar("compress", "--report", "--model", TINY, "--layers"))
    assert report["params"] == 2 * 32 + 32 + 32 * 32 + 32 + 32 * 2 + 2
    assert [row["macs"] for row in report["layers"]] == [2 * 32, 32 * 32, 32 * 2]
    assert report["macs"] == sum(row["macs"] for row in report["layers"])


def test_prune_cuts_the_model_and_it_loads_back(tmp_path):
    out = str(tmp_path / "pruned")
    result = _json_line(*oar("compress", "-c", PRUNE, "--model", TINY, "--output_dir", out, "--quiet",
                             "-o", "prune.mode=uniform", "prune.layers=null", "finetune=[train.epochs=2]"))
    assert result["after"]["macs"] <= 0.5 * result["before"]["macs"]
    assert result["after"]["params"] < result["before"]["params"]
    plan = json.load(open(os.path.join(out, "plan.json")))
    assert set(plan["ratios"]) == {"net.0", "net.2"} and plan["macs_after"] == result["after"]["macs"]
    task = _compressed_task(out)
    kept = plan["channels"]["net.0"][1]
    assert task.model.net[0].weight.shape == (2, kept) and task.model.net[2].weight.shape[0] == kept
    assert [r["label"] for r in task.predict([[0.1, 0.0], [2.0, 0.0]])] == [0, 1]


def test_quant_writes_int8_weights_and_the_onnx_models(tmp_path):
    out = str(tmp_path / "int8")
    result = _json_line(*oar("compress", "-c", INT8, "--model", TINY, "--output_dir", out, "--quiet",
                             "-o", "quant.calibration_samples=64", "quant.activation=abs_max"))
    assert abs(result["after"]["metrics"]["acc"] - result["before"]["metrics"]["acc"]) <= 0.02
    assert os.path.isfile(os.path.join(out, "model.int8.onnx"))
    task = _compressed_task(out)
    assert task.model.net[2].weight_int8.dtype == numpy.int8


@pytest.mark.parametrize("config, settings, fragments", [
    (PRUNE, ["prune.layers=[net.9]"], ["prune.layers", "'net.9'", "prunable: net.0, net.2"]),
    (PRUNE, ["prune.layers=null", "prune.ratio=1.0"], ["prune.ratio must be in (0, 1), got 1.0"]),
    (PRUNE, ["prune.layers=null", "prune.flops_target=0.99", "prune.mode=uniform"],
     ["prune.flops_target", "cannot be met"]),
    (PRUNE, ["prune.layers=null", "prune.channel_multiple=0"], ["prune.channel_multiple must be at least 1, got 0"]),
    (PRUNE, ["prune.layers=null", "prune.ratios_typo=[0.5]"], ["unknown key 'ratios_typo'", "did you mean 'ratios'"]),
    (INT8, ["quant.calibration_samples=0"], ["quant.calibration_samples must be at least 1, got 0"]),
    (INT8, ["quant.calibration_split=dev"], ["quant.calibration_split", "train, eval or test"]),
    (INT8, ["quant.activation=minmax"], ["quant.activation", "unknown calibration method"]),
])
def test_bad_settings_are_one_line_naming_them(tmp_path, config, settings, fragments):
    code, _, stderr = oar("compress", "-c", config, "--model", TINY, "--output_dir", str(tmp_path), "--quiet",
                          "-o", *settings)
    assert_one_error_line(code, stderr, 1, *fragments)


def test_a_teacher_of_another_kind_is_refused(tmp_path):
    code, _, stderr = oar("compress", "-c", "configs/slim/senta_bow_distill.yaml", "--model", "senta_bow",
                          "--from_scratch", "--output_dir", str(tmp_path), "--quiet", "-o", "distill.teacher=tsm_synth")
    assert_one_error_line(code, stderr, 1, "distill.teacher", "tsm_synth is a video model")


def test_compress_without_a_config_is_a_usage_error():
    code, _, stderr = oar("compress", "--model", TINY)
    assert_one_error_line(code, stderr, 2, "give a compression config with -c")
