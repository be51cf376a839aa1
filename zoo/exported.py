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
  and ``manifest.json``: ``{"format": "oar.export", "version": 1, "name",
  "task", "card", "program", "weights", "onnx", "loader"}``. A model made by a
  loader (the official LAC) records the loader instead of a config.
  :func:`load_export` builds the task from it without the catalog and serves
  its calls with the saved program.
- :func:`use_onnxruntime` exports a task's program once into
  ``$OAR_HOME/onnx/<name>-<sha256 of the weights>.onnx`` and serves the task's
  calls with ONNX Runtime (:class:`framework.onnx.OnnxProgram`).
"""
import hashlib
import json
import os
import shutil
import tempfile

from framework import jit
from framework.config import load_config
from framework.engine import runner
from framework.engine.run_dir import RUN_CONFIG, run_config, save_run
from framework.errors import MissingFileError, UserError
from framework.fetch import file_lock, oar_home
from framework.serialization import atomic_write

from .catalog import call_loader

__all__ = ["ExportError", "trace_task", "write_export", "load_export", "is_export", "card_of", "use_onnxruntime",
           "MANIFEST", "SAMPLE_TEXTS", "SAMPLE_PAIRS"]

MANIFEST = "manifest.json"
FORMAT = "oar.export"
VERSION = 1
SAMPLE_TEXTS = ["今天是个好日子，我们去北京天安门看升旗。"]
SAMPLE_PAIRS = [["今天天气很好", "今天天气很好啊"]]


class ExportError(UserError, ValueError):
    """A model that cannot be exported, or an export directory that cannot be read; the message says why."""


def _sample(task_kind, workdir):
    """A small list of raw inputs of the task's kind."""
    if task_kind == "matching":
        return SAMPLE_PAIRS
    if task_kind in ("lexical_analysis", "sentiment"):
        return SAMPLE_TEXTS
    if task_kind == "video":
        from video.data.synthetic import make_synthetic_set
        make_synthetic_set(workdir, 1, seed=0, workers=1)
        return [os.path.join(workdir, "videos", "000000.mp4")]
    raise ExportError(f"no sample inputs to trace a {task_kind} model with")


def trace_task(task, task_kind):
    """The program ``task.model`` (a :class:`~framework.jit.StaticLayer`) traces on a sample of its inputs."""
    if not isinstance(task.model, jit.StaticLayer):
        raise ExportError("the task's model does not run through programs (load it with static=True)")
    with tempfile.TemporaryDirectory() as workdir:
        task.predict(_sample(task_kind, workdir))
    if task.model.fallbacks:
        raise ExportError(f"the model cannot be traced: {next(iter(task.model.fallbacks.values()))}")
    if len(task.model.programs) != 1:
        raise ExportError(f"the sample traced {len(task.model.programs)} programs, expected one")
    return next(iter(task.model.programs.values()))


def _write_json(path, value):
    with atomic_write(path) as f:
        json.dump(value, f, ensure_ascii=False, indent=1)
        f.write("\n")


def write_export(task, entry, cfg, weights, output, task_kind, formats=("oar",)):
    """Write the export directory of the loaded zoo ``task`` (card ``entry``, built from ``cfg`` or by the
    card's loader, with the weights file ``weights``) into ``output``; returns the manifest."""
    program = trace_task(task, task_kind)
    manifest = {"format": FORMAT, "version": VERSION, "name": entry["name"], "task": task_kind, "card": entry,
                "program": "program", "weights": None, "onnx": None, "loader": entry.get("loader")}
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
    _write_json(os.path.join(output, MANIFEST), manifest)
    return manifest


def is_export(path):
    """True when ``path`` is an export directory."""
    return os.path.isfile(os.path.join(path, MANIFEST))


def card_of(directory):
    """The model card an export directory recorded."""
    manifest = _read_manifest(directory)
    return manifest.get("card") or {"name": manifest.get("name"), "task": manifest.get("task")}


def _read_manifest(directory):
    path = os.path.join(directory, MANIFEST)
    try:
        with open(path, encoding="utf-8") as f:
            manifest = json.load(f)
    except (OSError, ValueError) as err:
        raise ExportError(f"cannot read {path}: {err}") from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT or manifest.get("version") != VERSION:
        raise ExportError(f"{path} is not an oar export manifest of version {VERSION}")
    return manifest


def load_export(directory, device="cpu"):
    """The task of an export directory (module docstring), its model served by the saved program."""
    manifest = _read_manifest(directory)
    if manifest.get("loader"):
        task = call_loader(manifest["loader"])
        task.model.eval()
    else:
        config_path = os.path.join(directory, RUN_CONFIG)
        if not os.path.isfile(config_path):
            raise MissingFileError(f"{directory} has no {RUN_CONFIG}: not a whole export directory")
        cfg = run_config(load_config(config_path), directory)
        task = runner.load_task(cfg, os.path.join(directory, str(manifest.get("weights"))))
    if device and device != "cpu":
        task.model.to(device)
    task.model = jit.to_static(task.model, dynamic_axes=task.dynamic_axes, passes=jit.EXACT_PASSES)
    task.model.add_program(jit.load(os.path.join(directory, str(manifest.get("program"))), device=device))
    task.device = device
    task.card = manifest.get("card") or {"name": manifest.get("name")}
    return task


def _weights_digest(program):
    digest = hashlib.sha256()
    for slot in sorted(program.values):
        array = program.values[slot]
        digest.update(f"{slot}:{array.dtype.str}:{array.shape}".encode())
        digest.update(memoryview(array.tobytes()))
    return digest.hexdigest()


def use_onnxruntime(task, name, task_kind):
    """Serve ``task``'s model calls with ONNX Runtime: the traced program exported once into
    ``$OAR_HOME/onnx`` (named by the model and the sha256 of its weights) and reused after."""
    from framework import onnx
    program = trace_task(task, task_kind)
    path = os.path.join(oar_home(), "onnx", f"{name}-{_weights_digest(program)[:16]}.onnx")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with file_lock(path + ".lock"):
        if not (os.path.isfile(path) and os.path.isfile(path + ".json")):
            onnx.export(program, path)
    task.model.add_program(onnx.OnnxProgram(path), program.inputs)
    return path
