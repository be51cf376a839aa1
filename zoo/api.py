"""The one-line task API: ``zoo.load(name)`` and ``zoo.Task(task_name, model=None)``.

``load`` returns a ready Task whose ``predict(list)`` returns a list of plain
dicts (LAC: ``{"words", "tags"}``; sentiment: ``{"label", "score"}``; matching:
``{"score", "label"}``; video: ``{"topk": [[label, prob], ...]}``).
"""
import os

from framework import jit
from framework.config import load_config
from framework.engine import runner
from framework.fetch import FetchError, oar_home, sha256_of

from . import exported
from .catalog import ROOT, CatalogError, card
from .tasks import task_spec

__all__ = ["load", "export", "RUNTIMES", "Task", "WeightsError", "register_everything", "LOADERS",
           "load_compressed_task", "model_card"]


class WeightsError(FetchError):
    """Shipped weights are missing or do not match their card's sha256."""


def register_everything():
    """Import the packages that register models, datasets, metrics and tasks (the zoo sits above them all)."""
    from . import toy  # noqa: F401
    import nlp.lac.data  # noqa: F401
    import nlp.lac.metrics  # noqa: F401
    import nlp.lac.model  # noqa: F401
    import nlp.lac.task  # noqa: F401
    import nlp.senta.data  # noqa: F401
    import nlp.senta.model  # noqa: F401
    import nlp.senta.task  # noqa: F401
    import nlp.simnet.data  # noqa: F401
    import nlp.simnet.metrics  # noqa: F401
    import nlp.simnet.model  # noqa: F401
    import nlp.simnet.task  # noqa: F401
    import video.data  # noqa: F401
    import video.metrics  # noqa: F401
    import vision.data  # noqa: F401
    import vision.metrics  # noqa: F401
    import vision.models  # noqa: F401
    import vision.tasks  # noqa: F401
    import video.models  # noqa: F401
    import video.tasks  # noqa: F401


def _checked_file(entry, relative, sha256):
    path = os.path.join(ROOT, relative or "")
    if not relative or not os.path.isfile(path):
        raise WeightsError(f"model {entry['name']!r}: file {path} is missing; "
                           f"recreate it with `oar reproduce {entry['name']}`")
    if sha256 and sha256_of(path) != sha256:
        raise WeightsError(f"model {entry['name']!r}: {path} has sha256 {sha256_of(path)}, the card says "
                           f"{sha256}; refusing to load it")
    return path


def checked_weights(entry):
    """The path of the card's weights file; it and every companion file the card lists as ``<name>`` with a
    ``<name>_sha256`` (a vocabulary, a feature backbone) must exist and match."""
    weights = entry.get("weights") or {}
    for key, value in weights.items():
        if key.endswith("_sha256") and key[:-len("_sha256")] in weights:
            _checked_file(entry, weights[key[:-len("_sha256")]], value)
    return _checked_file(entry, weights.get("path"), weights.get("sha256"))


def _repo_path(value):
    """``value`` made absolute when it is a relative path of an existing repository file, else unchanged."""
    if isinstance(value, str) and not os.path.isabs(value) and os.path.exists(os.path.join(ROOT, value)):
        return os.path.join(ROOT, value)
    return value


def resolve_repo_files(section):
    """Make the relative ``*_file`` paths (one path or a list) of a config section that exist under the
    repository absolute.

    Shipped configs name shipped files relative to the repository root (e.g.
    ``task.vocab_file: zoo/weights/lac_pku.vocab.txt``), so ``load`` works from any directory.
    """
    for key, value in section.items():
        if key.endswith("_file"):
            section[key] = [_repo_path(v) for v in value] if isinstance(value, list) else _repo_path(value)


def card_overrides(entry):
    """The card's ``overrides`` (``key=value`` config overrides), a value naming a repository file made absolute."""
    resolved = []
    for item in entry.get("overrides", []):
        key, _, value = item.partition("=")
        resolved.append(f"{key}={_repo_path(value)}" if value else item)
    return resolved


RUNTIMES = ("oar", "onnxruntime")


def program_cache_dir():
    """Where the zoo keeps traced programs across processes: ``$OAR_HOME/programs``
    (:mod:`framework.jit.cache`)."""
    return os.path.join(oar_home(), "programs")


def _official_lac(entry):
    """Baidu's official LAC, built from its fetched files (the ``official_lac`` loader)."""
    from nlp.lac.task import load_official_task
    return load_official_task()


def load_compressed_task(cfg, weights):
    """The task of ``cfg`` (the model's original config) with the compressed ``weights`` loaded, in eval mode."""
    from framework.slim import load_compressed
    register_everything()
    resolve_repo_files(cfg.get("task") or {})
    task = runner.build_task(cfg)
    load_compressed(task.model, weights, cfg.get("model"))
    task.model.eval()
    return task


def _compressed(entry):
    """A compressed card's task: its ``base_config`` with the card's overrides and its checked compressed
    weights (the ``compressed`` loader)."""
    cfg = load_config(os.path.join(ROOT, entry["base_config"]), card_overrides(entry))
    return load_compressed_task(cfg, checked_weights(entry))


# What a card's (or an export manifest's) ``loader`` may name: a fixed table in the code, so that no file can
# choose code to import or run.
LOADERS = {"official_lac": _official_lac, "compressed": _compressed}


def _loader_task(entry):
    """The task the card's named loader builds."""
    if entry["loader"] not in LOADERS:
        raise CatalogError(f"model {entry['name']!r}: unknown loader {entry['loader']!r} (the zoo's loaders: "
                           f"{', '.join(LOADERS)})")
    return LOADERS[entry["loader"]](entry)


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


def _built(entry):
    """``(task, cfg, weights path)`` of a card: built from its config with its checked weights, or by its
    loader (then cfg and weights are None)."""
    if "loader" in entry:
        return _loader_task(entry), None, None
    cfg = load_config(os.path.join(ROOT, entry["config"]), card_overrides(entry))
    resolve_repo_files(cfg.get("task") or {})
    task = runner.build_task(cfg)
    weights = checked_weights(entry)
    runner.load_weights(task.model, weights)
    return task, cfg, weights


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
        return exported.load_export(name, LOADERS, device, runtime)
    entry = model_card(name)
    task, _, _ = _built(entry)
    return _ready(task, entry, device, static or runtime != "oar", runtime)


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
    task, cfg, weights = _built(entry)
    task = _ready(task, entry, "cpu", True, "oar")
    return exported.write_export(task, entry, cfg, weights, output, entry["task"], formats)


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
