"""video.tasks.evaluation: the multi-view, other-rendering and held-out-renderer test configs, the motion scores
of a frame model, and the order-blind bound of the pair-collapsed accuracy."""
import os

import numpy
import pytest

from framework.config import load_config
from video.data.synthetic import MOTIONS, REVERSE_PAIRS
from video.tasks.evaluation import (HELDOUT, OTHER_RENDERING, count_rule_bound, heldout_renderer, motion_metrics,
                                   multi_view, other_rendering)

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def test_multi_view_takes_three_clips_of_three_crops():
    cfg = load_config(os.path.join(ROOT, "configs", "video", "tsm_synth.yaml"))
    test = multi_view(cfg)["data"]["test"]
    assert test["sampler"]["num_views"] == 3 and test["sampler"]["num_segments"] == 6
    assert [t["type"] for t in test["transforms"]] == ["Resize", "ThreeCrop", "Normalize", "FormatClips"]
    size = next(t["size"] for t in cfg["data"]["test"]["transforms"] if t["type"] == "CenterCrop")
    assert test["transforms"][0]["short_side"] == size * 7 // 6 and test["transforms"][1]["size"] == size
    assert cfg["data"]["test"]["sampler"].get("num_views", 1) == 1  # the config itself is unchanged


def test_other_rendering_replaces_the_set_and_keeps_the_pipeline():
    cfg = load_config(os.path.join(ROOT, "configs", "video", "tsm_synth.yaml"))
    test = other_rendering(cfg)["data"]["test"]
    assert {k: test[k] for k in OTHER_RENDERING} == OTHER_RENDERING
    assert test["transforms"] == cfg["data"]["test"]["transforms"] and test["sampler"] == cfg["data"]["test"]["sampler"]
    assert cfg["data"]["test"].get("seed", 0) != OTHER_RENDERING["seed"]


def test_heldout_renderer_reads_the_second_renderers_set_with_the_test_pipeline():
    cfg = load_config(os.path.join(ROOT, "configs", "video", "stnet_synth.yaml"))
    test = heldout_renderer(cfg)["data"]["test"]
    assert test == {"type": "HeldoutVideos", "sampler": cfg["data"]["test"]["sampler"],
                    "transforms": cfg["data"]["test"]["transforms"], **HELDOUT}
    assert cfg["data"]["test"]["type"] == "SyntheticVideos"    # the config itself is unchanged


def test_motion_metrics_by_hand():
    left, right = MOTIONS.index("move_left"), MOTIONS.index("move_right")
    probs = numpy.full((4, len(MOTIONS)), 0.01)
    probs[0, left] = probs[1, left] = probs[2, right] = probs[3, MOTIONS.index("still")] = 0.9
    probs[1, right] = 0.5                                 # video 1 (move_right) says left, the right pair
    labels = numpy.array([left, right, right, left])
    metrics = motion_metrics(probs, labels)
    assert metrics["motion_top1"] == 0.5 and metrics["pair_collapsed_acc"] == 0.75
    assert metrics["per_pair"] == {f"{left}/{right}": pytest.approx(3 / 4)}
    assert (left, right) in [tuple(p) for p in REVERSE_PAIRS]


def test_count_rule_bound_by_hand():
    blink, appear, disappear, still = 10, 8, 9, 11
    assert [MOTIONS[i] for i in (blink, appear, disappear, still)] == ["blink", "appear", "disappear", "still"]
    # train: count 3 mostly blink, count 5 appear/disappear only, count 2 a tie (goes to appear/disappear)
    train = (numpy.array([blink, blink, appear, disappear, blink, appear, 0]), numpy.array([3, 3, 3, 5, 2, 2, 8]))
    test = (numpy.array([blink, appear, disappear, blink, blink, blink, still, appear, 0]),
            numpy.array([3, 3, 5, 5, 5, 2, 8, 2, 8]))
    bound = count_rule_bound(train, test)
    # learned rule: wrong on appear@3, blink@5 (twice), blink@2 -> 4 of 9; best for test: count 5 says blink -> 3
    assert bound == {"learned": pytest.approx(5 / 9), "best": pytest.approx(6 / 9), "ambiguous_counts": [2, 3]}
