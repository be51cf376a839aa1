"""oar eager, oar static and ONNX Runtime on the same networks (``oar bench export``).

For each network, at batch 1 (latency, ms per call) and batch 64 (throughput,
items per second): the eager model (no autograd), the traced program
(:func:`framework.jit.trace`, default passes) and the exported file in ONNX
Runtime (:class:`framework.onnx.OnnxProgram`, as many intra-op threads as
``OAR_NUM_THREADS`` / ``OMP_NUM_THREADS``). Networks: the ``lac`` and
``lac_pku`` taggers' networks (with lexicon features for ``lac_pku``) on
People's Daily test sentences of median length, ``senta_bilstm``,
``senta_cnn`` and ``simnet_cnn_pointwise`` on texts of 32 tokens, ResNet-50 on
224 x 224 images and ``tsm_synth`` on clips of its own size (6 frames of 112 x 112). Run it once with
one thread and once with two (``OPENBLAS_NUM_THREADS=1|2 OMP_NUM_THREADS=1|2``).
Median of several runs after a warm-up. ``lac_agreement`` counts the People's
Daily test lines on which ``lac`` and ``lac_pku`` give the same words and tags
through ONNX Runtime as through oar.
"""
import os
import tempfile

import numpy

from framework import Tensor, jit, no_grad
from framework.timing import median_time

__all__ = ["bench_runtimes", "run_all"]


def _rows(feed, n):
    """``feed`` with its batch axis grown or cut to ``n`` rows (repeating rows)."""
    def take(a):
        return a[numpy.arange(n) % a.shape[0]]
    return {k: [take(a) for a in v] if isinstance(v, list) else take(v) for k, v in feed.items()}


def _tensors(feed):
    return {k: [Tensor(a) for a in v] if isinstance(v, list) else Tensor(v) for k, v in feed.items()}


def bench_runtimes(name, model, feed, axes=None, repeat=5):
    """``{runtime: {batch1_ms, batch64_per_s}}`` for eager, static and onnxruntime (see the module docstring)."""
    from framework import onnx
    model.eval()
    program = jit.trace(model, feed, axes and {k: v for k, v in axes.items() if k in feed})
    row = {"model": name}
    with tempfile.TemporaryDirectory() as folder:
        onnx.export(program, os.path.join(folder, "model.onnx"), feed)
        session = onnx.OnnxProgram(os.path.join(folder, "model.onnx"))
        for batch in (1, 64):
            arrays = _rows(feed, batch)
            tensors = _tensors(arrays)

            def eager():
                with no_grad():
                    model(**tensors)
            leaves = {k: v for k, v in arrays.items() if not isinstance(v, list)}
            leaves.update({f"{k}.{i}": a for k, v in arrays.items() if isinstance(v, list) for i, a in enumerate(v)})
            calls = {"eager": eager, "static": lambda: program(**arrays), "onnxruntime": lambda: session(**leaves)}
            for runtime, call in calls.items():
                seconds = median_time(call, repeat)
                entry = row.setdefault(runtime, {})
                if batch == 1:
                    entry["batch1_ms"] = round(seconds * 1e3, 2)
                else:
                    entry["batch64_per_s"] = round(batch / seconds, 1)
    for runtime in ("static", "onnxruntime"):
        row[f"{runtime}_over_eager"] = {"batch1": round(row["eager"]["batch1_ms"] / row[runtime]["batch1_ms"], 2),
                                        "batch64": round(row[runtime]["batch64_per_s"] / row["eager"]["batch64_per_s"],
                                                         2)}
    return row


def _zoo_feeds(quick):
    """``(name, model, feed, dynamic axes)`` of the zoo networks."""
    import zoo
    from .lac import peoples_daily_test_texts
    texts = sorted(peoples_daily_test_texts(400), key=len)
    median = texts[len(texts) // 2]
    rng = numpy.random.default_rng(0)
    found = []
    for name in ("lac", "lac_pku"):
        task = zoo.load(name, static=False)
        batch = task.preprocess([median])
        feed = {"tokens": batch["tokens"], "lengths": batch["tokens_lengths"]}
        if task.lexicon is not None:
            feed["lexicon"] = task.lexicon(batch["tokens"])
        found.append((name, task.model, feed, task.dynamic_axes))
    ids = rng.integers(1, 1000, (1, 32)).astype(numpy.int64)
    lengths = numpy.array([32], dtype=numpy.int64)
    for name in ("senta_bilstm", "senta_cnn"):
        task = zoo.load(name, static=False)
        found.append((name, task.model, {"ids": ids, "lengths": lengths}, task.dynamic_axes))
    task = zoo.load("simnet_cnn_pointwise", static=False)
    found.append(("simnet_cnn_pointwise", task.model, {"a_ids": ids, "a_lengths": lengths, "b_ids": ids[:, ::-1].copy(),
                                                       "b_lengths": lengths}, task.dynamic_axes))
    task = zoo.load("tsm_synth", static=False)
    segments, size = task.model.num_segments, 112
    found.append(("tsm_synth", task.model,
                  {"x": rng.standard_normal((1, segments, 3, size, size)).astype(numpy.float32)}, None))
    if not quick:
        import vision.models  # noqa: F401
        from framework.registry import MODELS
        found.append(("resnet50", MODELS.build({"type": "resnet50", "num_classes": 1000}),
                      {"x": rng.standard_normal((1, 3, 224, 224)).astype(numpy.float32)}, None))
    return found


def lac_agreement(texts, models=("lac", "lac_pku")):
    """``{model: {lines, identical}}``: on how many of ``texts`` the words and tags through ONNX Runtime are
    those of the oar static path (``zoo.load(model, runtime="onnxruntime")`` against ``zoo.load(model)``)."""
    import zoo
    result = {}
    for name in models:
        ours, theirs = zoo.load(name).predict(texts), zoo.load(name, runtime="onnxruntime").predict(texts)
        result[name] = {"lines": len(texts), "identical": sum(a == b for a, b in zip(ours, theirs))}
    return result


def run_all(quick=False):
    """Every network of the module docstring (``quick``: no ResNet-50, fewer repeats), and the LAC words-and-tags
    agreement of ONNX Runtime with oar over the People's Daily test split (``quick``: 200 lines)."""
    from .lac import peoples_daily_test_texts
    threads = os.environ.get("OAR_NUM_THREADS") or os.environ.get("OMP_NUM_THREADS") or "default"
    return {"threads": threads,
            "networks": [bench_runtimes(name, model, feed, axes, repeat=2 if quick else 5)
                         for name, model, feed, axes in _zoo_feeds(quick)],
            "lac_agreement": lac_agreement(peoples_daily_test_texts(200 if quick else None))}
