"""Traced zoo models: the program a task's model runs, export directories, and the ONNX Runtime path.

- :func:`trace_task` predicts once on a small sample of the task's own inputs
  (sentences, a pair, a generated video) through the task's
  :class:`~framework.jit.StaticLayer`, and returns the program that call traced.
- An **export directory** (``oar export NAME --output DIR``, :func:`write_export`)
  is a run directory (``config.yaml`` and ``assets.json`` with copies of every
  vocabulary, tag set, lexicon or label file, :func:`framework.engine.run_dir.save_run`)
  plus ``weights.npz`` (the model's weights, which the task's own code reads
  beside the network, e.g. LAC's CRF transitions), ``program/`` (the traced
  network, :func:`framework.jit.save`), ``model.onnx`` with ``--format onnx``
  and ``manifest.json``: ``{"format": "oar.export", "version": 3, "name",
  "task", "card", "kind", "program", "weights", "onnx", "files"}``, where
  ``kind`` is the card's kind (:data:`zoo.catalog.CARD_KINDS`) and ``files``
  maps every file written (relative path) to its sha256. A trained or a
  compressed model is exported with its config and weights; an official one
  (built by a loader from files fetched elsewhere: Baidu's LAC) with neither.
  :func:`load_export` builds the task from it without the catalog (an official
  model from the catalog card of that name, :func:`zoo.cards.build_card`) and serves its calls with the saved
  program, or with ``model.onnx`` in ONNX Runtime. An export directory is data:
  nothing in it names code to run, every file is checked against its recorded
  sha256 before it is read, and a path it names must lie inside it.
- :func:`use_onnxruntime` exports a task's program once into
  ``$OAR_HOME/onnx/<name>-<sha256 of the weights>.onnx`` (with the sha256 of the
  model and its sidecar recorded beside it) and serves the task's calls with
  ONNX Runtime (:class:`framework.onnx.OnnxProgram`). A cache entry that fails
  its sha256 or does not load is dropped and exported again, with a warning.
"""
import contextlib
import hashlib
import json
import os
import shutil
import tempfile
import warnings

from framework import jit
from framework.checked import check_sha256, is_sha256, path_inside, read_json
from framework.config import load_config
from framework.engine.run_dir import RUN_ASSETS, RUN_CONFIG, run_config, save_run
from framework.jit.files import GRAPH_FILE, WEIGHTS_FILE
from framework.errors import UserError
from framework.fetch import file_lock, oar_home, sha256_of
from framework.serialization import atomic_write

from .cards import build_card, weighted_task
from .catalog import CARD_KINDS, card, card_kind
from .tasks import task_spec

__all__ = ["ExportError", "CacheWarning", "trace_task", "write_export", "read_manifest", "load_export", "is_export",
           "card_of", "use_onnxruntime", "MANIFEST"]

MANIFEST = "manifest.json"
FORMAT = "oar.export"
VERSION = 3


class ExportError(UserError, ValueError):
    """A model that cannot be exported, or an export directory that cannot be read; the message says why."""


class CacheWarning(UserWarning):
    """A file oar made in ``$OAR_HOME`` that failed its check or did not load, and is made again."""


def trace_task(task, task_kind):
    """The program ``task.model`` (a :class:`~framework.jit.StaticLayer`) traces on a sample of its inputs."""
    if not isinstance(task.model, jit.StaticLayer):
        raise ExportError("the task's model does not run through programs (load it with static=True)")
    with tempfile.TemporaryDirectory() as workdir:
        task.predict(task_spec(task_kind).example_inputs(workdir))
    if task.model.fallbacks:
        raise ExportError(f"the model cannot be traced: {next(iter(task.model.fallbacks.values()))}")
    if len(task.model.programs) != 1:
        raise ExportError(f"the sample traced {len(task.model.programs)} programs, expected one")
    return next(iter(task.model.programs.values()))


def _write_json(path, value):
    with atomic_write(path) as f:
        json.dump(value, f, ensure_ascii=False, indent=1)
        f.write("\n")


def _file_record(directory):
    """``{relative path: sha256}`` of every file under ``directory`` but the manifest (``/``-separated)."""
    record = {}
    for folder, _, names in os.walk(directory):
        for name in names:
            path = os.path.join(folder, name)
            relative = os.path.relpath(path, directory).replace(os.sep, "/")
            if relative != MANIFEST:
                record[relative] = sha256_of(path)
    return dict(sorted(record.items()))


def write_export(task, entry, cfg, weights, output, task_kind, formats=("oar",)):
    """Write the export directory of the loaded zoo ``task`` (card ``entry``, built from ``cfg`` or by the
    card's loader, with the weights file ``weights``) into ``output``; returns the manifest."""
    program = trace_task(task, task_kind)
    manifest = {"format": FORMAT, "version": VERSION, "name": entry["name"], "task": task_kind, "card": entry,
                "kind": card_kind(entry), "program": "program", "weights": None, "onnx": None}
    if cfg is not None:
        save_run(cfg, task, output)
        manifest["weights"] = "weights" + os.path.splitext(weights)[1]
        shutil.copyfile(weights, os.path.join(output, manifest["weights"]))
    else:
        os.makedirs(output, exist_ok=True)
    jit.save(program, os.path.join(output, "program"))
    if "onnx" in formats:
        from framework import onnx
        onnx.export(program, os.path.join(output, "model.onnx"))
        manifest["onnx"] = "model.onnx"
    manifest["files"] = _file_record(output)
    _write_json(os.path.join(output, MANIFEST), manifest)
    return manifest


def is_export(path):
    """True when ``path`` is an export directory (a folder holding a ``manifest.json``)."""
    return os.path.isdir(path) and os.path.isfile(os.path.join(path, MANIFEST))


def card_of(directory):
    """The model card an export directory recorded (at least its ``name`` and ``task``)."""
    return _card(read_manifest(directory))


def _card(manifest):
    return {**(manifest["card"] or {}), "name": manifest["name"], "task": manifest["task"]}


# what each manifest field must be: (JSON types, whether it may be null)
_FIELDS = {"name": (str, False), "task": (str, False), "card": (dict, True), "program": (str, False),
           "kind": (str, False), "weights": (str, True), "onnx": (str, True), "files": (dict, False)}


def read_manifest(directory):
    """The manifest of the export directory ``directory``, its fields checked (module docstring); an
    ExportError names the file and the field at fault."""
    path = os.path.join(directory, MANIFEST)
    if not os.path.isfile(path):
        raise ExportError(f"{directory} is not an oar export: it has no {MANIFEST} (`oar export NAME --output "
                          f"DIR` writes one)")
    manifest = read_json(path, what="an oar export manifest")
    if manifest.get("format") != FORMAT:
        raise ExportError(f"{path} is not an oar export manifest (format {manifest.get('format')!r})")
    if manifest.get("version") != VERSION:
        raise ExportError(f"{path}: export format version {manifest.get('version')!r}; this oar reads version "
                          f"{VERSION} (export the model again with `oar export`)")
    for field, (kind, nullable) in _FIELDS.items():
        value = manifest.get(field)
        if not (isinstance(value, kind) or (nullable and value is None)):
            raise ExportError(f"{path}: {field!r} must be a JSON {'object' if kind is dict else 'string'}"
                              f"{' or null' if nullable else ''}, got {value!r:.80}")
    if manifest["kind"] not in CARD_KINDS:
        raise ExportError(f"{path}: 'kind' must be one of {', '.join(CARD_KINDS)}, got {manifest['kind']!r:.80}; "
                          f"an export names the kind of its model, it cannot bring code")
    for name, digest in manifest["files"].items():
        if not is_sha256(digest):
            raise ExportError(f"{path}: files[{name!r}] must be a sha256 (64 hex digits), got {digest!r:.80}")
    return manifest


def _checked_files(directory, manifest, needed):
    """``{role: path}`` of the files ``needed`` (``{role: relative path}``), after checking every file the
    manifest lists against its sha256; a needed file the manifest has no sha256 for is refused."""
    record = os.path.join(directory, MANIFEST)
    for name, digest in manifest["files"].items():
        check_sha256(path_inside(directory, name, record), digest, record)
    unlisted = sorted(name for name in needed.values() if name not in manifest["files"])
    if unlisted:
        raise ExportError(f"{record} records no sha256 for {', '.join(unlisted)}; refusing to read a file "
                          f"it does not vouch for (export the model again)")
    return {role: path_inside(directory, name, record) for role, name in needed.items()}


def _needed(directory, manifest, runtime):
    """``{role: relative path}`` of the files :func:`load_export` reads from ``directory``."""
    program = manifest["program"].rstrip("/")
    needed = {"graph": f"{program}/{GRAPH_FILE}", "values": f"{program}/{WEIGHTS_FILE}"}
    if manifest["kind"] != "official":
        if manifest["weights"] is None:
            raise ExportError(f"{os.path.join(directory, MANIFEST)}: a {manifest['kind']} model needs 'weights'")
        needed.update(config=RUN_CONFIG, assets=RUN_ASSETS, weights=manifest["weights"])
    if runtime == "onnxruntime":
        if manifest["onnx"] is None:
            raise ExportError(f"{directory} holds no ONNX model; export it with `oar export NAME --format onnx` "
                              f"to run it on ONNX Runtime")
        needed.update(onnx=manifest["onnx"], sidecar=manifest["onnx"] + ".json")
    return needed


def _loaded_task(directory, manifest, paths):
    """The eager task of an export: built from its config and weights (plain or compressed), or, for an
    official model, by the zoo's loader that the catalog card of the export's name names."""
    if manifest["kind"] != "official":
        cfg = run_config(load_config(paths["config"], bases=False), directory)
        return weighted_task(cfg, paths["weights"], manifest["kind"])
    entry = card(manifest["name"])
    if card_kind(entry) != "official":
        raise ExportError(f"{os.path.join(directory, MANIFEST)} says {manifest['name']!r} is an official model, "
                          f"whose card is {card_kind(entry)}; export the model again")
    return build_card(entry).task


def load_export(directory, device="cpu", runtime="oar"):
    """The task of an export directory (module docstring), its model served by the saved program (``runtime
    "onnxruntime"``: by its ``model.onnx``). Every file is checked before it is read."""
    manifest = read_manifest(directory)
    paths = _checked_files(directory, manifest, _needed(directory, manifest, runtime))
    task = _loaded_task(directory, manifest, paths)
    if device and device != "cpu":
        task.model.to(device)
    task.model = jit.to_static(task.model, dynamic_axes=task.dynamic_axes, passes=jit.EXACT_PASSES)
    program = jit.load(os.path.dirname(paths["graph"]), device=device)
    if runtime == "onnxruntime":
        from framework import onnx
        task.model.add_program(onnx.OnnxProgram(paths["onnx"]), program.inputs)
    else:
        task.model.add_program(program)
    task.device = device
    task.card = _card(manifest)
    return task


def _weights_digest(program):
    digest = hashlib.sha256()
    for slot in sorted(program.values):
        array = program.values[slot]
        digest.update(f"{slot}:{array.dtype.str}:{array.shape}".encode())
        digest.update(memoryview(array.tobytes()))
    return digest.hexdigest()


def _cache_files(path):
    """The files of the ONNX cache entry ``path``: the model, its sidecar and the record of their sha256s."""
    from framework.onnx.runtime import sidecar_path
    return path, sidecar_path(path), path + ".sha256.json"


def _cached_session(path):
    """The OnnxProgram of the cache entry ``path`` after checking it against its record; raises a UserError
    when the entry is missing, fails its check or does not load."""
    from framework import onnx
    model, sidecar, record = _cache_files(path)
    recorded = read_json(record, what="a cache record")
    for file in (model, sidecar):
        check_sha256(file, recorded.get(os.path.basename(file)), record)
    return onnx.OnnxProgram(model)


def _onnx_session(program, path):
    """The ONNX Runtime session of ``program``, from its cache entry ``path`` (exported first when absent;
    an entry that fails its check or does not load is dropped, with a warning, and exported again)."""
    from framework import onnx
    files = _cache_files(path)
    if any(os.path.exists(f) for f in files):
        try:
            return _cached_session(path)
        except UserError as err:
            warnings.warn(f"{err}; dropping this cached ONNX model and exporting it again", CacheWarning)
            for file in files:
                with contextlib.suppress(FileNotFoundError):
                    os.remove(file)
    onnx.export(program, path)
    _write_json(files[2], {os.path.basename(f): sha256_of(f) for f in files[:2]})
    return _cached_session(path)


def use_onnxruntime(task, name, task_kind):
    """Serve ``task``'s model calls with ONNX Runtime: the traced program exported once into
    ``$OAR_HOME/onnx`` (named by the model and the sha256 of its weights) and reused after."""
    program = trace_task(task, task_kind)
    path = os.path.join(oar_home(), "onnx", f"{name}-{_weights_digest(program)[:16]}.onnx")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with file_lock(path):
        session = _onnx_session(program, path)
    task.model.add_program(session, program.inputs)
    return path
