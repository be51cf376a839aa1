"""VideoRecognition: view averaging, loss, prediction on an mp4 with readable top-k, the pair-collapsed scores,
and that every frame-model config builds."""
import glob
import os

import numpy
import pytest

import framework
import video.models  # noqa: F401  (registers the models)
import video.tasks  # noqa: F401  (registers the task)
from framework.config import load_config
from framework.engine import runner
from framework.registry import MODELS
from video.tasks import VideoRecognition
from video.metrics import pair_collapsed_accuracy, per_pair_accuracy
from video.tasks.common import topk_result

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
NAMES = ["a", "b", "c"]
PIPELINE = dict(sampler={"type": "SegmentSampler", "num_segments": 3, "mode": "test"},
                transforms=[{"type": "Resize", "short_side": 16}, {"type": "CenterCrop", "size": 16},
                            {"type": "Normalize"}, {"type": "FormatClips"}])


def _task(**kwargs):
    framework.seed(0)
    model = MODELS.build({"type": "TSN", "num_classes": 3, "depth": 18, "base_channels": 4, "num_segments": 3})
    return VideoRecognition(model, class_names=NAMES, **kwargs)


def test_views_are_averaged_as_probabilities():
    task = _task()
    task.model.eval()
    imgs = numpy.random.default_rng(0).standard_normal((2, 4, 3, 3, 16, 16)).astype("float32")  # B=2, N=4 views
    with framework.no_grad():
        out = task.predict({"imgs": framework.to_tensor(imgs)})
        per_view = [framework.nn.functional.softmax(task.model(framework.to_tensor(imgs[:, v])), axis=-1).numpy()
                    for v in range(4)]
    numpy.testing.assert_allclose(out["prob"].numpy(), numpy.mean(per_view, axis=0), rtol=1e-5)
    numpy.testing.assert_array_equal(out["pred"].numpy(), out["prob"].numpy().argmax(1))


def test_loss_is_cross_entropy_of_the_scores():
    task = _task()
    imgs = framework.to_tensor(numpy.random.default_rng(1).standard_normal((2, 1, 3, 3, 16, 16)).astype("float32"))
    label = numpy.array([0, 2])
    task.model.eval()
    loss = float(task.loss({"imgs": imgs, "label": framework.to_tensor(label)}).numpy())
    scores = task.model(framework.to_tensor(imgs.numpy()[:, 0])).numpy().astype("float64")
    log_probs = scores - numpy.log(numpy.exp(scores).sum(1, keepdims=True))
    assert loss == pytest.approx(-log_probs[[0, 1], label].mean(), rel=1e-5)


def test_predict_on_a_video_file_lists_every_class_best_first(tmp_path):
    pytest.importorskip("av")
    from .helpers import make_video
    path = make_video(str(tmp_path / "clip.mp4"), num=12, size=24)
    task = _task(**PIPELINE)
    [result] = task.predict([path])
    names = [name for name, _ in result["topk"]]
    probs = [p for _, p in result["topk"]]
    assert sorted(names) == NAMES and probs == sorted(probs, reverse=True)
    assert sum(probs) == pytest.approx(1.0, abs=1e-5)
    assert task.predict([path], top_k=1)[0]["topk"] == result["topk"][:1]
    with pytest.raises(FileNotFoundError, match="missing.mp4"):
        task.predict([str(tmp_path / "missing.mp4")])
    with pytest.raises(ValueError, match="sampler"):
        _task().predict([path])


def test_topk_and_pair_scores():
    assert topk_result([0.2, 0.5, 0.3], NAMES, 2) == {"topk": [["b", 0.5], ["c", 0.3]]}
    scores = numpy.array([[0.6, 0.4, 0.0], [0.6, 0.4, 0.0], [0.0, 0.1, 0.9], [0.1, 0.0, 0.9]])
    labels = numpy.array([0, 1, 2, 0])
    assert pair_collapsed_accuracy(scores, labels, [(0, 1)]) == 0.75  # video 1 names the right pair
    assert per_pair_accuracy(scores, labels, [(0, 1)]) == {"0/1": pytest.approx(2 / 3)}


FRAME_CONFIGS = sorted(p for p in glob.glob(os.path.join(ROOT, "configs", "video", "*.yaml"))
                       if os.path.basename(p).split("_")[0] in ("tsn", "tsm", "stnet", "nonlocal"))


@pytest.mark.parametrize("path", FRAME_CONFIGS, ids=os.path.basename)
def test_frame_model_configs_build(path):
    cfg = load_config(path)
    runner.check_sections(cfg)
    task = runner.build_task(cfg)
    assert isinstance(task, VideoRecognition)
    assert task.model.num_classes == (12 if "synth" in path else 400)
    assert task.loader is not None
