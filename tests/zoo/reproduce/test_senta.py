"""zoo.reproduce.senta, the procedure of `oar reproduce senta`: training and scoring each config with several
seeds (reusing finished runs), the label cleaning, the ensemble and the RESULTS.md table with or without the
peer (the whole procedure on a small sample: tests/zoo/test_zoo_senta.py)."""
import os

import numpy
import pytest

from zoo.reproduce.options import ReproduceOptions
from zoo.reproduce.peers import noisy_training_lines, out_of_fold_label_confidence
from zoo.reproduce.senta import ensemble, label_cleaning, reproduce, results_table, shipped_rows

from ...nlp.senta.test_task import _toy_config


def test_reproduce_trains_each_seed_ships_the_median_on_dev_and_reuses_finished_runs(tmp_path, monkeypatch):
    monkeypatch.setenv("OAR_HOME", str(tmp_path / "home"))
    config = _toy_config(tmp_path)
    options = ReproduceOptions("senta", overrides=["train.epochs=3"], output_root=str(tmp_path / "out"), quiet=True,
                               seeds=2)
    rows = reproduce(["toy"], options, config_dir=str(config.parent))
    row = rows[0]
    assert len(rows) == 1 and row["name"] == "toy" and row["input"] == "char"
    assert [run["seed"] for run in row["runs"]] == [0, 1] and not any(run.get("reused") for run in row["runs"])
    assert row["seed"] == min(row["runs"], key=lambda run: (run["dev_acc"], run["seed"]))["seed"]
    assert row["checkpoint"] == str(tmp_path / "out" / "toy" / f"seed{row['seed']}" / "best.npz")
    assert row["dev_acc"] == row["test_acc"] >= 0.9 and 0.9 <= row["test_macro_f1"] <= 1.0   # dev is test here
    assert len(row["test_prob"]) == len(row["test_labels"]) == 64 and set(row["test_labels"]) == {0, 1}
    assert row["train_seconds"] == sum(run["train_seconds"] for run in row["runs"]) > 0
    trained = os.path.getmtime(row["runs"][0]["checkpoint"])
    again = reproduce(["toy"], ReproduceOptions("senta", overrides=["train.epochs=3"], quiet=True, seeds=1,
                                                output_root=str(tmp_path / "out")), config_dir=str(config.parent))
    assert again[0]["runs"] == [{**row["runs"][0], "reused": True}]
    assert os.path.getmtime(row["runs"][0]["checkpoint"]) == trained
    other = reproduce(["toy"], ReproduceOptions("senta", overrides=["train.epochs=2"], quiet=True, seeds=1,
                                                output_root=str(tmp_path / "out")), config_dir=str(config.parent))
    assert not other[0]["runs"][0].get("reused")                 # another config trains again


def _row(name, correct, prob_right=0.9):
    """A reproduce row of one seed whose test predictions are right where ``correct`` is true (labels all 1)."""
    prob = [prob_right if right else 1 - prob_right for right in correct]
    return {"name": name, "input": "char", "seed": 0, "runs": [{"seed": 0, "test_acc": float(numpy.mean(correct))}],
            "dev_acc": 0.8431, "test_acc": float(numpy.mean(correct)), "test_macro_f1": 0.5, "train_seconds": 102.0,
            "test_prob": prob, "dev_prob": prob, "test_labels": [1] * len(correct), "dev_labels": [1] * len(correct)}


def test_results_table_reports_the_seeds_the_paired_test_the_ensemble_and_the_peers():
    a = _row("senta_cnn", [True] * 20 + [False] * 10)
    a["runs"] = [{"seed": 0, "test_acc": 0.8}, {"seed": 1, "test_acc": 0.6}, {"seed": 2, "test_acc": 0.7}]
    b = _row("senta_bow", [False] * 10 + [True] * 20, prob_right=0.6)
    peer = {"C": 4.0, "dev_acc": 0.836, "test_acc": 0.5, "test_macro_f1": 0.848, "test_pred": [1] * 15 + [0] * 15}
    uncleaned = {**peer, "C": 2.0, "test_acc": 0.849}
    combined = ensemble([a, b])                   # mean probabilities: a's 0.9 / 0.1 outweigh b's 0.4 / 0.6
    assert combined["test_pred"] == [1] * 20 + [0] * 10 and combined["test_acc"] == pytest.approx(2 / 3)
    lines = results_table([a, b], "Command: x.", peer, combined, uncleaned,
                          {"senta_cnn": "senta_cnn", "senta_bow": "senta_bow"}).splitlines()
    # a against the peer: right where the peer is wrong on lines 15-19 (5), wrong where it is right on none
    assert lines[2] == ("| senta_cnn | char | 3 (median: seed 0) | 0.843 | 0.667 | 0.500 | 0.700 ± 0.100 "
                        "(0.600-0.800) | 0.062 | 1.7 min |")
    assert lines[3].startswith("| senta_bow | char | 1 (median: seed 0) | 0.843 | 0.667 | 0.500 | 0.667 | ")
    assert lines[4] == ("| ensemble of the 2 shipped (mean probability) | char | - | 0.667 | 0.667 | 0.400 | - | 0.062 "
                        "| - |")
    assert lines[5] == "| peer: TF-IDF + logistic regression (C=4) | char 1-3-grams | - | 0.836 | 0.500 | 0.848 | - | - | - |"
    assert lines[6].startswith("| peer: TF-IDF + logistic regression (C=2), without the label cleaning |")
    assert lines[-2:] == ["The cards ship, chosen on dev: senta_cnn (senta_cnn), senta_bow (senta_bow).", "Command: x."]
    without = results_table([a], "Command: x.")
    assert "| peer" not in without and "was not measured: scikit-learn is not importable" in without


def test_each_card_ships_its_trunk_model_only_where_dev_says_so():
    rows = [{**_row(name, [True]), "dev_acc": dev} for name, dev in
            (("senta_bow", 0.84), ("senta_bow_lac", 0.84), ("senta_lstm", 0.836), ("senta_lstm_lac", 0.841),
             ("senta_gru", 0.84), ("senta_gru_lac", 0.83), ("senta_cnn_lac", 0.9))]
    chosen = shipped_rows(rows, ["senta_bow", "senta_lstm", "senta_gru", "senta_bilstm"])
    assert {card: row["name"] for card, row in chosen.items()} == {
        "senta_bow": "senta_bow",                # a tie keeps the character model
        "senta_lstm": "senta_lstm_lac", "senta_gru": "senta_gru"}    # no row for senta_bilstm: no card entry


def _noisy_splits(rng):
    """Toy splits (好 positive, 差 negative among filler) whose training labels are flipped on lines 0-5."""
    def lines(size):
        labels = rng.integers(0, 2, size=size)
        return [("".join(rng.choice(list("书手机质量快慢"), size=5)) + ("好" if y else "差"), int(y)) for y in labels]
    splits = {"train": lines(200), "dev": lines(60), "test": lines(60)}
    splits["train"][:6] = [(text, 1 - label) for text, label in splits["train"][:6]]
    return splits


def test_label_cleaning_finds_flipped_labels_and_picks_the_threshold_on_the_peers_dev(tmp_path):
    pytest.importorskip("sklearn")
    splits = _noisy_splits(numpy.random.default_rng(0))
    texts, labels = zip(*splits["train"])
    confidence = out_of_fold_label_confidence(texts, labels, folds=4)
    assert confidence.shape == (200,) and set(numpy.argsort(confidence)[:6]) == set(range(6))
    assert noisy_training_lines(confidence, 0.0).size == 0
    assert set(noisy_training_lines(confidence, numpy.sort(confidence)[6])) == set(range(6))   # the 6 lowest
    result = label_cleaning(splits, [0.5, 0.3], 4, str(tmp_path / "cleaning"))
    assert sorted(result["dev_acc"]) == [0.0, 0.3, 0.5]
    assert result["dev_acc"][result["threshold"]] == max(result["dev_acc"].values())
    assert result["dropped"] == len(result["drop"]) == len(noisy_training_lines(confidence, result["threshold"]))
    if result["drop"]:
        with open(result["drop_file"], encoding="utf-8") as f:
            assert set(f.read().splitlines()) == result["drop"]
    else:
        assert result["drop_file"] is None
