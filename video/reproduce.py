"""``oar reproduce video``: train and evaluate the video models on the generated set; the RESULTS.md table.

For each frame model (``configs/video/{tsn,tsm,stnet,nonlocal}_synth.yaml``) :func:`run_frame_model`
trains it (or, with ``from_runs``, takes ``<from_runs>/<name>/best.npz`` of an earlier
``oar train`` run), evaluates the best checkpoint on the test split single-view (the training
config's test pipeline: one clip, one centre crop, as Paddle 2019 tested TSN/TSM/StNet) and
multi-view (:data:`MULTI_VIEW_CLIPS` clips x 3 crops, probabilities averaged) and on an independently drawn
set with wider ranges (:data:`OTHER_RENDERING`), and writes the weights
in float16 to ``zoo/weights/<name>_synth.npz``. Reported: motion top-1 (12 classes), pair-collapsed
accuracy (right time-reversal pair), accuracy inside each pair, training time.
:func:`run` adds the rows of ``video.feature_reproduce.run`` (the feature models) when that module
exists, and draws the confusion matrices of TSN beside TSM (:func:`save_confusion_png`).
"""
import importlib
import os
import time

import numpy

from framework import no_grad
from framework.config import load_config
from framework.engine import export_weights, runner, to_tensors

from .data.synthetic import MOTIONS, REVERSE_PAIRS
from .tasks.common import pair_collapsed_accuracy, per_pair_accuracy

__all__ = ["FRAME_MODELS", "BACKBONE_FROM", "MULTI_VIEW_CLIPS", "OTHER_RENDERING", "multi_view", "other_rendering", "test_scores", "motion_metrics", "run_frame_model",
           "confusion_matrix", "save_confusion_png", "results_table", "run"]

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FRAME_MODELS = ("tsm", "tsn", "stnet", "nonlocal")
# TSN starts from the trained TSM's backbone (as the 2019 TSN started from an ImageNet ResNet): with
# average consensus over independent frames, from scratch it does not find the object within the budget.
BACKBONE_FROM = {"tsn": "tsm"}
MULTI_VIEW_CLIPS = 3
# An independently drawn set with wider ranges than the training set (other seed, object sizes, camera
# shake, noise, lengths and frame rates): a check that the models did not fit one rendering.
OTHER_RENDERING = {"num": 240, "seed": 7, "split": "train",
                   "spec": {"object_size": [0.18, 0.36], "jitter": 0.03, "noise": 9.0, "num_frames": [28, 56],
                            "fps": [12, 30]}}
_COLUMNS = [("model", "model"), ("motion_top1", "motion top-1"), ("motion_top1_multiview", "top-1 multi-view"),
            ("pair_collapsed_acc", "pair-collapsed"), ("inside_pairs", "inside pairs"),
            ("motion_top1_other_rendering", "top-1 other rendering"), ("shape_acc", "shape acc"),
            ("gap", "GAP"), ("hit_at_1", "Hit@1"), ("perr", "PERR"), ("train_minutes", "train min")]


def multi_view(cfg, split="test", clips=MULTI_VIEW_CLIPS):
    """A copy of ``cfg`` whose ``data.<split>`` takes ``clips`` temporal views x 3 crops.

    Frames are resized to 7/6 of the single-view crop on their short side, then
    :class:`~video.data.transforms.ThreeCrop` takes three crops of the single-view size.
    """
    section = dict(cfg["data"][split])
    size = next(t["size"] for t in section["transforms"] if t["type"] == "CenterCrop")
    section["sampler"] = {**section["sampler"], "num_views": clips}
    section["transforms"] = [{"type": "Resize", "short_side": size * 7 // 6}, {"type": "ThreeCrop", "size": size},
                             {"type": "Normalize"}, {"type": "FormatClips"}]
    return {**cfg, "data": {**cfg["data"], split: section}}


def other_rendering(cfg, split="test"):
    """A copy of ``cfg`` whose ``data.<split>`` reads :data:`OTHER_RENDERING` (made on first use)."""
    return {**cfg, "data": {**cfg["data"], split: {**cfg["data"][split], **OTHER_RENDERING}}}


def _train_minutes(run_dir):
    """Training time of a finished run from its metrics log (first evaluation time extrapolated back to step 0)."""
    import json
    with open(os.path.join(run_dir, "metrics.jsonl"), encoding="utf-8") as f:
        records = [json.loads(line) for line in f if line.strip()]
    first, last = records[0], records[-1]
    per_step = (last["time"] - first["time"]) / max(last["step"] - first["step"], 1)
    return round((last["time"] - first["time"] + per_step * first["step"]) / 60, 1)


def test_scores(cfg, checkpoint, split="test", device=None):
    """Class probabilities (N, K) and labels (N,) of ``checkpoint`` on ``data.<split>`` of ``cfg``."""
    train_cfg = runner.check_sections(cfg)
    task = runner.build_task(cfg)
    runner.load_weights(task.model, checkpoint)
    loader = runner.build_loader(runner.build_dataset(cfg, split), task, train_cfg, training=False)
    task.model.eval()
    probs, labels = [], []
    with no_grad():
        for batch in loader:
            probs.append(task.predict_batch(to_tensors(batch, device))["prob"].numpy())
            labels.append(numpy.asarray(batch["label"]))
    return numpy.concatenate(probs), numpy.concatenate(labels)


def motion_metrics(probs, labels):
    """Top-1, pair-collapsed accuracy and per-pair accuracy (``{"a/b": acc}``) of motion scores (N, 12)."""
    return {"motion_top1": float((probs.argmax(1) == labels).mean()),
            "pair_collapsed_acc": pair_collapsed_accuracy(probs, labels, REVERSE_PAIRS),
            "per_pair": per_pair_accuracy(probs, labels, REVERSE_PAIRS)}


def run_frame_model(name, output_root, overrides=(), device=None, quiet=True, from_runs=None):
    """Train (unless ``from_runs``) and evaluate ``<name>_synth``; returns its row dict (with the test
    probabilities under ``"probs"`` and labels under ``"labels"`` for the confusion picture)."""
    cfg = load_config(os.path.join(_ROOT, "configs", "video", f"{name}_synth.yaml"), list(overrides))
    minutes = None
    if from_runs:
        run_dir = os.path.join(from_runs, name)
        minutes = _train_minutes(run_dir)
    else:
        run_dir = os.path.join(output_root, f"{name}_synth")
        start = time.time()
        runner.train(cfg, output_dir=run_dir, device=device, progress=not quiet)
        minutes = round((time.time() - start) / 60, 1)
    best = os.path.join(run_dir, "best.npz")
    probs, labels = test_scores(cfg, best, device=device)
    multi_probs, multi_labels = test_scores(multi_view(cfg), best, device=device)
    other_probs, other_labels = test_scores(other_rendering(cfg), best, device=device)
    row = {"model": f"{name}_synth", "split": "test", **motion_metrics(probs, labels),
           "motion_top1_multiview": float((multi_probs.argmax(1) == multi_labels).mean()),
           "pair_collapsed_acc_multiview": pair_collapsed_accuracy(multi_probs, multi_labels, REVERSE_PAIRS),
           "motion_top1_other_rendering": float((other_probs.argmax(1) == other_labels).mean()),
           "pair_collapsed_acc_other_rendering": pair_collapsed_accuracy(other_probs, other_labels, REVERSE_PAIRS),
           "train_minutes": minutes, "checkpoint": best, "probs": probs, "labels": labels}
    row["inside_pairs"] = float(numpy.mean(list(row["per_pair"].values())))
    return row


def confusion_matrix(probs, labels, num_classes):
    """Counts (K, K): row = true class, column = predicted class."""
    matrix = numpy.zeros((num_classes, num_classes), dtype=numpy.int64)
    numpy.add.at(matrix, (labels, probs.argmax(1)), 1)
    return matrix


def save_confusion_png(panels, path, class_names=MOTIONS):
    """Draw confusion matrices side by side into a PNG. ``panels``: [(title, (K, K) counts), …]."""
    import matplotlib
    matplotlib.use("Agg")
    from matplotlib import pyplot

    figure, axes = pyplot.subplots(1, len(panels), figsize=(6.5 * len(panels), 6.2))
    for axis, (title, matrix) in zip(numpy.atleast_1d(axes), panels):
        axis.imshow(matrix, cmap="Blues")
        ticks = numpy.arange(len(class_names))
        axis.set_xticks(ticks, class_names, rotation=70, fontsize=7)
        axis.set_yticks(ticks, class_names, fontsize=7)
        axis.set_xlabel("predicted")
        axis.set_ylabel("true")
        axis.set_title(title)
        for (i, j), count in numpy.ndenumerate(matrix):
            if count:
                axis.text(j, i, str(count), ha="center", va="center", fontsize=6,
                          color="white" if count > matrix.max() / 2 else "black")
    figure.tight_layout()
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    figure.savefig(path, dpi=110)
    pyplot.close(figure)


def _cell(key, value):
    if value is None:
        return "–"
    if key == "train_minutes":
        return f"{value:.1f}"
    return f"{value:.3f}" if isinstance(value, float) else str(value)


def results_table(rows):
    """The Markdown table of the rows (missing values as –) and a line of per-pair accuracies per model."""
    lines = ["| " + " | ".join(title for _, title in _COLUMNS) + " |", "|" + "---|" * len(_COLUMNS)]
    lines += ["| " + " | ".join(_cell(key, row.get(key)) for key, _ in _COLUMNS) + " |" for row in rows]
    pairs = [f"- {row['model']}: " + ", ".join(f"{MOTIONS[int(k.split('/')[0])]}/{MOTIONS[int(k.split('/')[1])]} "
                                                f"{v:.2f}" for k, v in row["per_pair"].items())
             for row in rows if row.get("per_pair")]
    if pairs:
        lines += ["", "Accuracy inside each time-reversal pair (choosing between its two classes):"] + pairs
    return "\n".join(lines)


def run(entry=None, options=None, from_runs=None, picture=os.path.join(_ROOT, "docs", "video_confusion_tsn_tsm.png")):
    """Train and evaluate the frame models (and the feature models, when ``video.feature_reproduce``
    exists), export the frame models' weights, draw the TSN/TSM confusion matrices; returns
    ``{"metrics": {model: row metrics}, "results_text": Markdown table}`` (a catalog reproduce function)."""
    output_root = getattr(options, "output_root", None) or os.path.join("outputs", "reproduce")
    overrides = getattr(options, "overrides", None) or ()
    device, quiet = getattr(options, "device", None), getattr(options, "quiet", True)
    rows = []
    for name in FRAME_MODELS:
        extra = ()
        if name in BACKBONE_FROM and from_runs is None:
            extra = (f"model.pretrained={os.path.join(output_root, BACKBONE_FROM[name] + '_synth', 'best.npz')}",)
        row = run_frame_model(name, output_root, tuple(overrides) + extra, device, quiet, from_runs)
        row["weights_sha256"] = export_weights(row["checkpoint"], os.path.join(_ROOT, "zoo", "weights",
                                                                               f"{name}_synth.npz"))
        rows.append(row)
    by_name = {row["model"]: row for row in rows}
    save_confusion_png([(f"{m} (test, single view)", confusion_matrix(by_name[m]["probs"], by_name[m]["labels"],
                                                                      len(MOTIONS)))
                        for m in ("tsn_synth", "tsm_synth")], picture)
    try:
        features = importlib.import_module("video.feature_reproduce")
    except ImportError:
        features = None
    if features is not None and from_runs is None:
        rows += features.run(options)["rows"]
    metrics = {row["model"]: {k: v for k, v in row.items() if k not in ("probs", "labels", "checkpoint", "model")}
               for row in rows}
    return {"metrics": metrics, "results_text": results_table(rows)}


def main(argv=None):
    """``python -m video.reproduce [--from_runs DIR]``: the table into docs/RESULTS.md (block ``video``), the
    weights and the picture; prints the table and the metrics."""
    import argparse
    import json
    import zoo.commands
    zoo.commands._register_everything()
    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("--from_runs", help="evaluate DIR/<model>/best.npz instead of training")
    args = parser.parse_args(argv)
    from zoo.reproduce import update_results
    result = run(from_runs=args.from_runs)
    update_results("video", result["results_text"])
    print(result["results_text"])
    print(json.dumps(result["metrics"], indent=1, default=float))


if __name__ == "__main__":
    main()
