"""``oar bench train`` at its quick sizes on three families: each thread count in its own process, with oar's
pool and PyTorch at that count, and a table row per family (no timing is asserted)."""
import pytest

from zoo.bench import train


def test_the_table_has_both_thread_counts_for_each_family():
    pytest.importorskip("torch")
    result = train.run_all(quick=True, only=["senta_cnn", "lac", "simnet_bow"])
    assert result["threads"] == {"1t": {"oar": 1, "torch": 1}, "2t": {"oar": 2, "torch": 2}}
    assert [row["family"] for row in result["table"]] == ["senta_cnn", "lac", "simnet_bow"]
    for row in result["table"]:
        times = [row[key] for key in ("oar_1t_s", "torch_1t_s", "oar_2t_s", "torch_2t_s")]
        assert all(t > 0 for t in times)
        assert row["ratio_1t"] == pytest.approx(row["oar_1t_s"] / row["torch_1t_s"], rel=1e-2)
        assert row["oar_speedup_2t"] == pytest.approx(row["oar_1t_s"] / row["oar_2t_s"], rel=1e-2)
    for threads in ("1t", "2t"):
        assert set(result["gemms"][threads]) == set(train.GEMMS)
        assert all(rates["numpy_gflops"] > 0 and rates["torch_gflops"] > 0
                   for rates in result["gemms"][threads].values())
