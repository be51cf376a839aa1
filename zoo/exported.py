"""Traced models: the program a task's model runs, export directories, and the ONNX Runtime path.

- :func:`trace_task` predicts once on a small sample of the task's own inputs
  (sentences, a pair, a generated video) through the task's
  :class:`~framework.jit.StaticLayer`, and returns the program that call traced.
- An **export directory** (``oar export NAME_OR_DIR --output DIR``,
  :func:`write_export`) is a run directory (``config.yaml`` and ``assets.json``
  with copies of every vocabulary, tag set, lexicon or label file,
  :func:`framework.engine.run_dir.save_run`) plus ``weights.npz`` (the model's
  weights, which the task's own code reads beside the network, e.g. LAC's CRF
  transitions), ``program/`` (the traced network, :func:`framework.jit.save`),
  ``model.onnx`` with ``--format onnx`` (and ``onnx_interface.json``, what a
  bare ONNX Runtime user needs to feed it, :mod:`zoo.onnx_interface`) and ``manifest.json``: ``{"format":
  "oar.export", "version": 4, "card", "files"}``, where ``card`` is the model's
  :class:`~zoo.card.Card` in the catalog's form, its paths relative to the
  export (``config``, ``weights``, ``program``, ``onnx``), and ``files`` maps
  every file written (relative path) to its sha256. A trained or a compressed
  model is exported with its config and weights; an official one (built by a
  loader from files fetched elsewhere: Baidu's LAC) with neither.
  :func:`export_card` reads it back as a card (:func:`zoo.resolver.resolve`),
  and :func:`check_files` checks every file against its recorded sha256 before
  any is read. An export directory is data: nothing in it names code to run,
  a path it names must lie inside it, and an ONNX model that refers to external
  data is refused unless every external file is one the manifest vouches for.
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
import re
import shutil
import tempfile
import warnings

from framework import jit
from framework.checked import check_sha256, is_sha256, path_inside, read_json
from framework.engine.run_dir import RUN_ASSETS, RUN_CONFIG, save_run
from framework.jit.files import GRAPH_FILE, WEIGHTS_FILE
from framework.errors import UserError
from framework.fetch import file_lock, oar_home, sha256_of
from framework.serialization import atomic_write

from .card import Card, CardError, Weights
from .onnx_interface import write_interface
from .tasks import task_spec

__all__ = ["ExportError", "CacheWarning", "trace_task", "write_export", "read_manifest", "export_card", "is_export",
           "check_files", "use_onnxruntime", "MANIFEST"]

MANIFEST = "manifest.json"
FORMAT = "oar.export"
VERSION = 4


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


def write_export(task, card, cfg, weights, output, formats=("oar",)):
    """Write the export directory of the ready ``task`` of ``card`` (built from ``cfg`` with the weights file
    ``weights``; both None for an official model) into ``output``; returns the manifest."""
    program = trace_task(task, card.task)
    exported = card.replace(folder=output, origin="export", program="program", onnx=None, files={},
                            config=None if cfg is None else RUN_CONFIG, overrides=())
    if cfg is not None:
        save_run(cfg, task, output)
        name = "weights" + os.path.splitext(weights)[1]
        shutil.copyfile(weights, os.path.join(output, name))
        exported = exported.replace(weights=Weights(name, sha256_of(os.path.join(output, name))))
    else:
        os.makedirs(output, exist_ok=True)
    jit.save(program, os.path.join(output, "program"))
    if "onnx" in formats:
        from framework import onnx
        onnx.export(program, os.path.join(output, "model.onnx"))
        write_interface(task, program, card.task, output, exported.weights and exported.weights.path)
        exported = exported.replace(onnx="model.onnx")
    manifest = {"format": FORMAT, "version": VERSION, "card": exported.to_mapping(), "files": _file_record(output)}
    _write_json(os.path.join(output, MANIFEST), manifest)
    return manifest


def is_export(path):
    """True when ``path`` is an export directory (a folder holding a ``manifest.json``)."""
    return os.path.isdir(path) and os.path.isfile(os.path.join(path, MANIFEST))


def read_manifest(directory):
    """The manifest of the export directory ``directory``, its fields checked (module docstring); an
    ExportError names the file and the field at fault."""
    path = os.path.join(directory, MANIFEST)
    if not os.path.isfile(path):
        raise ExportError(f"{directory} is not an oar export: it has no {MANIFEST} (`oar export MODEL --output "
                          f"DIR` writes one)")
    manifest = read_json(path, what="an oar export manifest")
    if manifest.get("format") != FORMAT:
        raise ExportError(f"{path} is not an oar export manifest (format {manifest.get('format')!r:.80})")
    if manifest.get("version") != VERSION:
        raise ExportError(f"{path}: export format version {manifest.get('version')!r:.80}; this oar reads version "
                          f"{VERSION} (export the model again with `oar export`)")
    for field in ("card", "files"):
        if not isinstance(manifest.get(field), dict):
            raise ExportError(f"{path}: {field!r} must be a JSON object, got {manifest.get(field)!r:.80}")
    for name, digest in manifest["files"].items():
        if not is_sha256(digest):
            raise ExportError(f"{path}: files[{name!r}] must be a sha256 (64 hex digits), got {digest!r:.80}")
    return manifest


def export_card(directory):
    """The :class:`~zoo.card.Card` of an export directory (its ``folder`` the directory, ``files`` the
    manifest's record); a manifest whose card is malformed or names no program is an ExportError."""
    manifest = read_manifest(directory)
    where = os.path.join(directory, MANIFEST)
    try:
        card = Card.from_mapping(manifest["card"], directory, where, origin="export")
    except CardError as err:
        raise ExportError(str(err)) from None
    if card.program is None or (card.kind != "official" and (card.config is None or card.weights is None)):
        raise ExportError(f"{where}: a {card.kind} model's card needs 'program'"
                          f"{'' if card.kind == 'official' else ', its config and weights'}; export it again")
    return card.replace(files=manifest["files"])


def _needed(card, runtime):
    """The relative paths of the files :func:`zoo.build.build` and :func:`zoo.build.ready` read from an export."""
    program = card.program.rstrip("/")
    needed = [f"{program}/{GRAPH_FILE}", f"{program}/{WEIGHTS_FILE}"]
    if card.kind != "official":
        needed += [card.config, RUN_ASSETS, card.weights.path]
    if runtime == "onnxruntime":
        if card.onnx is None:
            raise ExportError(f"{card.folder} holds no ONNX model; export it with `oar export MODEL --format onnx` "
                              f"to run it on ONNX Runtime")
        needed += [card.onnx, card.onnx + ".json"]
    return needed


def check_files(card, runtime="oar"):
    """Check every file the export ``card`` lists against its sha256, and that each file ``runtime`` needs
    is listed; the ONNX model's external data files (if any) must be listed files inside the export."""
    record = os.path.join(card.folder, MANIFEST)
    for name, digest in card.files.items():
        check_sha256(path_inside(card.folder, name, record), digest, record)
    unlisted = sorted(name for name in _needed(card, runtime) if name not in card.files)
    if unlisted:
        raise ExportError(f"{record} records no sha256 for {', '.join(unlisted)}; refusing to read a file "
                          f"it does not vouch for (export the model again)")
    if runtime == "onnxruntime":
        _check_external_data(card, record)


def _check_external_data(card, record):
    """Refuse an ONNX model whose tensors point at files the manifest does not list (ONNX external data)."""
    import onnx
    from framework.onnx.errors import reading_model
    path = os.path.join(card.folder, card.onnx)
    with reading_model(path):
        model = onnx.load(path, load_external_data=False)
    base = os.path.dirname(card.onnx)
    tensors = list(model.graph.initializer) + [attr.t for node in model.graph.node for attr in node.attribute
                                               if attr.HasField("t")]
    for tensor in tensors:
        if tensor.data_location != onnx.TensorProto.EXTERNAL:
            continue
        location = next((entry.value for entry in tensor.external_data if entry.key == "location"), "")
        relative = os.path.normpath(os.path.join(base, location)).replace(os.sep, "/")
        path_inside(card.folder, relative, record)
        if relative not in card.files:
            raise ExportError(f"{card.folder}/{card.onnx} reads tensor {tensor.name!r} from {location!r:.80}, a file "
                              f"{MANIFEST} does not vouch for; refusing the model")


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


def use_onnxruntime(task, card):
    """Serve ``task``'s model calls with ONNX Runtime: the traced program exported once into
    ``$OAR_HOME/onnx`` (named by the ``card``'s model and the sha256 of its weights) and reused after."""
    program = trace_task(task, card.task)
    stem = re.sub(r"[^A-Za-z0-9_.-]", "_", card.name)[:64] or "model"
    path = os.path.join(oar_home(), "onnx", f"{stem}-{_weights_digest(program)[:16]}.onnx")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with file_lock(path):
        session = _onnx_session(program, path)
    task.model.add_program(session, program.inputs)
    return path
