"""zoo.reproduce.video, the orchestration of `oar reproduce video`: the cards name it, the RESULTS.md text it
writes, the card updates it returns, and the shared runner's checkpoint choice it relies on."""
import importlib
import json

import numpy
import pytest

from zoo.catalog import cards
from zoo.reproduce import PROCEDURES, logged_train_minutes, train_checkpoint
from zoo.reproduce.options import ReproduceOptions
from zoo.reproduce.video import (BACKBONE_WEIGHTS, FEATURE_MODELS, FRAME_MODELS, backbone_table, bound_text,
                                 card_updates, reproduce_video, results_table)


def test_every_video_card_names_the_video_procedure():
    video = {name: entry for name, entry in cards().items() if entry.task == "video" and not entry.compressed_from}
    assert sorted(video) == sorted(f"{m}_synth" for m in FRAME_MODELS + FEATURE_MODELS)
    for entry in video.values():
        assert entry.reproduce.procedure == "video"
        assert entry.config == f"configs/video/{entry.name}.yaml"
        assert entry.weights.path == f"zoo/weights/{entry.name}.npz"
    module, function = PROCEDURES[video["tsm_synth"].reproduce.procedure]
    assert getattr(importlib.import_module(module, "zoo.reproduce"), function) is reproduce_video


def test_results_table_and_bound_text():
    table = results_table([{"model": "tsn_synth", "motion_top1": 0.5, "per_pair": {"0/1": 0.5}, "train_minutes": 2.0},
                           {"model": "nextvlad_synth", "motion_top1": 0.4083, "shape_acc": 0.9667}])
    lines = table.splitlines()
    assert lines[0].startswith("| model | motion top-1 | top-1 multi-view |") and lines[1] == "|" + "---|" * 14
    assert "| top-1 other rendering | top-1 held-out renderer | pair-collapsed held-out | shape acc | shape held-out |" \
        in lines[0]
    assert lines[2] == "| tsn_synth | 0.500 | – | – | – | – | – | – | – | – | – | – | – | 2.0 |"
    assert lines[3] == "| nextvlad_synth | 0.408 | – | – | – | – | – | – | 0.967 | – | – | – | – | – |"
    assert lines[-1] == "- tsn_synth: move_left/move_right 0.50"
    line = bound_text({"learned": 0.9083, "best": 0.95, "ambiguous_counts": [4, 5, 6]})
    assert "0.908 with the rule learned" in line and "0.950 with the best rule" in line and "counts 4, 5, 6." in line
    assert bound_text({"learned": 1.0, "best": 1.0, "ambiguous_counts": []}).endswith("counts none.")


def test_card_updates_name_the_backbone_of_the_feature_models():
    result = {"backbone": {"sha256": "b" * 64},
              "rows": [{"model": "tsm_synth", "sha256": "t" * 64, "motion_top1": 0.98333, "pair_collapsed_acc": 0.9,
                        "motion_top1_multiview": 0.99, "motion_top1_other_rendering": 0.93, "per_pair": {"0/1": 1.0},
                        "motion_top1_heldout": 0.91, "probs": numpy.zeros((1, 12))},
                       {"model": "attention_lstm_synth", "sha256": "a" * 64, "motion_top1": 0.9833, "shape_acc": 0.96,
                        "shape_acc_heldout": 0.92, "gap": 0.99, "hit_at_1": 0.99, "perr": 0.97, "map": 0.99,
                        "labels": "multilabel"}]}
    updates = card_updates(result)
    assert updates["tsm_synth"] == {
        "metrics": {"split": "test", "motion_top1": 0.9833, "pair_collapsed_acc": 0.9, "motion_top1_multiview": 0.99,
                    "motion_top1_other_rendering": 0.93, "motion_top1_heldout": 0.91},
        "weights": {"path": "zoo/weights/tsm_synth.npz", "sha256": "t" * 64}}
    weights = updates["attention_lstm_synth"]["weights"]
    assert weights == {"path": "zoo/weights/attention_lstm_synth.npz", "sha256": "a" * 64,
                       "backbone": BACKBONE_WEIGHTS, "backbone_sha256": "b" * 64}
    assert list(updates["attention_lstm_synth"]["metrics"]) == ["split", "motion_top1", "shape_acc",
                                                                 "shape_acc_heldout", "gap", "hit_at_1", "perr", "map"]


@pytest.mark.parametrize("files, chosen", [(("best.npz", "last.npz"), "best.npz"), (("last.npz",), "last.npz")])
def test_a_finished_run_gives_its_best_or_last_checkpoint_and_its_logged_minutes(tmp_path, files, chosen):
    for name in files:
        (tmp_path / name).write_bytes(b"")
    # records at steps 10 and 30, 120 s apart: 6 s a step, so step 10 came 60 s after the start; 180 s in all
    records = [{"step": 10, "time": 1000.0}, {"step": 20, "time": 1060.0}, {"step": 30, "time": 1120.0}]
    (tmp_path / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    assert logged_train_minutes(str(tmp_path)) == pytest.approx(180 / 60)
    options = ReproduceOptions("tsm_synth", output_root=str(tmp_path / "unused"), quiet=True)
    best, summary, minutes = train_checkpoint({}, "tsm_synth", options, from_run=str(tmp_path))
    assert best == str(tmp_path / chosen) and summary is None and minutes == pytest.approx(3.0)


def test_a_folder_of_weights_without_a_training_log_has_no_minutes(tmp_path):
    (tmp_path / "best.npz").write_bytes(b"")
    options = ReproduceOptions("tsm_synth", output_root=str(tmp_path / "unused"), quiet=True)
    best, _, minutes = train_checkpoint({}, "tsm_synth", options, from_run=str(tmp_path))
    assert best == str(tmp_path / "best.npz") and minutes is None and logged_train_minutes(str(tmp_path)) is None
    assert backbone_table({"shape_acc": 0.9, "train_minutes": None}).endswith("– min.")


def test_scoring_earlier_runs_keeps_the_cards_reproduce_time(tmp_path, monkeypatch):
    import shutil
    import zoo.reproduce as reproduce_module
    from zoo.catalog import CATALOG_PATH, card
    catalog, results = tmp_path / "catalog.yaml", tmp_path / "RESULTS.md"
    shutil.copyfile(CATALOG_PATH, catalog)
    results.write_text("")
    entry = card("tsm_synth")
    monkeypatch.setattr(reproduce_module, "_procedure",
                        lambda e: lambda e, o: {"metrics": dict(e.metrics), "results_text": "scored"})
    for from_runs, expected in ((str(tmp_path), entry.reproduce_minutes), (None, 0.0)):
        options = ReproduceOptions("video", output_root=str(tmp_path / "runs"), quiet=True, from_runs=from_runs)
        [updated] = reproduce_module._run_one(entry, options, str(catalog), str(results))
        assert updated.reproduce_minutes == expected
