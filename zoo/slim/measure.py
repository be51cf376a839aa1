"""What ``oar compress`` and ``oar reproduce slim`` report about a model: size, work, speed and accuracy.

- :func:`model_inputs`: the arrays a task's model is called with for a batch
  (recorded from ``task.predict_batch``), the inputs a traced program and an
  ONNX model take;
- :func:`measure_split`: the split a model is measured on (test, else eval,
  else train: what its config has);
- :func:`test_inputs`: those arrays for the first examples of a split one by one
  and for a batch of 64;
- :func:`static_program`, :func:`export_program`: the traced program of the
  static path (what ``zoo.load`` runs) and the one exported to ONNX (batch norm folded);
- :func:`timed`: median wall time of calls (after a warm-up), never asserted on;
- :func:`best_of`: the shortest time of each of several calls run in turn,
  round after round (interleaved, so a loaded machine slows them alike), and
  :func:`ratios`: one call's time over each other's from it;
- :func:`speed`: batch-1 latency (ms, median over the first ``n`` single
  examples) and batch-64 throughput (examples/s) of a callable on those inputs;
- :func:`test_metrics`: the task's metrics on a split of its config (test by default);
- :func:`runtime_speeds`: :func:`speed` of a task's network on the oar static path
  and in ONNX Runtime.
"""
import inspect
import itertools
import os
import statistics
import tempfile
import time

from framework import jit
from framework.engine import runner
from framework.engine.task import to_tensors
from framework.tensor import Tensor

__all__ = ["model_inputs", "measure_split", "test_inputs", "timed", "best_of", "ratios", "speed", "test_metrics",
           "static_program", "export_program", "runtime_speeds"]


class _Recorder:
    """Stands in for a task's model: records the arrays of its last call and answers with the model."""

    def __init__(self, model):
        self.model, self.args = model, None

    def __call__(self, *args):
        self.args = tuple(a.data if isinstance(a, Tensor) else a for a in args)
        return self.model(*args)

    def __getattr__(self, name):
        return getattr(self.model, name)


def model_inputs(task, batch):
    """The tuple of arrays ``task.model`` is called with when the task predicts ``batch`` (raw arrays)."""
    recorder = _Recorder(task.model)
    task.model = recorder
    try:
        task.predict_batch(to_tensors(batch))
    finally:
        task.model = recorder.model
    return recorder.args


def measure_split(cfg):
    """The split of ``cfg``'s data a model is measured on: ``test``, else ``eval``, else ``train``; None when
    the config has no data."""
    data = cfg.get("data") or {}
    return next((split for split in ("test", "eval", "train") if data.get(split)), None)


def _test_loader(task, cfg, size, split):
    train_cfg = {**runner.check_sections(cfg), "eval_batch_size": size}
    return runner.build_loader(runner.build_dataset(cfg, split), task, train_cfg, training=False)


def test_inputs(task, cfg, singles=10, batch=64, split="test"):
    """``(singles, batch)``: the model inputs (:func:`model_inputs`) of the first ``singles`` examples of
    ``split`` one by one, and of its first batch of ``batch`` (fewer when the split is smaller)."""
    ones = [model_inputs(task, one) for one in itertools.islice(_test_loader(task, cfg, 1, split), singles)]
    return ones, model_inputs(task, next(iter(_test_loader(task, cfg, batch, split))))


def _dynamic_axes(task, inputs):
    """The task's dynamic axes of the inputs its model is called with: the first ``len(inputs)`` parameters
    of its ``forward`` (a LAC model without lexicon features is given no ``lexicon``)."""
    if task.dynamic_axes is None:
        return None
    names = list(inspect.signature(task.model.forward).parameters)[:len(inputs)]
    return {name: axes for name, axes in task.dynamic_axes.items() if name in names}


def static_program(task, inputs, passes=jit.INFERENCE_PASSES):
    """The model traced on ``inputs`` with the task's dynamic axes: oar's static path (the passes ``zoo.load``
    runs, by default; :data:`~framework.jit.EXACT_PASSES` keeps the batch norms for the pruning analysis)."""
    return jit.trace(task.model, inputs, dynamic_axes=_dynamic_axes(task, inputs), passes=passes)


def export_program(task, inputs):
    """The model traced on ``inputs`` with every graph pass (batch norm folded into the convolutions before
    it): what the float ONNX models are exported from, so ONNX Runtime's quantiser sees no batch norm."""
    return jit.trace(task.model, inputs, dynamic_axes=_dynamic_axes(task, inputs))


def timed(call, args, repeats):
    """Median seconds of ``call(*args)`` over ``repeats`` calls, after one warm-up call."""
    call(*args)
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        call(*args)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def best_of(calls, rounds):
    """``{name: {"wall", "cpu"}}``: the shortest wall time and the shortest process CPU time (seconds) of each
    of ``calls`` (``{name: (call, args)}``), each called once to warm up, then all in turn for ``rounds``
    rounds. On one thread the CPU time leaves out the time the process waited for a core, the steadier
    figure on a shared machine."""
    best = {name: {"wall": float("inf"), "cpu": float("inf")} for name in calls}
    for call, args in calls.values():
        call(*args)
    for _ in range(rounds):
        for name, (call, args) in calls.items():
            wall, cpu = time.perf_counter(), time.process_time()
            call(*args)
            best[name]["wall"] = min(best[name]["wall"], time.perf_counter() - wall)
            best[name]["cpu"] = min(best[name]["cpu"], time.process_time() - cpu)
    return best


def ratios(calls, rounds, base="base"):
    """``{name: {"wall", "cpu"}}``: ``base``'s time over each other call's, all of ``calls`` timed in turn
    (:func:`best_of`)."""
    best = best_of(calls, rounds)
    return {name: {clock: round(best[base][clock] / seconds, 3) for clock, seconds in times.items()}
            for name, times in best.items() if name != base}


def speed(call, singles, batch, repeats=20):
    """``{"latency_ms", "throughput"}``: median batch-1 time over the ``singles`` (tuples of arrays with a batch
    axis of one, each timed ``repeats // len(singles)`` times at least once) and examples/s on ``batch``."""
    per = max(repeats // len(singles), 1)
    latency = statistics.median(timed(call, one, per) for one in singles)
    size = len(batch[0])
    return {"latency_ms": round(latency * 1e3, 3), "throughput": round(size / timed(call, batch, 3), 1)}


def test_metrics(task, cfg, device=None, split="test"):
    """The task's metrics (4 digits) on ``cfg``'s ``split``."""
    dataset = runner.build_dataset(cfg, split)
    loader = runner.build_loader(dataset, task, runner.check_sections(cfg), training=False)
    return {k: round(float(v), 4) for k, v in runner.evaluate(task, loader, device).items()}


def runtime_speeds(task, singles, batch, onnx_path=None):
    """``{"static": speed, "onnxruntime": speed}`` (:func:`speed`) of ``task``'s network on the model inputs
    ``singles`` (batch-1 calls) and ``batch``: its traced program, and the ONNX model ``onnx_path`` (or the
    float model exported from it, batch norm folded) in ONNX Runtime; ``onnxruntime`` is left out when the
    ``export`` extra is not installed."""
    speeds = {"static": speed(static_program(task, singles[0]), singles, batch)}
    from framework import onnx
    try:
        with tempfile.TemporaryDirectory() as folder:
            if onnx_path is None:
                onnx_path = os.path.join(folder, "model.onnx")
                onnx.export(export_program(task, singles[0]), onnx_path)
            speeds["onnxruntime"] = speed(onnx.OnnxProgram(onnx_path), singles, batch)
    except onnx.MissingExportDependency:
        pass
    return speeds
