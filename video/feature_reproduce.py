"""Train and evaluate the three feature models on the generated set: their rows of the video table.

``run(options)`` trains ``configs/video/{attention_cluster,attention_lstm,nextvlad}_synth.yaml`` (each on
the frame features of the shipped backbone, ``zoo/weights/feature_backbone_synth.npz``, extracted once into
``$OAR_HOME``), evaluates the best checkpoint on the test split and returns one row per model: motion
top-1 (argmax over the 12 motion classes), pair-collapsed accuracy (the right time-reversal pair),
shape accuracy (argmax over the 6 shapes), GAP, Hit@1, PERR, mAP and the training time.
``oar reproduce video`` puts them into the table of ``docs/RESULTS.md``.
"""
import os

import numpy

from framework.config import load_config
from framework.engine import runner
from vision.models.weights import read_weights

from .data.synthetic import MOTIONS, SHAPES
from .data.synthetic_features import SyntheticFeatures  # noqa: F401  (registers the dataset)
from .models import attention_cluster, attention_lstm, nextvlad  # noqa: F401  (register the models)
from .tasks import feature_recognition  # noqa: F401  (registers the task and metric)
from .data.features import resolve_path

__all__ = ["MODELS", "METRIC_NAMES", "run", "run_one", "visible_counts", "orderless_bound", "count_rule_bound"]

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODELS = ("attention_cluster", "attention_lstm", "nextvlad")
METRIC_NAMES = {"motion_acc": "motion_top1", "pair_acc": "pair_collapsed_acc", "shape_acc": "shape_acc",
                "gap": "gap", "hit_at_one": "hit_at_1", "perr": "perr", "map": "map"}


def run_one(name, output_root, overrides=(), device=None, quiet=True, from_runs=None):
    """Train ``configs/video/<name>_synth.yaml`` into ``output_root/<name>_synth`` (or take
    ``from_runs/<name>/best.npz``) and evaluate it on the test split; returns the row dict (model, metrics
    rounded to 4 places, train_minutes, checkpoint)."""
    from .reproduce import _trained
    cfg = load_config(os.path.join(_ROOT, "configs", "video", f"{name}_synth.yaml"), list(overrides))
    if not from_runs:
        runner.build_dataset(cfg, "train")          # extracts the features once, outside the timed training
    best, minutes = _trained(cfg, name, output_root, device, quiet, from_runs)
    metrics = runner.evaluate_config(cfg, best, split="test", device=device)
    row = {"model": f"{name}_synth", "labels": "multilabel (12 motions + 6 shapes)", "split": "test"}
    row.update({label: round(float(metrics[key]), 4) for key, label in METRIC_NAMES.items() if key in metrics})
    row.update({"train_minutes": minutes, "checkpoint": best})
    return row


def run(options, overrides=(), from_runs=None):
    """The rows of the three feature models and the order-blind bound of their data: ``{"rows": [row, ...],
    "models": [...], "orderless_bound": see :func:`orderless_bound`}``.

    ``options`` (an argparse namespace or similar) may carry ``output_root`` (default ``outputs/reproduce``),
    ``device`` and ``quiet``; ``models`` restricts the list. ``overrides`` apply to every model's config
    (e.g. the backbone weights to extract features with).
    """
    output_root = getattr(options, "output_root", None) or os.path.join("outputs", "reproduce")
    chosen = getattr(options, "models", None) or MODELS
    rows = [run_one(name, output_root, overrides, getattr(options, "device", None), getattr(options, "quiet", True),
                    from_runs) for name in chosen]
    data_cfg = load_config(os.path.join(_ROOT, "configs", "video", f"{chosen[0]}_synth.yaml"), list(overrides))
    return {"rows": rows, "models": list(chosen), "orderless_bound": orderless_bound(data_cfg)}


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
