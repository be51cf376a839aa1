"""The compression benchmark's parts (``oar bench slim``) on a small network: int8 beside float in ONNX
Runtime, uniform pruning by 25/50/75 % of the multiply-adds beside the unpruned model, and per-op profiles of both runtimes. Times are never asserted; what
they are of is."""
import numpy
import pytest

from zoo.bench import slim as slim_bench

from ...framework.slim.nets import SmallResNet, randomised

pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

X = numpy.random.default_rng(3).normal(size=(4, 3, 12, 12)).astype(numpy.float32)


def _subject():
    model = randomised(SmallResNet(width=32, inner=32))
    return slim_bench.Subject("small", model, (X[:1],), (X,), [(X[i:i + 1],) for i in range(4)])


def test_int8_and_pruning_beside_the_model_they_come_from(tmp_path):
    subject = _subject()
    float_path, int8_path = slim_bench.float_and_int8(subject, str(tmp_path))
    int8 = slim_bench.int8_speedups(subject, float_path, int8_path, (2, 1))
    assert set(int8) == {"batch1", "batch64", "top1_agreement"} and 0 <= int8["top1_agreement"] <= 1
    assert all(int8[key][clock] > 0 for key in ("batch1", "batch64") for clock in ("wall", "cpu"))
    pruned, half = slim_bench.prune_speedups(subject, str(tmp_path), (2, 1))
    kept = pruned["macs_kept"]
    assert sorted(kept) == [0.25, 0.5, 0.75] and not pruned["unreachable"]
    assert all(kept[target] <= 1 - target for target in kept) and kept[0.75] < kept[0.5] < kept[0.25]
    assert set(pruned["static"]["batch1"]) == set(pruned["onnxruntime"]["batch64"]) == {0.25, 0.5, 0.75}
    assert half["static"] is not None and half["onnxruntime"] is not None


def test_a_target_the_network_cannot_reach_is_reported(tmp_path):
    subject = _subject()
    subject.model = randomised(SmallResNet(width=16, inner=16))
    pruned, _ = slim_bench.prune_speedups(subject, str(tmp_path), (1, 1))
    assert "cannot be met" in pruned["unreachable"][0.75] and 0.75 not in pruned["static"]["batch1"]


def test_profiles_name_the_ops_that_ran(tmp_path):
    subject = _subject()
    _, int8_path = slim_bench.float_and_int8(subject, str(tmp_path))
    ops = slim_bench.onnx_profile(int8_path, subject.one, 2)
    assert "QLinearConv" in ops and all(ms >= 0 for ms in ops.values())
    profile = slim_bench.static_profile(subject.program(), subject.one)
    assert "conv.forward" in profile["seconds_by_op"] and "im2col.im2col" in profile["seconds_by_kernel"]
