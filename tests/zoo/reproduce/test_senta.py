"""zoo.reproduce.senta, the procedure of `oar reproduce senta`: training and scoring each config, and the
RESULTS.md table with or without the peer (the whole procedure on a small sample: tests/zoo/test_zoo_senta.py)."""
import os

from zoo.reproduce.options import ReproduceOptions
from zoo.reproduce.senta import reproduce, results_table

from ...nlp.senta.test_task import _toy_config


def test_reproduce_trains_and_scores_each_config(tmp_path, monkeypatch):
    monkeypatch.setenv("OAR_HOME", str(tmp_path / "home"))
    config = _toy_config(tmp_path)
    options = ReproduceOptions("senta", overrides=["train.epochs=3"], output_root=str(tmp_path / "out"), quiet=True)
    rows = reproduce(["toy"], options, config_dir=str(config.parent))
    assert len(rows) == 1 and rows[0]["name"] == "toy" and rows[0]["input"] == "char"
    assert rows[0]["dev_acc"] == rows[0]["test_acc"] >= 0.9 and 0.9 <= rows[0]["test_macro_f1"] <= 1.0
    assert rows[0]["train_seconds"] > 0 and os.path.isfile(rows[0]["checkpoint"])
    assert rows[0]["checkpoint"] == str(tmp_path / "out" / "toy" / "best.npz")


def test_results_table_holds_the_peer_or_says_it_was_not_measured():
    rows = [{"name": "senta_cnn", "input": "char", "dev_acc": 0.8431, "test_acc": 0.826, "test_macro_f1": 0.825,
             "train_seconds": 102.0}]
    peer = {"C": 4.0, "dev_acc": 0.836, "test_acc": 0.849, "test_macro_f1": 0.848}
    with_peer = results_table(rows, "Command: x.", peer).splitlines()
    assert with_peer[2] == "| senta_cnn | char | 0.843 | 0.826 | 0.825 | 1.7 min |"
    assert with_peer[3] == "| peer: TF-IDF + logistic regression (C=4) | char 1-3-grams | 0.836 | 0.849 | 0.848 | - |"
    assert with_peer[-1] == "Command: x."
    without = results_table(rows, "Command: x.")
    assert "| peer" not in without and "was not measured: scikit-learn is not importable" in without
