"""The one resolver: a zoo name, a run directory or an export directory -> its :class:`~zoo.card.Card`.

:func:`resolve` is the only way the zoo finds a model; ``zoo.load``, ``oar
run``, ``oar export``, ``oar serve``, ``zoo.serve``, ``oar compress --model``,
``oar infer``/``oar eval`` and ``oar bench predict`` all take what it takes:

- a **zoo name** (``zoo/catalog.yaml``), its files under the repository;
- a **run directory**: ``config.yaml`` (the resolved config, its task files
  copied beside it, :func:`framework.engine.run_dir.save_run`) with the
  weights of ``oar train`` or ``tools/finetune.py`` (``best.npz``, else
  ``last.npz``: a ``trained`` card) or of ``oar compress`` (``weights.npz``: a
  ``compressed`` card, its ``report.json`` naming the model it came from);
  the card's name is the directory's base name;
- an **export directory** (``manifest.json``, :func:`zoo.exported.export_card`).
"""
import os

from framework.checked import read_json
from framework.config import load_config
from framework.engine.run_dir import RUN_CONFIG, best_checkpoint
from framework.fetch import sha256_of

from . import exported
from .card import Card, CardError, Weights
from .catalog import card as zoo_card
from .tasks import spec_of_type

__all__ = ["resolve", "run_weights", "COMPRESSED_WEIGHTS", "COMPRESS_REPORT", "ACCEPTED"]

COMPRESSED_WEIGHTS = "weights.npz"      # in a run directory of `oar compress`: the compressed weights
COMPRESS_REPORT = "report.json"         # … and what it measured, with the model it came from ("model")
ACCEPTED = ("a zoo model name (`oar list`), a run directory of `oar train` or `oar compress` "
            "(config.yaml and best.npz, last.npz or weights.npz) or an export directory of `oar export` "
            "(manifest.json)")


def resolve(name_or_path):
    """The :class:`~zoo.card.Card` of a zoo name, a run directory or an export directory (module
    docstring); a Card is returned as it is. Anything else is a CardError saying what was given and what
    would be accepted."""
    if isinstance(name_or_path, Card):
        return name_or_path
    if not isinstance(name_or_path, (str, os.PathLike)) or not str(name_or_path):
        raise CardError(f"expected {ACCEPTED}; got {name_or_path!r:.80}")
    given = os.fspath(name_or_path)
    if os.path.isdir(given):
        if exported.is_export(given):
            return exported.export_card(given)
        if os.path.isfile(os.path.join(given, RUN_CONFIG)):
            return _run_card(given)
        raise CardError(f"{given} is a folder that holds no model; expected {ACCEPTED}")
    if os.path.exists(given):
        raise CardError(f"{given} is a file, not a model; expected {ACCEPTED}")
    if os.sep in given or "/" in given:
        raise CardError(f"{given}: no such directory; expected {ACCEPTED}")
    return zoo_card(given)


def run_weights(folder):
    """``(weights file, kind)`` of the run directory ``folder``: ``best.npz``, else ``last.npz`` (``trained``),
    else ``weights.npz`` (``compressed``); ``(best.npz's path, "trained")`` when it holds none, a missing file
    the loader then names."""
    trained = best_checkpoint(folder)
    compressed = os.path.join(folder, COMPRESSED_WEIGHTS)
    if not os.path.isfile(trained) and os.path.isfile(compressed):
        return compressed, "compressed"
    return trained, "trained"


def _run_card(folder):
    """The card of a run directory: ``trained`` with ``best.npz``/``last.npz``, ``compressed`` with
    ``weights.npz``."""
    config = os.path.join(folder, RUN_CONFIG)
    cfg = load_config(config, bases=False)
    task_type = (cfg.get("task") or {}).get("type")
    if not isinstance(task_type, str):
        raise CardError(f"{config}: the config has no task.type; expected {ACCEPTED}")
    spec = spec_of_type(task_type)
    name = os.path.basename(os.path.abspath(folder))
    common = {"name": name, "task": spec.name if spec else task_type, "folder": folder, "origin": "run",
              "config": RUN_CONFIG}
    path, kind = run_weights(folder)
    if kind == "trained" and os.path.isfile(path):
        weights = os.path.relpath(path, folder)
        return Card(kind="trained", weights=Weights(weights, sha256_of(path)),
                    source=f"oar train ({weights} of the run {name})", **common)
    if kind == "compressed":
        report_path = os.path.join(folder, COMPRESS_REPORT)
        report = read_json(report_path, what="a compress report") if os.path.isfile(report_path) else {}
        origin = report.get("model") if isinstance(report.get("model"), str) else "an unknown model"
        return Card(kind="compressed", weights=Weights(COMPRESSED_WEIGHTS, sha256_of(path)),
                    compressed_from=origin, source=f"oar compress ({report.get('strategy', 'compressed')} of "
                    f"{origin})", **common)
    raise CardError(f"{folder} holds {RUN_CONFIG} but no weights (best.npz, last.npz or {COMPRESSED_WEIGHTS}); "
                    f"train it first with `oar train`")
