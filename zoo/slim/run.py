"""One ``oar compress`` run: the model before, the strategy, the compressed weights and the report.

:func:`compress` writes into its output folder ``weights.npz`` (the compressed
weights and their recipe, :func:`framework.slim.save_compressed`),
``config.yaml`` (the model's config, which the weights load into with
:func:`zoo.cards.weighted_task` with kind ``compressed``), ``report.json`` (parameters,
multiply-adds per example, file sizes, test metrics before and after, and the
strategy's notes), the strategy's own files (``plan.json``, ``sensitivity.*``,
the fine-tuning run) and, for ``quant``, ``model.onnx`` (float, oar's export)
and ``model.int8.onnx`` (ONNX Runtime's int8 model, :mod:`zoo.slim.onnx_int8`).
"""
import json
import os
import tempfile

from framework.config import dump_config
from framework.engine.checkpoint import save_checkpoint
from framework.fetch import sha256_of
from framework.serialization import atomic_write
from framework.slim import profile, save_compressed
from framework import onnx as fonnx

from . import strategies
from .measure import export_program, model_inputs, test_metrics
from .onnx_int8 import quantize_onnx
from .settings import load_settings
from .source import batches_of, open_source, traced

__all__ = ["compress", "report", "STRATEGY_FUNCTIONS"]

STRATEGY_FUNCTIONS = {"prune": strategies.prune, "quant": strategies.quantize, "distill": strategies.distill}


def report(model, weights=None):
    """``{"model", "macs", "params", "layers"}`` of ``model`` (a card or config) on a sample of its inputs:
    multiply-adds per example and parameters, with each layer's multiply-adds."""
    source = open_source(model, weights)
    return {"model": model, **profile(traced(source), source.model)}


def _float32_bytes(model):
    """Size of ``model``'s weights written as a float32 checkpoint (the uncompressed reference)."""
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "float32.npz")
        save_checkpoint(path, model)
        return os.path.getsize(path)


def _measure(source):
    counted = profile(traced(source), source.model)
    return {"params": counted["params"], "macs": counted["macs"], "test": test_metrics(source.task, source.cfg)}


def compress(config, model, output_dir, overrides=(), weights=None, from_scratch=False, device=None,
             progress=True, finetune_overrides=()):
    """Run the compression config ``config`` on ``model`` (module docstring); returns the report dict.
    ``finetune_overrides`` are added to the config's ``finetune`` list (a smaller budget for a rehearsal)."""
    settings = load_settings(config, overrides)
    settings["finetune"] = settings["finetune"] + list(finetune_overrides)
    strategy = settings["strategy"]
    os.makedirs(output_dir, exist_ok=True)
    source = open_source(model, weights, pretrained=not from_scratch)
    before = _measure(source) if not from_scratch else {}
    before["float32_bytes"] = _float32_bytes(source.model)
    recipe, notes = STRATEGY_FUNCTIONS[strategy](source, settings, output_dir, device, progress)
    recipe["config"] = os.path.relpath(config) if not os.path.isabs(config) else config
    path = os.path.join(output_dir, "weights.npz")
    sha = save_compressed(path, source.model, recipe, half=strategy != "quant")
    dump_config(source.cfg, os.path.join(output_dir, "config.yaml"))
    after = {**_measure(source), "file_bytes": os.path.getsize(path), "sha256": sha}
    if strategy == "quant":
        after["onnx"] = _onnx_files(source, settings["quant"], output_dir)
    result = {"strategy": strategy, "config": config, "config_sha256": sha256_of(config),
              "settings": settings, "model": model, "origin": source.origin,
              "before": before, "after": after, "notes": notes}
    with atomic_write(os.path.join(output_dir, "report.json")) as f:
        json.dump(result, f, indent=1, default=float)
        f.write("\n")
    return result


def _onnx_files(source, settings, output_dir):
    """Float (batch norm folded) and ONNX Runtime int8 models of the source's (unquantised) network; returns
    their sizes."""
    float_source = open_source(source.origin.get("model") or source.origin["config"])
    batches = batches_of(float_source, settings["calibration_split"], settings["calibration_samples"],
                         "quant.calibration")
    inputs = [model_inputs(float_source.task, b) for b in batches]
    program = export_program(float_source.task, tuple(a[:1] for a in inputs[0]))
    float_path = os.path.join(output_dir, "model.onnx")
    fonnx.export(program, float_path)
    names = [spec.name for spec in program.inputs]
    feeds = [dict(zip(names, [a[i:i + 1] for a in args])) for args in inputs for i in range(len(args[0]))]
    int8_path = os.path.join(output_dir, "model.int8.onnx")
    quantize_onnx(float_path, int8_path, settings["onnx"], feeds, settings["activation"])
    return {"float_bytes": os.path.getsize(float_path), "int8_bytes": os.path.getsize(int8_path),
            "int8_path": int8_path, "float_path": float_path}
