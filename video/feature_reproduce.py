"""Train and evaluate the three feature models on the generated set: their rows of the video table.

``run(options)`` trains ``configs/video/{attention_cluster,attention_lstm,nextvlad}_synth.yaml`` (each on
the frame features of the shipped backbone, ``zoo/weights/feature_backbone_synth.npz``, extracted once into
``$OAR_HOME``), evaluates the best checkpoint on the test split and returns one row per model: motion
top-1 (argmax over the 12 motion classes), pair-collapsed accuracy (the right time-reversal pair),
shape accuracy (argmax over the 6 shapes), GAP, Hit@1, PERR, mAP and the training time.
``oar reproduce video`` puts them into the table of ``docs/RESULTS.md``.
"""
import os

from framework.config import load_config
from framework.engine import runner

from .feature_backbone import SyntheticFeatures  # noqa: F401  (registers the dataset)
from .models import attention_cluster, attention_lstm, nextvlad  # noqa: F401  (register the models)
from .tasks import feature_recognition  # noqa: F401  (registers the task and metric)

__all__ = ["MODELS", "METRIC_NAMES", "run", "run_one"]

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
    """The rows of the three feature models: ``{"rows": [row, ...], "models": [...]}``.

    ``options`` (an argparse namespace or similar) may carry ``output_root`` (default ``outputs/reproduce``),
    ``device`` and ``quiet``; ``models`` restricts the list. ``overrides`` apply to every model's config
    (e.g. the backbone weights to extract features with).
    """
    output_root = getattr(options, "output_root", None) or os.path.join("outputs", "reproduce")
    chosen = getattr(options, "models", None) or MODELS
    rows = [run_one(name, output_root, overrides, getattr(options, "device", None), getattr(options, "quiet", True),
                    from_runs) for name in chosen]
    return {"rows": rows, "models": list(chosen)}
