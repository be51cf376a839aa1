"""``oar reproduce video``: train and evaluate the video models on the generated set; the RESULTS.md table.

The order follows the 2019 recipe (image network first, video models from it):

1. the image backbone (``configs/video/feature_backbone_synth.yaml``, trained per frame on the set's
   frames, see :mod:`video.feature_backbone`) is trained and exported to
   ``zoo/weights/feature_backbone_synth.npz``;
2. each frame model (``configs/video/{tsm,tsn,stnet,nonlocal}_synth.yaml``, whose ``model.pretrained``
   names that file) is trained by :func:`run_frame_model` and evaluated on the test split single-view
   (one clip, one centre crop, as Paddle 2019 tested TSN/TSM/StNet), multi-view
   (:data:`MULTI_VIEW_CLIPS` clips x 3 crops, probabilities averaged) and on an independently drawn
   set with wider ranges (:data:`OTHER_RENDERING`);
3. the feature models train on the backbone's frame features (:mod:`video.feature_reproduce`).

Every model's weights go to ``zoo/weights/<name>_synth.npz`` in float16. Reported: motion top-1 (12
classes), pair-collapsed accuracy (right time-reversal pair), accuracy inside each pair, shape accuracy,
GAP/Hit@1/PERR for the multi-label models, training time, the order-blind bound of the pair-collapsed
accuracy (:func:`video.feature_reproduce.orderless_bound`); and the confusion matrices of TSN beside TSM
(:func:`save_confusion_png`). ``from_runs`` evaluates ``<from_runs>/<name>/best.npz`` of earlier
``oar train`` runs instead of training.
"""
import os
import time

import numpy

from framework import no_grad
from framework.config import load_config
from framework.engine import export_weights, runner, to_tensors

from .data.synthetic import MOTIONS, REVERSE_PAIRS
from .tasks.common import pair_collapsed_accuracy, per_pair_accuracy

__all__ = ["FRAME_MODELS", "BACKBONE_WEIGHTS", "MULTI_VIEW_CLIPS", "OTHER_RENDERING", "multi_view", "other_rendering",
           "test_scores", "motion_metrics", "train_backbone", "run_frame_model", "confusion_matrix",
           "save_confusion_png", "results_table", "bound_text", "run", "reproduce_video"]

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FRAME_MODELS = ("tsm", "tsn", "stnet", "nonlocal")
BACKBONE_WEIGHTS = "zoo/weights/feature_backbone_synth.npz"  # the image network all video models start from
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


def _trained(cfg, name, output_root, device, quiet, from_runs):
    """(best checkpoint, training minutes) of ``cfg``: trained into ``output_root/<name>_synth``, or taken
    from ``from_runs/<name>``."""
    if from_runs:
        run_dir = os.path.join(from_runs, name)
        return os.path.join(run_dir, "best.npz"), _train_minutes(run_dir)
    run_dir = os.path.join(output_root, f"{name}_synth")
    start = time.time()
    runner.train(cfg, output_dir=run_dir, device=device, progress=not quiet)
    return os.path.join(run_dir, "best.npz"), round((time.time() - start) / 60, 1)


def train_backbone(output_root, export_to, overrides=(), device=None, quiet=True, from_runs=None):
    """Train (unless ``from_runs``) the per-frame image backbone, write it in float16 to ``export_to``;
    returns its row (test-split shape/visibility accuracy, centre and angle errors, sha256)."""
    cfg = load_config(os.path.join(_ROOT, "configs", "video", "feature_backbone_synth.yaml"), list(overrides))
    best, minutes = _trained(cfg, "feature_backbone", output_root, device, quiet, from_runs)
    metrics = runner.evaluate_config(cfg, best, split="test", device=device)
    row = {"model": "feature_backbone_synth", "split": "test", "train_minutes": minutes,
           **{k: round(float(v), 4) for k, v in metrics.items() if k in ("shape_acc", "visible_acc", "xy_mae",
                                                                         "angle_mae_deg")}}
    row["sha256"] = export_weights(best, export_to)
    return row


def run_frame_model(name, output_root, overrides=(), device=None, quiet=True, from_runs=None):
    """Train (unless ``from_runs``) and evaluate ``<name>_synth``; returns its row dict (with the test
    probabilities under ``"probs"`` and labels under ``"labels"`` for the confusion picture)."""
    cfg = load_config(os.path.join(_ROOT, "configs", "video", f"{name}_synth.yaml"), list(overrides))
    best, minutes = _trained(cfg, name, output_root, device, quiet, from_runs)
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


def _card_metrics(row):
    keys = ("motion_top1", "pair_collapsed_acc", "motion_top1_multiview", "motion_top1_other_rendering",
            "shape_acc", "gap", "hit_at_1", "perr", "map")
    return {"split": "test", **{k: round(float(row[k]), 4) for k in keys if row.get(k) is not None}}


def run(options=None, from_runs=None):
    """Backbone, frame models, feature models (see the module docstring); returns ``{"rows": [...],
    "backbone": row, "results_text": Markdown}``. Weights and the picture go where
    :func:`zoo.reproduce.destination` says (under the dry-run folder with ``options.dry_run``)."""
    from zoo.reproduce import destination
    from . import feature_reproduce
    output_root = getattr(options, "output_root", None) or os.path.join("outputs", "reproduce")
    overrides = tuple(getattr(options, "overrides", None) or ())
    device, quiet = getattr(options, "device", None), getattr(options, "quiet", True)
    backbone = destination(options, BACKBONE_WEIGHTS)
    backbone_row = train_backbone(output_root, backbone, overrides, device, quiet, from_runs)
    uses_backbone = (f"model.pretrained={backbone}",)
    rows = []
    for name in FRAME_MODELS:
        row = run_frame_model(name, output_root, overrides + uses_backbone, device, quiet, from_runs)
        row["weights"] = destination(options, f"zoo/weights/{name}_synth.npz")
        row["sha256"] = export_weights(row["checkpoint"], row["weights"])
        rows.append(row)
    by_name = {row["model"]: row for row in rows}
    save_confusion_png([(f"{m} (test, single view)", confusion_matrix(by_name[m]["probs"], by_name[m]["labels"],
                                                                      len(MOTIONS)))
                        for m in ("tsn_synth", "tsm_synth")],
                       destination(options, "docs/video_confusion_tsn_tsm.png"))
    feature_overrides = overrides + tuple(f"data.{split}.backbone_weights={backbone}" for split in
                                          ("train", "eval", "test")) + (f"task.backbone_weights={backbone}",)
    features = feature_reproduce.run(options, feature_overrides, from_runs)
    for row in features["rows"]:
        row["weights"] = destination(options, f"zoo/weights/{row['model']}.npz")
        row["sha256"] = export_weights(row["checkpoint"], row["weights"])
        rows.append(row)
    text = "\n\n".join([results_table(rows), backbone_table(backbone_row), bound_text(features["orderless_bound"])])
    return {"rows": rows, "backbone": backbone_row, "results_text": text}


def backbone_table(row):
    """One Markdown line on the image backbone's own test metrics."""
    return (f"Image backbone (`configs/video/feature_backbone_synth.yaml`, per frame, test split): shape "
            f"{row.get('shape_acc', 0):.3f}, visibility {row.get('visible_acc', 0):.3f}, centre error "
            f"{row.get('xy_mae', 0):.3f} of the frame, angle error {row.get('angle_mae_deg', 0):.1f} degrees, "
            f"{row['train_minutes']:.1f} min.")


def bound_text(bound):
    """One Markdown line on :func:`video.feature_reproduce.orderless_bound`."""
    counts = bound["ambiguous_counts"]
    return (f"Order-blind bound (pair-collapsed, test split, from the frames a feature model sees): "
            f"{bound['learned']:.3f} with the rule learned on the training videos, {bound['best']:.3f} with the "
            f"best rule for the test split; blink and appear/disappear share the visible-frame counts "
            f"{', '.join(map(str, counts)) or 'none'}.")


def card_updates(result):
    """``{card name: {"metrics", "weights"}}`` of every model :func:`run` measured (the feature models'
    weights also name the backbone they need, with its sha256)."""
    backbone = {"backbone": BACKBONE_WEIGHTS, "backbone_sha256": result["backbone"]["sha256"]}
    models = {}
    for row in result["rows"]:
        weights = {"path": f"zoo/weights/{row['model']}.npz", "sha256": row["sha256"]}
        if row["model"].split("_synth")[0] not in FRAME_MODELS:
            weights.update(backbone)
        models[row["model"]] = {"metrics": _card_metrics(row), "weights": weights}
    return models


def reproduce_video(entry, options):
    """The catalog's reproduce function of the video cards: :func:`run`, then ``{"metrics", "weights"}`` of
    ``entry`` and, under ``"models"``, of every other video card."""
    result = run(options)
    models = card_updates(result)
    own = models.pop(entry["name"])
    return {**own, "models": models, "results_name": "video", "results_text": result["results_text"]}


def main(argv=None):
    """``python -m video.reproduce --from_runs DIR``: evaluate DIR/<model>/best.npz of earlier ``oar train``
    runs (feature_backbone, tsm, tsn, stnet, nonlocal, attention_cluster, attention_lstm, nextvlad), export
    their weights, and rewrite the video cards and the ``video`` block of docs/RESULTS.md."""
    import argparse
    import datetime
    import types
    import zoo.commands
    from zoo.catalog import card, write_card
    from zoo.reproduce import update_results
    zoo.commands._register_everything()
    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("--from_runs", required=True, help="folder of finished runs, one subfolder per model")
    args = parser.parse_args(argv)
    options = types.SimpleNamespace(from_runs=args.from_runs)
    result = run(options, from_runs=args.from_runs)
    today = datetime.date.today().isoformat()
    for name, measured in card_updates(result).items():
        entry = card(name)
        write_card({**entry, "metrics": measured["metrics"], "weights": {**entry["weights"], **measured["weights"]},
                    "date": today})
    update_results("video", result["results_text"])
    print(result["results_text"])


if __name__ == "__main__":
    main()
