"""Evaluating trained video models beyond the trainer's metrics: multi-view testing, another rendering of the
generated set, motion and time-reversal-pair scores, and the order-blind bound of the feature data.

- :func:`checkpoint_scores`: class probabilities (N, K) and labels of a checkpoint on one split of a config;
  :func:`stream_scores` the same per stream of a two-stream model, and fused, in one pass;
- :func:`multi_view`, :func:`other_rendering`, :func:`heldout_renderer`: copies of a frame-model config
  tested with :data:`MULTI_VIEW_CLIPS` clips x 3 crops, on an independently drawn set of the same generator
  (:data:`OTHER_RENDERING`), or on the second renderer's held-out set (:data:`HELDOUT`,
  :mod:`video.data.heldout`);
- :func:`motion_metrics`, :func:`evaluate_motions`: top-1, pair-collapsed and per-pair accuracy of motion
  scores, single view, multi-view, on the other rendering and on the held-out renderer;
- :func:`heldout_feature_metrics`: a feature model's motion and shape scores on the held-out renderer's
  videos, features made by its task from the video files (as ``predict`` makes them);
- :func:`visible_counts`, :func:`count_rule_bound`, :func:`orderless_bound`: the pair-collapsed accuracy
  a model blind to frame order can reach at best on the frames a feature model sees.
"""
import os

import numpy

import framework.nn.functional as F
from framework import no_grad
from framework.engine import runner, to_tensors
from vision.models.weights import read_weights

from ..data.datasets import read_list_file
from ..data.features import resolve_path
from ..data.heldout import ensure_heldout_set
from ..data.synthetic import MOTIONS, REVERSE_PAIRS, SHAPES
from ..metrics import pair_collapsed_accuracy, per_pair_accuracy

__all__ = ["MULTI_VIEW_CLIPS", "OTHER_RENDERING", "HELDOUT", "multi_view", "other_rendering", "heldout_renderer",
           "checkpoint_scores", "stream_scores", "motion_metrics", "evaluate_motions", "heldout_feature_metrics",
           "visible_counts", "count_rule_bound", "orderless_bound"]

MULTI_VIEW_CLIPS = 3
# An independently drawn set with wider ranges than the training set (other seed, object sizes, camera
# shake, noise, lengths and frame rates): a check that the models did not fit one rendering.
OTHER_RENDERING = {"num": 240, "seed": 7, "split": "train",
                   "spec": {"object_size": [0.18, 0.36], "jitter": 0.03, "noise": 9.0, "num_frames": [28, 56],
                            "fps": [12, 30]}}
# The second renderer's test set (video.data.heldout.ensure_heldout_set): other drawing code, never trained on.
HELDOUT = {"num": 240, "seed": 0}


def multi_view(cfg, split="test", clips=MULTI_VIEW_CLIPS):
    """A copy of ``cfg`` whose ``data.<split>`` takes ``clips`` temporal views x 3 crops.

    Frames are resized to 7/6 of the single-view crop on their short side, then
    :class:`~video.data.transforms.ThreeCrop` takes three crops of the single-view size; the section's own
    normalisation (``Normalize`` or, for flow and RGB differences, ``NormalizeModality``) is kept.
    """
    section = dict(cfg["data"][split])
    size = next(t["size"] for t in section["transforms"] if t["type"] == "CenterCrop")
    normalise = next((t for t in section["transforms"] if t["type"] in ("Normalize", "NormalizeModality")),
                     {"type": "Normalize"})
    section["sampler"] = {**section["sampler"], "num_views": clips}
    section["transforms"] = [{"type": "Resize", "short_side": size * 7 // 6}, {"type": "ThreeCrop", "size": size},
                             normalise, {"type": "FormatClips"}]
    return {**cfg, "data": {**cfg["data"], split: section}}


def other_rendering(cfg, split="test"):
    """A copy of ``cfg`` whose ``data.<split>`` reads :data:`OTHER_RENDERING` (made on first use)."""
    return {**cfg, "data": {**cfg["data"], split: {**cfg["data"][split], **OTHER_RENDERING}}}


def heldout_renderer(cfg, split="test"):
    """A copy of ``cfg`` whose ``data.<split>`` reads the held-out renderer's set (:data:`HELDOUT`, made on first
    use) with the section's sampler, transforms and modality."""
    section = cfg["data"][split]
    heldout = {"type": "HeldoutVideos", "sampler": section["sampler"], "transforms": section["transforms"], **HELDOUT}
    if "modality" in section:
        heldout["modality"] = section["modality"]
    return {**cfg, "data": {**cfg["data"], split: heldout}}


def checkpoint_scores(cfg, checkpoint, split="test", device=None):
    """Class probabilities (N, K) and labels (N,) of ``checkpoint`` on ``data.<split>`` of ``cfg``."""
    train_cfg = runner.check_sections(cfg)
    task = runner.load_task(cfg, checkpoint, device)
    loader = runner.build_loader(runner.build_dataset(cfg, split), task, train_cfg, training=False)
    probs, labels = [], []
    with no_grad():
        for batch in loader:
            probs.append(task.predict_batch(to_tensors(batch, device))["prob"].numpy())
            labels.append(numpy.asarray(batch["label"]))
    return numpy.concatenate(probs), numpy.concatenate(labels)


def stream_scores(cfg, checkpoint, split="test", device=None):
    """A two-stream model's (:class:`~video.models.two_stream.TwoStreamTSN`) class probabilities on
    ``data.<split>`` of ``cfg``, per stream and fused, from one pass: ``{"rgb": (N, K), "motion": (N, K),
    "fused": (N, K), "labels": (N,)}`` (each the softmax of its scores, averaged over a video's views)."""
    train_cfg = runner.check_sections(cfg)
    task = runner.load_task(cfg, checkpoint, device)
    model = task.model
    loader = runner.build_loader(runner.build_dataset(cfg, split), task, train_cfg, training=False)
    out = {"rgb": [], "motion": [], "fused": [], "labels": []}
    with no_grad():
        for batch in loader:
            imgs = to_tensors(batch, device)["imgs"]
            b, n = imgs.shape[:2]
            clips = imgs.reshape((b * n,) + tuple(imgs.shape[2:]))          # (B*N, T, 3 + C, H, W)
            rgb, motion = model.stream_scores(clips)                        # (B*N, K) each
            fused = rgb * model.fusion[0] + motion * model.fusion[1]
            for key, scores in (("rgb", rgb), ("motion", motion), ("fused", fused)):
                out[key].append(F.softmax(scores.reshape((b, n, -1)), axis=-1).mean(axis=1).numpy())
            out["labels"].append(numpy.asarray(batch["label"]))
    return {key: numpy.concatenate(parts) for key, parts in out.items()}


def motion_metrics(probs, labels):
    """Top-1, pair-collapsed accuracy and per-pair accuracy (``{"a/b": acc}``) of motion scores (N, 12)."""
    return {"motion_top1": float((probs.argmax(1) == labels).mean()),
            "pair_collapsed_acc": pair_collapsed_accuracy(probs, labels, REVERSE_PAIRS),
            "per_pair": per_pair_accuracy(probs, labels, REVERSE_PAIRS)}


def evaluate_motions(cfg, checkpoint, split="test", device=None):
    """The motion scores of a frame model's ``checkpoint`` on ``data.<split>`` of ``cfg``: single view
    (:func:`motion_metrics` and ``inside_pairs``, their mean per-pair accuracy), multi-view (:func:`multi_view`:
    ``motion_top1_multiview``, ``pair_collapsed_acc_multiview``), on :data:`OTHER_RENDERING`
    (``…_other_rendering``) and on the held-out renderer (:func:`heldout_renderer`: ``…_heldout``); with the
    single-view probabilities (N, 12) under ``"probs"`` and the labels (N,) under ``"labels"``."""
    probs, labels = checkpoint_scores(cfg, checkpoint, split, device)
    result = motion_metrics(probs, labels)
    result["inside_pairs"] = float(numpy.mean(list(result["per_pair"].values())))
    views = (("multiview", multi_view(cfg, split)), ("other_rendering", other_rendering(cfg, split)),
             ("heldout", heldout_renderer(cfg, split)))
    for suffix, view in views:
        view_probs, view_labels = checkpoint_scores(view, checkpoint, split, device)
        result[f"motion_top1_{suffix}"] = float((view_probs.argmax(1) == view_labels).mean())
        result[f"pair_collapsed_acc_{suffix}"] = pair_collapsed_accuracy(view_probs, view_labels, REVERSE_PAIRS)
    return {**result, "probs": probs, "labels": labels}


def heldout_feature_metrics(cfg, checkpoint, device=None, batch_size=16):
    """A feature model's scores on the held-out renderer's videos (:data:`HELDOUT`, multi-label list): the task
    of ``cfg`` with ``checkpoint`` makes each video's features from the file with its backbone, as ``predict``
    does. Returns ``motion_top1_heldout``, ``pair_collapsed_acc_heldout`` (12 motions) and
    ``shape_acc_heldout`` (the best of the 6 shapes)."""
    folder = ensure_heldout_set(**HELDOUT)
    entries = read_list_file(os.path.join(folder, "multilabel_test.txt"), multi_label=True)
    task = runner.load_task(cfg, checkpoint, device)
    probs = []
    with no_grad():
        for start in range(0, len(entries), batch_size):
            paths = [os.path.join(folder, e.path) for e in entries[start:start + batch_size]]
            probs.append(task.predict_batch(to_tensors(task.preprocess(paths), device))["prob"].numpy())
    probs = numpy.concatenate(probs)
    motions = numpy.array([min(e.labels) for e in entries])
    shapes = numpy.array([max(e.labels) for e in entries]) - len(MOTIONS)
    motion = motion_metrics(probs[:, :len(MOTIONS)], motions)
    return {"motion_top1_heldout": motion["motion_top1"], "pair_collapsed_acc_heldout": motion["pair_collapsed_acc"],
            "shape_acc_heldout": float((probs[:, len(MOTIONS):].argmax(1) == shapes).mean())}


def visible_counts(cfg, split):
    """Per video of ``data.<split>`` of a feature config (unmirrored, the frames a test-mode sample takes):
    the motion label (N,) and how many of its frames the backbone calls visible (N,).

    Visibility is the backbone's own visibility output (its head, output ``len(SHAPES)``) applied to the
    stored features.
    """
    section = {**cfg["data"][split], "mode": "test", "mirrored": False, "transforms": []}
    dataset = runner.build_dataset({**cfg, "data": {**cfg["data"], split: section}}, split)
    head = read_weights(resolve_path(section["backbone_weights"]))
    weight, bias = numpy.asarray(head["fc.weight"][len(SHAPES)], numpy.float64), float(head["fc.bias"][len(SHAPES)])
    labels, counts = [], []
    for i in range(len(dataset)):
        sample = dataset[i]
        labels.append(int(numpy.argmax(sample["label"][:len(MOTIONS)])))
        counts.append(int((sample["rgb"] @ weight + bias > 0).sum()))
    return numpy.array(labels), numpy.array(counts)


def orderless_bound(cfg):
    """The pair-collapsed accuracy on the test split that a model blind to frame order can reach at best,
    from the frames a feature model of ``cfg`` sees: :func:`count_rule_bound` of :func:`visible_counts` of
    the training and test videos."""
    return count_rule_bound(visible_counts(cfg, "train"), visible_counts(cfg, "test"))


def count_rule_bound(train, test):
    """Pair-collapsed accuracy of the best order-blind decision between blink and appear/disappear.

    Without order, blink cannot be told from appear/disappear when as many of the frames show the object;
    every other pair-collapsed decision is granted. ``train`` and ``test`` are (motion labels (N,), visible
    counts (N,)). A rule learned on ``train`` (for each count, the more frequent of blink and
    appear/disappear; appear/disappear on a tie or an unseen count) gives ``"learned"``; the best rule for
    ``test`` itself gives ``"best"``; ``"ambiguous_counts"`` are the counts both occur with in ``train``.
    Returns ``{"learned", "best", "ambiguous_counts"}``.
    """
    blink, switching = MOTIONS.index("blink"), (MOTIONS.index("appear"), MOTIONS.index("disappear"))
    size = int(max(train[1].max(initial=0), test[1].max(initial=0))) + 1

    def tally(labels, counts):
        return (numpy.bincount(counts[labels == blink], minlength=size),
                numpy.bincount(counts[numpy.isin(labels, switching)], minlength=size))

    train_blink, train_switch = tally(*train)
    test_blink, test_switch = tally(*test)
    says_blink = train_blink > train_switch
    learned_errors = test_switch[says_blink].sum() + test_blink[~says_blink].sum()
    best_errors = numpy.minimum(test_blink, test_switch).sum()
    total = len(test[0])
    return {"learned": float(1 - learned_errors / total), "best": float(1 - best_errors / total),
            "ambiguous_counts": [int(c) for c in numpy.flatnonzero((train_blink > 0) & (train_switch > 0))]}
