"""``oar reproduce video``: train and evaluate the video models on the generated set; the RESULTS.md table.

The order follows the 2019 recipe (image network first, video models from it):

1. the image backbone (``configs/video/feature_backbone_synth.yaml``, trained per frame on the set's
   frames, see :mod:`video.data.frame_attributes`) is trained and exported to
   ``zoo/weights/feature_backbone_synth.npz`` (:func:`train_backbone`);
2. each frame model (``configs/video/{tsm,tsn,stnet,nonlocal}_synth.yaml``, whose ``model.pretrained``
   names that file) is trained by :func:`run_frame_model` and evaluated on the test split single-view
   (one clip, one centre crop, as Paddle 2019 tested TSN/TSM/StNet), multi-view (3 clips x 3 crops,
   probabilities averaged), on an independently drawn set with wider ranges ("other rendering") and on the
   held-out set of the second, independently written renderer (:mod:`video.data.heldout`)
   (:func:`video.tasks.evaluation.evaluate_motions`); TSN is the two-stream model: its RGB and flow streams
   (``configs/video/tsn_{rgb,flow}_synth.yaml``) train separately and are fused into one checkpoint
   (:func:`run_two_stream`);
3. the feature models (``configs/video/{attention_cluster,attention_lstm,nextvlad}_synth.yaml``) train on
   the backbone's frame features, extracted once into ``$OAR_HOME`` (:func:`run_feature_models`), and are
   also scored on the held-out renderer's videos from the files
   (:func:`video.tasks.evaluation.heldout_feature_metrics`).

Each model trains, and its best (or last) checkpoint is evaluated and exported, through the shared runner
(:func:`zoo.reproduce.train_and_measure`, or its steps where the evaluation is the frame models' own).
Every model's weights go to ``zoo/weights/<name>_synth.npz`` in float16. Reported: motion top-1 (12
classes), pair-collapsed accuracy (right time-reversal pair), accuracy inside each pair, shape accuracy,
GAP/Hit@1/PERR for the multi-label models, training time, the order-blind bound of the pair-collapsed
accuracy (:func:`video.tasks.evaluation.orderless_bound`); and the confusion matrices of TSN beside TSM
(:func:`save_confusion_png`). ``from_runs`` evaluates ``<from_runs>/<name>/best.npz`` of earlier
``oar train`` runs instead of training (``oar reproduce video --from_runs DIR``).
"""
import os

import numpy

from framework.engine import export_weights, load_checkpoint, runner
from framework.serialization import save
from video.data.synthetic import MOTIONS
from video.metrics import confusion_matrix
from video.models.two_stream import fuse_states
from video.tasks.evaluation import evaluate_motions, heldout_feature_metrics, orderless_bound, stream_scores

from ..card import Card, Weights
from ..catalog import ROOT
from . import recipe_config, destination, train_and_measure, train_checkpoint

__all__ = ["FRAME_MODELS", "FEATURE_MODELS", "TSN_STREAMS", "BACKBONE_WEIGHTS", "FEATURE_METRICS",
           "train_backbone", "run_frame_model", "run_two_stream", "run_feature_model", "run_feature_models",
           "save_confusion_png", "results_table", "two_stream_text", "backbone_table", "bound_text", "card_updates",
           "run", "reproduce_video"]

FRAME_MODELS = ("tsm", "tsn", "stnet", "nonlocal")
FEATURE_MODELS = ("attention_cluster", "attention_lstm", "nextvlad")
TSN_STREAMS = ("tsn_rgb", "tsn_rgbdiff")  # the two-stream TSN's networks, each trained by its own config
BACKBONE_WEIGHTS = "zoo/weights/feature_backbone_synth.npz"  # the image network all video models start from
BACKBONE_METRICS = ("shape_acc", "visible_acc", "xy_mae", "angle_mae_deg")
# the feature configs' metric names -> the table's
FEATURE_METRICS = {"motion_acc": "motion_top1", "pair_acc": "pair_collapsed_acc", "shape_acc": "shape_acc",
                   "gap": "gap", "hit_at_one": "hit_at_1", "perr": "perr", "map": "map"}
_COLUMNS = [("model", "model"), ("motion_top1", "motion top-1"), ("motion_top1_multiview", "top-1 multi-view"),
            ("pair_collapsed_acc", "pair-collapsed"), ("inside_pairs", "inside pairs"),
            ("motion_top1_other_rendering", "top-1 other rendering"), ("motion_top1_heldout", "top-1 held-out renderer"),
            ("pair_collapsed_acc_heldout", "pair-collapsed held-out"), ("shape_acc", "shape acc"),
            ("shape_acc_heldout", "shape held-out"),
            ("gap", "GAP"), ("hit_at_1", "Hit@1"), ("perr", "PERR"), ("train_minutes", "train min")]


def _entry(name):
    """The card of ``<name>_synth`` for the shared runner: its config and weights file."""
    return Card(name=f"{name}_synth", task="video", kind="trained", folder=ROOT,
                config=f"configs/video/{name}_synth.yaml", weights=Weights(f"zoo/weights/{name}_synth.npz"))


def _run_of(name, from_runs):
    """The finished run ``<from_runs>/<name>`` to evaluate instead of training (None: train)."""
    return os.path.join(from_runs, name) if from_runs else None


def train_backbone(options, from_runs=None):
    """Train (unless ``from_runs``) the per-frame image backbone and write it in float16 to
    :data:`BACKBONE_WEIGHTS` (under the dry-run folder with ``options.dry_run``); returns its row (test-split
    shape/visibility accuracy, centre and angle errors, training minutes, sha256)."""
    outcome = train_and_measure(_entry("feature_backbone"), options, from_run=_run_of("feature_backbone", from_runs))
    metrics = outcome["metrics"]
    return {"model": "feature_backbone_synth", "split": "test", "train_minutes": outcome["train_minutes"],
            **{k: metrics[k] for k in BACKBONE_METRICS if k in metrics}, "sha256": outcome["weights"].sha256}


def run_frame_model(name, options, overrides=(), from_runs=None):
    """Train (unless ``from_runs``), evaluate (:func:`video.tasks.evaluation.evaluate_motions`) and export
    ``<name>_synth``; returns its row dict (with the test probabilities under ``"probs"`` and labels under
    ``"labels"`` for the confusion picture)."""
    entry = _entry(name)
    cfg = recipe_config(entry, options, overrides)
    best, _, minutes = train_checkpoint(cfg, entry.name, options, _run_of(name, from_runs))
    row = {"model": entry.name, "split": "test", **evaluate_motions(cfg, best, device=options.device),
           "train_minutes": minutes, "checkpoint": best,
           "weights": destination(options, entry.weights.path)}
    row["sha256"] = export_weights(best, row["weights"])
    return row


def run_two_stream(options, overrides=(), from_runs=None):
    """TSN's two streams (:data:`TSN_STREAMS`) trained (or taken from ``from_runs/<stream>``) with
    ``overrides``, their best checkpoints fused (:func:`video.models.two_stream.fuse_states`) into
    ``<output_root>/tsn/best.npz``, and ``tsn_synth`` (the two-stream config) evaluated and exported like any
    frame model; the row also holds each stream's and the fused model's dev and test top-1
    (``<stream>_dev_top1`` …, ``dev_top1``, :func:`video.tasks.evaluation.stream_scores`) and the streams'
    training minutes summed."""
    entry = _entry("tsn")
    checkpoints, minutes = {}, []
    for stream in TSN_STREAMS:
        cfg = recipe_config(_entry(stream), options, overrides)
        checkpoints[stream], _, took = train_checkpoint(cfg, f"{stream}_synth", options, _run_of(stream, from_runs))
        minutes.append(took)
    fused = os.path.join(options.output_root, "tsn", "best.npz")
    os.makedirs(os.path.dirname(fused), exist_ok=True)
    save({"model": fuse_states(*(load_checkpoint(checkpoints[s])["model"] for s in TSN_STREAMS))}, fused)
    cfg = recipe_config(entry, options)
    row = {"model": entry.name, "split": "test"}
    for split, key in (("eval", "dev"), ("test", "test")):
        scores = stream_scores(cfg, fused, split, options.device)
        for stream, part in zip(TSN_STREAMS, ("rgb", "motion")):
            row[f"{stream}_{key}_top1"] = float((scores[part].argmax(1) == scores["labels"]).mean())
        if key == "dev":
            row["dev_top1"] = float((scores["fused"].argmax(1) == scores["labels"]).mean())
    row.update({**evaluate_motions(cfg, fused, device=options.device), "checkpoint": fused,
                "train_minutes": sum(minutes) if None not in minutes else None,
                "weights": destination(options, entry.weights.path)})
    row["sha256"] = export_weights(fused, row["weights"])
    return row


def two_stream_text(row):
    """One Markdown line on the two-stream TSN's streams (dev and test top-1 of each and of the fusion)."""
    parts = [f"{stream} dev {row[f'{stream}_dev_top1']:.3f} / test {row[f'{stream}_test_top1']:.3f}"
             for stream in TSN_STREAMS]
    return (f"Two-stream TSN (`configs/video/tsn_synth.yaml`, scores fused 1 : 1.5): {'; '.join(parts)}; "
            f"fused dev {row['dev_top1']:.3f} / test {row['motion_top1']:.3f}.")


def run_feature_model(name, options, overrides=(), from_runs=None):
    """Train ``configs/video/<name>_synth.yaml`` (or take ``from_runs/<name>``), evaluate it on the test split
    and export it; returns the row dict (model, metrics rounded to 4 places, train_minutes, checkpoint,
    weights, sha256)."""
    entry = _entry(name)
    cfg = recipe_config(entry, options, overrides)
    if not from_runs:
        runner.build_dataset(cfg, "train")          # extracts the features once, outside the timed training
    outcome = train_and_measure(entry, options, cfg=cfg, from_run=_run_of(name, from_runs))
    metrics = outcome["metrics"]
    row = {"model": entry.name, "labels": "multilabel (12 motions + 6 shapes)", "split": "test"}
    row.update({label: metrics[key] for key, label in FEATURE_METRICS.items() if key in metrics})
    row.update(heldout_feature_metrics(cfg, outcome["checkpoint"], device=options.device))
    row.update({"train_minutes": outcome["train_minutes"], "checkpoint": outcome["checkpoint"],
                "weights": destination(options, entry.weights.path), "sha256": outcome["weights"].sha256})
    return row


def run_feature_models(options, overrides=(), from_runs=None):
    """The rows of the three feature models and the order-blind bound of their data: ``{"rows": [row, ...],
    "models": [...], "orderless_bound": see :func:`video.tasks.evaluation.orderless_bound`}``.

    ``options.models`` (when set) restricts the list; ``overrides`` apply to every model's config (e.g. the
    backbone weights to extract features with).
    """
    chosen = getattr(options, "models", None) or FEATURE_MODELS
    rows = [run_feature_model(name, options, overrides, from_runs) for name in chosen]
    data_cfg = recipe_config(_entry(chosen[0]), options, overrides)
    return {"rows": rows, "models": list(chosen), "orderless_bound": orderless_bound(data_cfg)}


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
            "motion_top1_heldout", "pair_collapsed_acc_heldout", "shape_acc", "shape_acc_heldout", "gap", "hit_at_1",
            "perr", "map")
    return {"split": "test", **{k: round(float(row[k]), 4) for k in keys if row.get(k) is not None}}


def run(options, from_runs=None):
    """Backbone, frame models, feature models (see the module docstring); returns ``{"rows": [...],
    "backbone": row, "results_text": Markdown}``.

    ``options`` carries ``output_root``, ``overrides`` (for every model), ``device``, ``quiet`` and
    ``dry_run``, as ``oar reproduce`` gives them. Weights and the picture go where
    :func:`zoo.reproduce.destination` says (under the dry-run folder with ``options.dry_run``).
    """
    backbone_row = train_backbone(options, from_runs)
    backbone = destination(options, BACKBONE_WEIGHTS)
    pretrained = (f"model.pretrained={backbone}",)
    rows = [run_two_stream(options, pretrained, from_runs) if name == "tsn" else
            run_frame_model(name, options, pretrained, from_runs) for name in FRAME_MODELS]
    by_name = {row["model"]: row for row in rows}
    save_confusion_png([(f"{m} (test, single view)", confusion_matrix(by_name[m]["probs"], by_name[m]["labels"],
                                                                      len(MOTIONS)))
                        for m in ("tsn_synth", "tsm_synth")],
                       destination(options, "docs/video_confusion_tsn_tsm.png"))
    feature_overrides = tuple(f"data.{split}.backbone_weights={backbone}" for split in
                              ("train", "eval", "test")) + (f"task.backbone_weights={backbone}",)
    features = run_feature_models(options, feature_overrides, from_runs)
    rows += features["rows"]
    text = "\n\n".join([results_table(rows), two_stream_text(by_name["tsn_synth"]), backbone_table(backbone_row),
                        bound_text(features["orderless_bound"])])
    return {"rows": rows, "backbone": backbone_row, "results_text": text}


def backbone_table(row):
    """One Markdown line on the image backbone's own test metrics."""
    return (f"Image backbone (`configs/video/feature_backbone_synth.yaml`, per frame, test split): shape "
            f"{row.get('shape_acc', 0):.3f}, visibility {row.get('visible_acc', 0):.3f}, centre error "
            f"{row.get('xy_mae', 0):.3f} of the frame, angle error {row.get('angle_mae_deg', 0):.1f} degrees, "
            f"{_cell('train_minutes', row['train_minutes'])} min.")


def bound_text(bound):
    """One Markdown line on :func:`video.tasks.evaluation.orderless_bound`."""
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
    result = run(options, from_runs=getattr(options, "from_runs", None))
    models = card_updates(result)
    own = models.pop(entry.name)
    return {**own, "models": models, "results_name": "video", "results_text": result["results_text"]}
