"""The one-line task API: ``zoo.load(name)`` and ``zoo.Task(task_name, model=None)``.

``load`` returns a ready Task whose ``predict(list)`` returns a list of plain
dicts (LAC: ``{"words", "tags"}``; sentiment: ``{"label", "score"}``; matching:
``{"score", "label"}``; video: ``{"topk": [[label, prob], ...]}``).
"""
import os

from framework import jit
from framework.fetch import oar_home

from . import exported
from .cards import WeightsError, build_card
from .catalog import CatalogError, card
from .registration import register_everything
from .tasks import task_spec

__all__ = ["load", "export", "RUNTIMES", "Task", "WeightsError", "register_everything", "model_card"]


RUNTIMES = ("oar", "onnxruntime")


def program_cache_dir():
    """Where the zoo keeps traced programs across processes: ``$OAR_HOME/programs``
    (:mod:`framework.jit.cache`)."""
    return os.path.join(oar_home(), "programs")


def model_card(name):
    """The card of ``name``: a zoo model's, or the one an export directory recorded. A folder without a
    manifest, a file or a missing path is refused as such rather than as an unknown model name."""
    if exported.is_export(name):
        return exported.card_of(name)
    try:
        return card(name)
    except CatalogError:
        if os.path.isdir(name):
            raise exported.ExportError(f"{name} is a folder but not an oar export: it has no {exported.MANIFEST} "
                                       f"(`oar export NAME --output DIR` writes one)") from None
        if os.path.exists(name):
            raise exported.ExportError(f"{name} is a file; give a zoo model name or an export directory") from None
        if os.sep in name or "/" in name:
            raise exported.ExportError(f"{name}: no such export directory") from None
        raise


def load(name, device="cpu", static=True, runtime="oar"):
    """A ready Task for the zoo model ``name`` (weights checked against the card's sha256), or for the export
    directory ``name`` (``oar export``; no catalog needed, every file checked against the sha256 its
    manifest records; ``runtime="onnxruntime"`` runs its ``model.onnx``).

    ``static`` (default) runs the model through programs traced on first use
    (:func:`framework.jit.to_static` with the task's ``dynamic_axes`` and the exact
    graph passes, so the outputs are the eager model's, bit for bit), on a small
    example cut from the first batch, and kept in ``$OAR_HOME/programs`` for the
    next process (:func:`program_cache_dir`);
    ``static=False`` keeps the eager model. ``runtime="onnxruntime"`` runs the
    network with ONNX Runtime instead (exported once into ``$OAR_HOME/onnx``), under
    the same pre- and post-processing (:func:`zoo.exported.use_onnxruntime`).
    """
    if runtime not in RUNTIMES:
        raise CatalogError(f"unknown runtime {runtime!r} (known: {', '.join(RUNTIMES)})")
    register_everything()
    if exported.is_export(name):
        return exported.load_export(name, device, runtime)
    entry = model_card(name)
    return _ready(build_card(entry).task, entry, device, static or runtime != "oar", runtime)


def _ready(task, entry, device, static, runtime):
    if device and device != "cpu":
        task.model.to(device)
    task.model.eval()
    if static:
        task.model = jit.to_static(task.model, dynamic_axes=task.dynamic_axes, passes=jit.EXACT_PASSES,
                                   cache_dir=program_cache_dir())
    task.device = device
    task.card = entry
    if runtime == "onnxruntime":
        exported.use_onnxruntime(task, entry["name"], entry["task"])
    return task


def export(name, output, formats=("oar",)):
    """Write the export directory of zoo model ``name`` into ``output`` (:func:`zoo.exported.write_export`):
    the traced program, the task's files and weights, a manifest (and ``model.onnx`` for ``"onnx"`` in
    ``formats``); returns the manifest dict."""
    register_everything()
    entry = card(name)
    built = build_card(entry)
    task = _ready(built.task, entry, "cpu", True, "oar")
    return exported.write_export(task, entry, built.cfg, built.weights, output, entry["task"], formats)


def Task(name, model=None, device="cpu"):
    """A Task for ``task_name`` (or an alias such as ``senta``) with ``model`` (default: the task's default)."""
    spec = task_spec(name)
    task_id = spec.name
    if model is None:
        model = spec.default
        if model is None:
            raise CatalogError(f"task {task_id!r} has no zoo model yet; train one with `oar train`")
    task = load(model, device=device)
    if task.card["task"] != task_id:
        raise CatalogError(f"model {model!r} serves task {task.card['task']!r}, not {task_id!r}")
    return task
