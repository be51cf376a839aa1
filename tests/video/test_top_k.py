"""``predict(paths, top_k=None)`` behaves the same on both video tasks, and the feature task ranks each label
group (``label_groups``) on its own besides the combined list."""
import numpy
import pytest

pytest.importorskip("av")
pytest.importorskip("cv2")

import framework  # noqa: E402
import video.models  # noqa: E402,F401  (registers the models)
from framework.config import ConfigError  # noqa: E402
from framework.errors import InputError  # noqa: E402
from framework.registry import MODELS  # noqa: E402
from video.models.attention_lstm import AttentionLSTM  # noqa: E402
from video.tasks import FeatureRecognition, VideoRecognition  # noqa: E402
from framework.engine.task import check_top_k  # noqa: E402
from video.tasks.common import grouped_topk_result, resolve_label_groups  # noqa: E402

from .helpers import make_video  # noqa: E402

PIPELINE = dict(sampler={"type": "SegmentSampler", "num_segments": 3, "mode": "test"},
                transforms=[{"type": "Resize", "short_side": 16}, {"type": "CenterCrop", "size": 16},
                            {"type": "Normalize"}, {"type": "FormatClips"}])
FRAME_NAMES = ["a", "b", "c", "d"]
FEATURE_NAMES = ["left", "right", "up", "down", "circle", "square", "star"]
GROUPS = {"motion": ["left", "right", "up", "down"], "shape": [4, 5, 6]}      # names or ids
BACKBONE = {"type": "ResNet", "block": "basic", "layers": [1], "base_channels": 8}
BAD_TOP_K = [0, -1, 2.5, "3", True]


def frame_task(**options):
    framework.seed(0)
    model = MODELS.build({"type": "TSN", "num_classes": 4, "depth": 18, "base_channels": 4, "num_segments": 3})
    return VideoRecognition(model, class_names=FRAME_NAMES, **PIPELINE, **options)


def feature_task(**options):
    framework.seed(0)
    return FeatureRecognition(AttentionLSTM([8], 4, 4, [8], 7, dropout=0.0), FEATURE_NAMES, ["rgb"], BACKBONE,
                              frame_size=16, num_frames=3, **options)


@pytest.fixture(scope="module")
def clips(tmp_path_factory):
    folder = tmp_path_factory.mktemp("clips")
    return [make_video(str(folder / "one.mp4"), num=12, size=24), make_video(str(folder / "two.webm"), num=9, size=24)]


def test_check_top_k():
    assert check_top_k(None, "x") is None and check_top_k(3, "x") == 3 and check_top_k(numpy.int64(2), "x") == 2
    for bad in BAD_TOP_K:
        with pytest.raises(InputError, match=f"x: top_k must be an integer >= 1 or None, got {bad!r}"):
            check_top_k(bad, "x")


@pytest.mark.parametrize("make", [frame_task, feature_task], ids=["frames", "features"])
def test_top_k_is_the_same_on_both_tasks(clips, make):
    task = make()
    full = task.predict(clips)
    count = len(full[0]["topk"])
    assert count == (4 if make is frame_task else 7)
    for top_k in (1, 3):
        ranked = task.predict(clips, top_k=top_k)
        assert [r["topk"] for r in ranked] == [f["topk"][:top_k] for f in full]
    assert task.predict(clips, top_k=50)[0]["topk"] == full[0]["topk"]          # more than the classes: all
    assert task.top_k is None                                                   # a call never changes the task
    default = make(top_k=2)
    assert [r["topk"] for r in default.predict(clips)] == [f["topk"][:2] for f in full]   # None: the task's
    assert default.predict(clips, top_k=3)[1]["topk"] == full[1]["topk"][:3]
    for bad in BAD_TOP_K:
        with pytest.raises(InputError, match="top_k must be an integer >= 1"):
            task.predict(clips, top_k=bad)
    assert task.predict([], top_k=2) == []
    with pytest.raises(TypeError, match="takes a list of inputs .*, got str"):
        task.predict(clips[0], top_k=2)
    with pytest.raises(ConfigError, match="top_k must be an integer >= 1"):
        make(top_k=0)


def test_frame_results_keep_one_list(clips):
    [result] = frame_task().predict(clips[:1], top_k=2)
    assert list(result) == ["topk"] and sum(p for _, p in frame_task().predict(clips[:1])[0]["topk"]) == \
        pytest.approx(1.0, abs=1e-5)


def test_feature_results_rank_each_group_on_its_own(clips):
    plain = feature_task().predict(clips)
    assert [list(r) for r in plain] == [["topk"], ["topk"]]                     # no groups: one list
    task = feature_task(label_groups=GROUPS)
    assert task.label_groups == {"motion": [0, 1, 2, 3], "shape": [4, 5, 6]}
    for result, alone in zip(task.predict(clips), plain):
        assert list(result) == ["topk", "motion_topk", "shape_topk"]
        assert result["topk"] == alone["topk"]
        probs = dict(alone["topk"])
        for key, members in (("motion_topk", FEATURE_NAMES[:4]), ("shape_topk", FEATURE_NAMES[4:])):
            assert result[key] == sorted(([n, probs[n]] for n in members), key=lambda item: -item[1])
    [top] = task.predict(clips[:1], top_k=2)
    assert [len(top[k]) for k in ("topk", "motion_topk", "shape_topk")] == [2, 2, 2]
    [wide] = task.predict(clips[:1], top_k=5)
    assert [len(wide[k]) for k in ("topk", "motion_topk", "shape_topk")] == [5, 4, 3]   # a group lists its own


def test_grouped_result_by_hand():
    probs = [0.1, 0.7, 0.3, 0.9]
    result = grouped_topk_result(probs, ["w", "x", "y", "z"], 1, {"first": [0, 1], "second": [2, 3]})
    assert result == {"topk": [["z", 0.9]], "first_topk": [["x", 0.7]], "second_topk": [["z", 0.9]]}
    assert grouped_topk_result(probs, None, None, {"g": [2, 0]}) == {
        "topk": [[3, 0.9], [1, 0.7], [2, 0.3], [0, 0.1]], "g_topk": [[2, 0.3], [0, 0.1]]}


@pytest.mark.parametrize("groups, message", [
    ({"motion": ["left", "fly"]}, r"label_groups.motion: 'fly' is neither a class name nor a class id in \[0, 7\)"),
    ({"shape": [4, 7]}, "label_groups.shape: 7 is neither"),
    ({"shape": [4, "circle"]}, "label_groups.shape lists a class twice"),
    ({"shape": []}, "label_groups.shape must be a non-empty list"),
    ({"two words": [0]}, "a group name must be a plain word"),
    (["left"], "label_groups must map group names to lists of classes"),
])
def test_bad_label_groups_are_config_errors(groups, message):
    with pytest.raises(ConfigError, match=message):
        resolve_label_groups(groups, FEATURE_NAMES, "FeatureRecognition")
    with pytest.raises(ConfigError, match=message):
        feature_task(label_groups=groups)
    assert resolve_label_groups(None, FEATURE_NAMES, "x") == {}
