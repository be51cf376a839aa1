"""Compression benchmarks (``oar bench slim``): what int8 and pruning buy in time, and where the time goes.

Two models: ResNet-50 at ImageNet shapes (3 x 224 x 224, 1000 classes, weights
seeded at random: time depends on the shapes only) and the zoo's ``tsm_synth``
(its weights and test clips). Run them on one thread (``OAR_NUM_THREADS=1``,
``OMP_NUM_THREADS=1``); ONNX Runtime sessions are made with one thread.

- ``int8``: the float model as oar exports it (batch norm folded) beside the int8
  model of :func:`zoo.slim.onnx_int8.quantize_onnx` (static QDQ, per-channel
  int8 weights, abs-max calibration on ``CALIBRATION`` examples) in ONNX Runtime:
  the float time over the int8 time at batch 1 and 64, and how often the two agree
  on the top class of the timed batch;
- ``prune``: uniform L1-norm filter pruning removing 25, 50 and 75 % of the
  multiply-adds (widths multiples of 8, :func:`framework.slim.plan.uniform_plan`;
  a target the model cannot reach is reported with the error), each pruned model
  beside the unpruned one on the oar static path and in ONNX Runtime: the speed-up
  against the share of multiply-adds kept;
- ``profiles``: per-op time of the float, int8 and 50 %-pruned models at batch 1
  and 64: ONNX Runtime's own profiler (``SessionOptions.enable_profiling``, summed
  by op type) and the oar static path (:func:`zoo.bench.op_profile.seconds_by_op`,
  by op family and by kernel function: im2col apart from the GEMMs).

Every speed-up times the models it compares in turn in one loop
(:func:`zoo.slim.measure.ratios`: best of several rounds), so a loaded machine
slows them alike, in wall time and in process CPU time (``{"wall", "cpu"}``; on
one thread the CPU time leaves out waiting for a core). ``quick``: batch 8 in place of 64, fewer rounds.
"""
import collections
import copy
import json
import os
import tempfile

import numpy

import framework
from framework import jit
from framework.onnx import OnnxProgram, export
from framework.slim import SlimError, channel_groups, costs
from framework.slim.plan import pruned_macs, uniform_plan
from framework.slim.prune import apply, kept_channels, named_tensors

from ..slim.measure import export_program, model_inputs, ratios, test_inputs
from ..slim.onnx_int8 import quantize_onnx
from ..slim.source import batches_of, open_source
from .op_profile import seconds_by_op

__all__ = ["run_all", "Subject", "float_and_int8", "int8_speedups", "prune_speedups", "onnx_profile",
           "static_profile"]

CALIBRATION = 16
TARGETS = (0.25, 0.5, 0.75)
MULTIPLE = 8


class Subject:
    """A model to compress: ``model`` (eval mode), ``inputs`` ``(one, batch)`` (tuples of arrays),
    ``calibration`` (list of input tuples of one example) and its dynamic axes."""

    def __init__(self, name, model, one, batch, calibration, dynamic_axes=None):
        self.name, self.model, self.one, self.batch = name, model, one, batch
        self.calibration, self.dynamic_axes = calibration, dynamic_axes

    def program(self, model=None, exact=True):
        """The static program of ``model`` (default: this one): exact passes, or every pass (for export)."""
        passes = jit.EXACT_PASSES if exact else jit.DEFAULT_PASSES
        return jit.trace(model or self.model, self.one, dynamic_axes=self.dynamic_axes, passes=passes)


def _resnet50(batch):
    from vision.models import resnet50
    framework.seed(0)
    model = resnet50()
    model.eval()
    rng = numpy.random.default_rng(0)
    images = rng.standard_normal((batch + CALIBRATION, 3, 224, 224), dtype=numpy.float32)
    return Subject("resnet50", model, (images[:1],), (images[:batch],),
                  [(images[batch + i:batch + i + 1],) for i in range(CALIBRATION)])


def _tsm(batch):
    source = open_source("tsm_synth")
    _, clips = test_inputs(source.task, source.cfg, 0, batch)
    calibration = [model_inputs(source.task, b) for b in batches_of(source, "train", CALIBRATION, "calibration")]
    calibration = [tuple(a[i:i + 1] for a in args) for args in calibration for i in range(len(args[0]))]
    return Subject("tsm_synth", source.model, tuple(a[:1] for a in clips), clips, calibration[:CALIBRATION],
                  source.task.dynamic_axes)


def _export(subject, model, path):
    program = subject.program(model, exact=False)
    export(program, path)
    return [spec.name for spec in program.inputs]


def float_and_int8(subject, folder):
    """``(float path, int8 path)``: the subject's float ONNX model (batch norm folded) and ONNX Runtime's int8
    model of it (:func:`zoo.slim.onnx_int8.quantize_onnx`, abs-max calibration), written into ``folder``."""
    float_path, int8_path = os.path.join(folder, "float.onnx"), os.path.join(folder, "int8.onnx")
    names = _export(subject, subject.model, float_path)
    quantize_onnx(float_path, int8_path, "static", [dict(zip(names, args)) for args in subject.calibration],
                  "abs_max")
    return float_path, int8_path


def int8_speedups(subject, float_path, int8_path, rounds):
    """``{"batch1", "batch64": float time / int8 time in ONNX Runtime (``{"wall", "cpu"}``), "top1_agreement"}``."""
    runtimes = {"base": OnnxProgram(float_path), "int8": OnnxProgram(int8_path)}
    result = {}
    for key, args, n in (("batch1", subject.one, rounds[0]), ("batch64", subject.batch, rounds[1])):
        result[key] = ratios({name: (run, args) for name, run in runtimes.items()}, n)["int8"]
    top = {name: numpy.asarray(run(*subject.batch)).reshape(len(subject.batch[0]), -1).argmax(axis=1)
           for name, run in runtimes.items()}
    result["top1_agreement"] = round(float((top["base"] == top["int8"]).mean()), 4)
    return result


def _pruned(subject, groups, node_costs, target):
    """``(model, share of multiply-adds kept)`` of ``subject`` pruned uniformly by ``target``."""
    plan = uniform_plan(node_costs, groups, target, multiple=MULTIPLE)
    model = copy.deepcopy(subject.model)
    apply(model, groups, kept_channels(model, groups, plan))
    return model, pruned_macs(node_costs, groups, plan) / sum(c.macs for c in node_costs)


def prune_speedups(subject, folder, rounds):
    """``{"macs_kept": {target: share}, "static"|"onnxruntime": {"batch1"|"batch64": {target: speed-up}},
    "unreachable": {target: error}}`` and the 50 % model (for the profiles), see the module docstring."""
    program = subject.program()
    groups, node_costs = channel_groups(program, named_tensors(subject.model)), costs(program)
    models, result = {"base": subject.model}, {"macs_kept": {}, "unreachable": {}}
    for target in TARGETS:
        try:
            models[target], result["macs_kept"][target] = _pruned(subject, groups, node_costs, target)
        except SlimError as err:
            result["unreachable"][target] = str(err)
    runtimes = {"static": {}, "onnxruntime": {}}
    for key, model in models.items():
        runtimes["static"][key] = subject.program(model)
        path = os.path.join(folder, f"pruned_{key}.onnx")
        _export(subject, model, path)
        runtimes["onnxruntime"][key] = OnnxProgram(path)
    for runtime, calls in runtimes.items():
        result[runtime] = {key: ratios({name: (run, args) for name, run in calls.items()}, n)
                           for key, args, n in (("batch1", subject.one, rounds[0]),
                                                ("batch64", subject.batch, rounds[1]))}
    half = {runtime: calls.get(0.5) for runtime, calls in runtimes.items()}
    return result, half


def onnx_profile(path, args, runs):
    """``{op type: ms per run}`` of the ONNX model ``path`` on ``args`` (one thread), by ONNX Runtime's profiler
    over ``runs`` runs after a warm-up, largest first."""
    import onnxruntime
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = options.inter_op_num_threads = 1
    options.enable_profiling = True
    with tempfile.TemporaryDirectory() as folder:
        options.profile_file_prefix = os.path.join(folder, "profile")
        session = onnxruntime.InferenceSession(path, options, providers=["CPUExecutionProvider"])
        feeds = dict(zip((i.name for i in session.get_inputs()), args))
        session.run(None, feeds)
        for _ in range(runs):
            session.run(None, feeds)
        with open(session.end_profiling(), encoding="utf-8") as f:
            events = json.load(f)
    totals = collections.Counter()
    for event in events:
        if event.get("cat") == "Node" and event["name"].endswith("_kernel_time"):
            totals[event["args"]["op_name"]] += event["dur"]
    return {op: round(us / (runs + 1) / 1e3, 3) for op, us in totals.most_common()}


def static_profile(program, args):
    """Seconds by op family and by kernel function (im2col, the GEMMs) of one call of the static ``program``
    (after a warm-up call)."""
    program(*args)
    return seconds_by_op(lambda: program(*args), kernels=True)


def _profiles(subject, paths, programs, runs):
    result = {}
    for key, args in (("batch1", subject.one), ("batch64", subject.batch)):
        result[key] = {"onnxruntime": {name: onnx_profile(path, args, runs[key]) for name, path in paths.items()},
                       "static": {name: static_profile(program, args) for name, program in programs.items()}}
    return result


def _bench(subject, rounds, runs):
    with tempfile.TemporaryDirectory() as folder:
        float_path, int8_path = float_and_int8(subject, folder)
        pruned, half = prune_speedups(subject, folder, rounds)
        paths = {"float": float_path, "int8": int8_path}
        programs = {"float": subject.program()}
        if half["static"] is not None:
            paths["pruned_50"] = os.path.join(folder, "pruned_0.5.onnx")
            programs["pruned_50"] = half["static"]
        return {"int8": int8_speedups(subject, float_path, int8_path, rounds), "prune": pruned,
                "profiles": _profiles(subject, paths, programs, runs)}


def run_all(quick=False):
    """``{model: {"int8", "prune", "profiles"}}`` for ResNet-50 and tsm_synth (module docstring)."""
    batch = 8 if quick else 64
    rounds, runs = ((5, 1), {"batch1": 3, "batch64": 1}) if quick else ((15, 2), {"batch1": 10, "batch64": 2})
    return {subject.name: _bench(subject, rounds, runs) for subject in (_tsm(batch), _resnet50(batch))}
