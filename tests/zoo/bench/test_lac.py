"""The LAC benchmark (``oar bench lac``): its training-step row reports both frameworks; timings are never
asserted beyond being positive."""
from zoo.bench.torch_twins import torch_or_none


def test_train_step_benchmark_reports_both_frameworks():
    from zoo.bench.lac import bench_train_step
    result = bench_train_step(batch=2, length=4, repeat=1)
    assert result["batch"] == 2 and result["oar"]["tokens_per_s"] > 0 and result["oar"]["tokens_per_cpu_s"] > 0
    if torch_or_none() is None:
        assert "torch" not in result
    else:
        assert result["torch"]["tokens_per_s"] > 0 and result["torch"]["threads"] >= 1
