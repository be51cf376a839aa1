"""One ``oar compress`` run: the model before, the strategy, the compressed weights and the report.

:func:`compress` writes a **run directory** (:mod:`zoo.resolver`: ``oar run``,
``oar infer``, ``oar eval``, ``oar serve``, ``oar export`` and ``zoo.load``
take it): ``config.yaml`` with copies of the task's files and ``assets.json``
(:func:`framework.engine.run_dir.save_run`; the config of the model the
weights load into, as a ``compressed`` card, :func:`zoo.build.weighted_task`),
``weights.npz`` (the compressed weights and their recipe,
:func:`framework.slim.save_compressed`), ``report.json`` and the strategy's own
files (``plan.json``, ``sensitivity.*``, the fine-tuning run) and, for
``quant``, ``model.onnx`` (float, oar's export) and ``model.int8.onnx`` (ONNX
Runtime's int8 model, :mod:`zoo.slim.onnx_int8`).

``report.json`` holds the strategy and its settings, the model it came from
(``model``, ``source``: the weights' sha256), and, before and after:
parameters, multiply-adds per example, file sizes, the metrics and the speed
(batch-1 latency and batch-64 throughput on the oar static path and in ONNX
Runtime) on one split of the model's data (``measured_on``: test, else eval,
else train — :func:`zoo.slim.measure.measure_split`), with the strategy's notes.
No path in it or in the config is absolute: a path inside the output folder is
written relative to it, any other as its file name (:func:`portable`).
"""
import json
import os
import tempfile

from framework.engine.checkpoint import save_checkpoint
from framework.engine.run_dir import save_run
from framework.fetch import sha256_of
from framework.serialization import atomic_write
from framework.slim import profile, save_compressed
from framework import onnx as fonnx

from . import strategies
from .measure import export_program, measure_split, model_inputs, runtime_speeds, test_inputs, test_metrics
from .onnx_int8 import quantize_onnx
from .settings import load_settings
from .source import batches_of, open_source, traced

__all__ = ["compress", "report", "portable", "STRATEGY_FUNCTIONS"]

STRATEGY_FUNCTIONS = {"prune": strategies.prune, "quant": strategies.quantize, "distill": strategies.distill}
SINGLES = 5             # batch-1 calls the report's latency is the median of


def report(model, weights=None):
    """``{"model", "macs", "params", "layers"}`` of ``model`` (a card or config) on a sample of its inputs:
    multiply-adds per example and parameters, with each layer's multiply-adds."""
    source = open_source(model, weights)
    return {"model": model, **profile(traced(source), source.model)}


def portable(value, folder):
    """``value`` (nested dicts, lists and strings) with every absolute path made portable: relative to
    ``folder`` when it lies inside it, else its file name."""
    if isinstance(value, dict):
        return {k: portable(v, folder) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [portable(v, folder) for v in value]
    if isinstance(value, str) and os.path.isabs(value):
        inside = os.path.commonpath([os.path.abspath(folder), value]) == os.path.abspath(folder)
        return os.path.relpath(value, folder) if inside else os.path.basename(value)
    return value


def _float32_bytes(model):
    """Size of ``model``'s weights written as a float32 checkpoint (the uncompressed reference)."""
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "float32.npz")
        save_checkpoint(path, model)
        return os.path.getsize(path)


def _measure(source, split, onnx_path=None):
    """Parameters and multiply-adds of ``source``'s model, with its metrics and speeds on ``split`` (when the
    config has data)."""
    counted = profile(traced(source), source.model)
    figures = {"params": counted["params"], "macs": counted["macs"]}
    if split is not None:
        figures["metrics"] = test_metrics(source.task, source.cfg, split=split)
        singles, batch = test_inputs(source.task, source.cfg, SINGLES, split=split)
        figures["speed"] = runtime_speeds(source.task, singles, batch, onnx_path)
    return figures


def _measured_on(split):
    if split is None:
        return {"split": None, "note": "the model's config has no data: no metrics or speeds"}
    note = {"test": "the test split", "eval": "the eval split (the config has no data.test)",
            "train": "the train split (the config has no data.test or data.eval)"}[split]
    return {"split": split, "note": note}


def _speedups(before, after):
    """``{runtime: [batch-1, batch-64]}``: how many times faster the compressed model is than its source."""
    runtimes = set(before.get("speed", {})) & set(after.get("speed", {}))
    return {runtime: [round(before["speed"][runtime]["latency_ms"] / after["speed"][runtime]["latency_ms"], 3),
                      round(after["speed"][runtime]["throughput"] / before["speed"][runtime]["throughput"], 3)]
            for runtime in sorted(runtimes)}


def compress(config, model, output_dir, overrides=(), weights=None, from_scratch=False, device=None,
             progress=True, finetune_overrides=()):
    """Run the compression config ``config`` on ``model`` (module docstring); returns the report dict.
    ``finetune_overrides`` are added to the config's ``finetune`` list (a smaller budget for a rehearsal)."""
    settings = load_settings(config, overrides)
    settings["finetune"] = settings["finetune"] + list(finetune_overrides)
    strategy = settings["strategy"]
    os.makedirs(output_dir, exist_ok=True)
    source = open_source(model, weights, pretrained=not from_scratch)
    split = measure_split(source.cfg)
    before = _measure(source, split) if not from_scratch else {}
    before["float32_bytes"] = _float32_bytes(source.model)
    recipe, notes = STRATEGY_FUNCTIONS[strategy](source, settings, output_dir, device, progress)
    recipe["config"] = os.path.relpath(config) if not os.path.isabs(config) else config
    recipe = portable(recipe, output_dir)
    onnx = _onnx_files(source, settings["quant"], output_dir) if strategy == "quant" else None
    path = os.path.join(output_dir, "weights.npz")                  # the run's files last: a failure leaves no model
    sha = save_compressed(path, source.model, recipe, half=strategy != "quant")
    save_run(source.cfg, source.task, output_dir)
    after = {**_measure(source, split, onnx and os.path.join(output_dir, onnx["int8_path"])),
             "file_bytes": os.path.getsize(path),
             "sha256": sha, **({"onnx": onnx} if onnx else {})}
    result = portable({"strategy": strategy, "config": config, "config_sha256": sha256_of(config),
                       "settings": settings, "model": model, "source": source.origin,
                       "measured_on": _measured_on(split), "before": before, "after": after,
                       "speedup": _speedups(before, after), "notes": notes}, output_dir)
    with atomic_write(os.path.join(output_dir, "report.json")) as f:
        json.dump(result, f, indent=1, default=float)
        f.write("\n")
    return result


def _onnx_files(source, settings, output_dir):
    """Float (batch norm folded) and ONNX Runtime int8 models of the source's (unquantised) network; returns
    their sizes."""
    float_source = open_source(source.origin.get("model") or source.origin["config"])      # unquantised
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
            "int8_path": os.path.basename(int8_path), "float_path": os.path.basename(float_path)}
