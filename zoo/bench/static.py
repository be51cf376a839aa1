"""Batch-1 latency of the traced program beside the eager model (``oar bench static``).

For each network: milliseconds of one forward at batch 1, eager (ops on
Tensors, no autograd) and replayed from :func:`framework.jit.trace` with the
default graph passes (batch norm folded, constants precomputed) and with the
exact passes (no folding, bit-identical to eager), and ``eager / static``:

- ``resnet18``, ``resnet50``: a 224 x 224 image, 1,000 classes;
- ``tsm_r50``: TSM-ResNet-50 on one clip of 8 frames of 224 x 224;
- ``lac_pku``: the shipped tagger's network (embedding, hashed n-grams,
  lexicon features, two bidirectional GRU layers, emissions) on one People's
  Daily test sentence of median length, with its lexicon features.

Median of ``repeat`` runs after a warm-up (the machine may be shared).
"""
import numpy

from framework import Tensor, jit, no_grad
from framework.registry import MODELS
from framework.timing import median_time

__all__ = ["bench_network", "run_all"]


def _tensors(feed):
    return {k: [Tensor(a) for a in v] if isinstance(v, list) else Tensor(v) for k, v in feed.items()}


def bench_network(name, model, feed, axes=None, repeat=20):
    """``{eager_ms, static_ms, exact_static_ms, eager_over_static, ops}`` of ``model`` on ``feed`` ({input: array})."""
    model.eval()
    tensors = _tensors(feed)

    def eager():
        with no_grad():
            model(**tensors)
    folded = jit.trace(model, feed, axes)
    exact = jit.trace(model, feed, axes, passes=jit.EXACT_PASSES)
    times = {"eager": median_time(eager, repeat), "static": median_time(lambda: folded(**feed), repeat),
             "exact_static": median_time(lambda: exact(**feed), repeat)}
    row = {"model": name, **{f"{k}_ms": round(v * 1e3, 2) for k, v in times.items()},
           "eager_over_static": round(times["eager"] / times["static"], 2),
           "eager_over_exact_static": round(times["eager"] / times["exact_static"], 2),
           "ops": len(folded.nodes), "ops_exact": len(exact.nodes)}
    return row


def _lac_pku_feed():
    import zoo
    from .lac import peoples_daily_test_texts
    task = zoo.load("lac_pku", static=False)
    texts = sorted(peoples_daily_test_texts(400), key=len)
    batch = task.preprocess([texts[len(texts) // 2]])
    feed = {"tokens": batch["tokens"], "lengths": batch["tokens_lengths"], "lexicon": task.lexicon(batch["tokens"])}
    return task.model, feed, task.dynamic_axes


def run_all(quick=False):
    """Every network of the module docstring (``quick``: 64 x 64 inputs, few repeats)."""
    import video.models  # noqa: F401  (registers TSM)
    import vision.models  # noqa: F401
    size, repeat = (64, 3) if quick else (224, 20)
    rng = numpy.random.default_rng(0)
    image = {"x": rng.standard_normal((1, 3, size, size)).astype(numpy.float32)}
    clip = {"x": rng.standard_normal((1, 8, 3, size, size)).astype(numpy.float32)}
    rows = [bench_network("resnet18", MODELS.build({"type": "resnet18", "num_classes": 1000}), image, repeat=repeat),
            bench_network("resnet50", MODELS.build({"type": "resnet50", "num_classes": 1000}), image, repeat=repeat),
            bench_network("tsm_r50", MODELS.build({"type": "TSM", "depth": 50, "num_classes": 400,
                                                    "num_segments": 8}), clip, repeat=max(repeat // 4, 2))]
    model, feed, axes = _lac_pku_feed()
    rows.append(bench_network("lac_pku", model, feed, axes, repeat=repeat * 10))
    return rows
