"""The one-line task API: ``zoo.load(name_or_dir)``, ``zoo.export`` and ``zoo.Task(task_name, model=None)``.

``load`` returns a ready Task whose ``predict(list)`` returns a list of plain
dicts (LAC: ``{"words", "tags"}``; sentiment: ``{"label", "score"}``; matching:
``{"score", "label"}``; video: ``{"topk": [[label, prob], ...]}``), for a zoo
model, a run directory or an export directory alike (:func:`zoo.resolver.resolve`).
"""
from .build import RUNTIMES, WeightsError, build, ready
from .card import CardError
from .resolver import resolve
from .registration import register_everything
from .tasks import task_spec
from . import exported

__all__ = ["load", "export", "RUNTIMES", "Task", "WeightsError", "register_everything", "resolve"]


def load(name_or_dir, device="cpu", static=True, runtime="oar"):
    """A ready Task for ``name_or_dir``: a zoo model (weights checked against the card's sha256), a run
    directory of ``oar train``/``oar compress``, or an export directory (``oar export``; every file checked
    against the sha256 its manifest records) — :func:`zoo.resolver.resolve`.

    ``static`` (default) runs the model through programs traced on first use
    (:func:`framework.jit.to_static` with the task's ``dynamic_axes`` and the exact
    graph passes, so the outputs are the eager model's, bit for bit), kept in
    ``$OAR_HOME/programs`` for the next process (an export's saved program is
    used as it is); ``static=False`` keeps the eager model.
    ``runtime="onnxruntime"`` runs the network with ONNX Runtime instead (an
    export's ``model.onnx``, else exported once into ``$OAR_HOME/onnx``), under the
    same pre- and post-processing (:func:`zoo.build.ready`).
    """
    if runtime not in RUNTIMES:
        raise CardError(f"unknown runtime {runtime!r} (known: {', '.join(RUNTIMES)})")
    card = resolve(name_or_dir)
    return ready(build(card, runtime).task, card, device, static, runtime)


def export(name_or_dir, output, formats=("oar",)):
    """Write the export directory of ``name_or_dir`` (anything :func:`load` takes) into ``output``
    (:func:`zoo.exported.write_export`): the traced program, the task's files and weights, a manifest
    (and ``model.onnx`` for ``"onnx"`` in ``formats``); returns the manifest dict."""
    card = resolve(name_or_dir)
    built = build(card)
    task = ready(built.task, card, "cpu", True, "oar")
    return exported.write_export(task, card, built.cfg, built.weights, output, formats)


def Task(name, model=None, device="cpu"):
    """A Task for ``task_name`` (or an alias such as ``senta``) with ``model`` (default: the task's default)."""
    spec = task_spec(name)
    if model is None:
        model = spec.default
        if model is None:
            raise CardError(f"task {spec.name!r} has no zoo model yet; train one with `oar train`")
    task = load(model, device=device)
    if task.card.task != spec.name:
        raise CardError(f"model {model!r} serves task {task.card.task!r}, not {spec.name!r}")
    return task
