"""``zoo.load(name).predict(paths, top_k=3)`` for every video zoo model, with its shipped weights, on a clip of the
project's generator: frame models answer ``{"topk"}``, feature models also rank the motions and the shapes alone;
a bad ``top_k`` or an unreadable clip is a UserError."""
import pytest

pytest.importorskip("av")
pytest.importorskip("cv2")

import zoo  # noqa: E402
from framework.errors import InputError  # noqa: E402
from video.data.decode import VideoDecodeError  # noqa: E402
from video.data.synthetic import MOTIONS, SHAPES, make_synthetic_set  # noqa: E402
from zoo.catalog import cards  # noqa: E402
from tests.offline import fetched_nothing

VIDEO_MODELS = sorted(name for name, entry in cards().items() if entry.task == "video" and not entry.compressed_from)
FEATURE_MODELS = ("attention_cluster_synth", "attention_lstm_synth", "nextvlad_synth")


@pytest.fixture(scope="module")
def clip(tmp_path_factory):
    """One generated clip (seed 7, video 0: a test-split video) and its motion and shape names."""
    root = tmp_path_factory.mktemp("clip")
    make_synthetic_set(str(root), 1, seed=7, workers=1)
    path, labels = (root / "multilabel_test.txt").read_text().split()
    motion, shape = (int(v) for v in labels.split(","))
    return str(root / path), MOTIONS[motion], SHAPES[shape - len(MOTIONS)]


def test_the_video_zoo_is_what_this_file_covers():
    assert len(VIDEO_MODELS) == 7 and set(FEATURE_MODELS) <= set(VIDEO_MODELS)


@pytest.mark.parametrize("name", VIDEO_MODELS)
def test_predict_with_top_k_on_a_generated_clip(name, clip, offline):
    path, _, _ = clip
    task = zoo.load(name)
    [result] = task.predict([path], top_k=3)
    [everything] = task.predict([path])
    if name in FEATURE_MODELS:
        assert list(result) == ["topk", "motion_topk", "shape_topk"], \
            f"{name}: its config's task section must name the label groups motion and shape (task.label_groups)"
        assert {n for n, _ in everything["topk"]} == set(MOTIONS) | set(SHAPES)
        assert {n for n, _ in everything["motion_topk"]} == set(MOTIONS)
        assert {n for n, _ in everything["shape_topk"]} == set(SHAPES)
        assert [n for n, _ in everything["motion_topk"]] == [n for n, _ in everything["topk"] if n in MOTIONS]
        assert [n for n, _ in everything["shape_topk"]] == [n for n, _ in everything["topk"] if n in SHAPES]
    else:
        assert list(result) == ["topk"] and {n for n, _ in everything["topk"]} == set(MOTIONS)
    for key, ranked in result.items():
        assert len(ranked) == 3 and ranked == everything[key][:3]
        probs = [p for _, p in ranked]
        assert probs == sorted(probs, reverse=True) and all(0.0 <= p <= 1.0 for p in probs)
    with pytest.raises(InputError, match="top_k must be an integer >= 1"):
        task.predict([path], top_k=0)
    assert fetched_nothing(offline)


def test_the_feature_models_name_the_clips_shape(clip, offline):
    path, _, shape = clip
    for name in FEATURE_MODELS:
        [result] = zoo.load(name).predict([path], top_k=1)
        assert "shape_topk" in result, f"{name}: no shape_topk (task.label_groups unset)"
        assert result["shape_topk"][0][0] == shape, (name, result)     # shape accuracy 0.97 or more on the test set


def test_an_unreadable_clip_is_a_decode_error(tmp_path, offline):
    bad = tmp_path / "truncated.mp4"
    bad.write_bytes(b"\x00\x00\x00\x18ftypmp42" + b"\x00" * 64)
    for name in ("tsm_synth", "attention_lstm_synth"):
        with pytest.raises(VideoDecodeError, match="truncated.mp4"):
            zoo.load(name).predict([str(bad)], top_k=3)
