"""The GPU benchmark suite (``oar bench gpu``), run on the CPU at its quick sizes: every row trains and reports.
Timings are never asserted beyond being positive."""
import importlib
import math

import pytest

from zoo import bench
from zoo.bench import gpu as gpu_benchmarks
from zoo.bench.torch_twins import torch_or_none

TRAIN_ROWS = ("lac", "senta_bilstm_b4", "senta_bilstm_b8", "tsm_r50", "nextvlad")


@pytest.fixture(scope="module")
def quick_cpu():
    return gpu_benchmarks.run_all(quick=True, device="cpu")


def _check_trained(row, who):
    assert row[f"{who}_ms"] > 0 and math.isfinite(row[f"{who}_loss"]), (who, row)


def test_quick_cpu_run_trains_every_model_in_both_frameworks(quick_cpu):
    assert quick_cpu["device"] == "cpu" and quick_cpu["gpu"] is None
    torch = torch_or_none()
    for name in TRAIN_ROWS:
        row = quick_cpu[name]
        _check_trained(row, "oar")
        if torch is not None:
            _check_trained(row, "torch")
            assert row["torch_over_oar"] == pytest.approx(row["torch_ms"] / row["oar_ms"])
    assert quick_cpu["lac"]["batch"] == 8 and quick_cpu["tsm_r50"]["segments"] == 2
    assert quick_cpu["nextvlad"]["feature_dims"] == [16, 8]


def test_quick_cpu_amp_row_runs_oar_and_leaves_torch_amp_to_the_gpu(quick_cpu):
    row = quick_cpu["tsm_r50_amp"]
    assert row["dtype"] == "float16" and row["torch_skipped"] and "torch_ms" not in row
    if "skipped" in row:  # framework.amp is missing
        assert "oar_ms" not in row
    else:
        _check_trained(row, "oar")
        assert row["oar_amp_speedup"] == pytest.approx(quick_cpu["tsm_r50"]["oar_ms"] / row["oar_ms"])


def test_quick_cpu_matmul_rows(quick_cpu):
    row = quick_cpu["matmul_float32"]
    assert row["n"] == 256 and row["oar_tflops"] > 0 and row["peak_tflops"] is None
    assert "oar_loss" not in row and row["oar_fraction_of_peak"] is None
    if torch_or_none() is not None:
        assert row["oar_fraction_of_torch"] == pytest.approx(row["oar_tflops"] / row["torch_tflops"])
    for dtype in ("float16", "bfloat16"):
        assert quick_cpu[f"matmul_{dtype}"]["skipped"]


@pytest.mark.gpu
def test_quick_gpu_run_trains_every_model_and_times_half_precision():
    result = gpu_benchmarks.run_all(quick=True, device="gpu")
    assert result["device"] == "gpu" and result["gpu"]
    torch = torch_or_none()
    for name in TRAIN_ROWS:
        _check_trained(result[name], "oar")
    if "skipped" not in result["tsm_r50_amp"]:
        _check_trained(result["tsm_r50_amp"], "oar")
    assert result["matmul_float32"]["oar_tflops"] > 0 and result["matmul_float16"]["oar_tflops"] > 0
    if torch is not None and torch.cuda.is_available():
        for name in TRAIN_ROWS + ("tsm_r50_amp",):
            _check_trained(result[name], "torch")
        for dtype in ("float32", "float16", "bfloat16"):
            assert result[f"matmul_{dtype}"]["torch_tflops"] > 0


def test_suite_is_registered_and_checks_its_device():
    assert importlib.import_module(bench.SUITES["gpu"]) is gpu_benchmarks
    with pytest.raises(ValueError, match="device must be 'cpu' or 'gpu'"):
        gpu_benchmarks.run_all(quick=True, device="tpu")


def test_datasheet_peak_is_found_by_gpu_name():
    assert gpu_benchmarks._peak("NVIDIA H200", "bfloat16") == 989.0
    assert gpu_benchmarks._peak("NVIDIA H200", "float32") == 67.0
    assert gpu_benchmarks._peak("Some Other GPU", "float32") is None
