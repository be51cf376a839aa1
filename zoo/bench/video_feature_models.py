"""Train-step time of the feature models (``oar bench video_models``, feature part) beside PyTorch.

Each model is built at its 2019 YouTube-8M size (rgb 1024 + audio 128 features, 3862 classes) and timed
on one training step (forward, summed sigmoid cross entropy, backward, Adam update) on a batch of 32
videos of 300 frames (``quick``: 4 videos of 50 frames). When ``torch`` is importable, a PyTorch version of
the same model (:mod:`zoo.bench.torch_twins`), with the same sizes, is timed in the same way; ``ratio`` =
ours / PyTorch. Times are the median of ``repeat`` steps after one warm-up step. Results are returned and
printed as JSON, never asserted.
"""

import numpy

import framework
import framework.nn.functional as F
from framework.registry import MODELS
from framework.timing import median_time

from video.models import attention_cluster, attention_lstm, nextvlad  # noqa: F401  (register the models)

from .torch_twins import torch_attention_cluster, torch_attention_lstm, torch_nextvlad, torch_or_none

__all__ = ["MODEL_NAMES", "bench_ours", "bench_torch", "oar_train_step", "torch_train_step", "run_all"]

MODEL_NAMES = ("attention_cluster_youtube8m", "attention_lstm_youtube8m", "nextvlad_youtube8m")
DIMS, CLASSES = (1024, 128), 3862


def _batch(batch, frames, seed=0):
    rng = numpy.random.default_rng(seed)
    features = [rng.normal(size=(batch, frames, d)).astype(numpy.float32) for d in DIMS]
    labels = (rng.random((batch, CLASSES)) < 0.001).astype(numpy.float32)
    return features, numpy.full(batch, frames, dtype=numpy.int64), labels


def bench_ours(name, batch, frames, repeat):
    """Seconds per training step of our ``name`` at the given batch and frames."""
    return median_time(oar_train_step(name, batch, frames), repeat)


def oar_train_step(name, batch, frames):
    """A function running one training step of our ``name`` at the given batch and frames."""
    framework.seed(0)
    model = MODELS.build({"type": name})
    model.train()
    optimizer = framework.optimizer.Adam(learning_rate=1e-4, parameters=model.parameters())
    features, lengths, labels = _batch(batch, frames)
    inputs = [framework.to_tensor(f) for f in features]
    lengths, labels = framework.to_tensor(lengths), framework.to_tensor(labels)

    def step():
        loss = F.binary_cross_entropy_with_logits(model(inputs, lengths), labels, reduction="none").sum(axis=1).mean()
        loss.backward()
        optimizer.step()
        optimizer.clear_grad()
    return step


def _torch_model(name):
    """The PyTorch twin of ``name`` at the same sizes as ours (see :mod:`zoo.bench.torch_twins`)."""
    builder = {"attention_cluster_youtube8m": torch_attention_cluster, "attention_lstm_youtube8m": torch_attention_lstm,
               "nextvlad_youtube8m": torch_nextvlad}[name]
    return builder(feature_dims=DIMS, num_classes=CLASSES)


def bench_torch(name, batch, frames, repeat):
    """Seconds per training step of the PyTorch version of ``name``, or None without torch."""
    step = torch_train_step(name, batch, frames)
    return None if step is None else median_time(step, repeat)


def torch_train_step(name, batch, frames):
    """A function running one training step of the PyTorch version of ``name``, or None without torch."""
    torch = torch_or_none()
    if torch is None:
        return None
    torch.manual_seed(0)
    model = _torch_model(name)
    model.train()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-4)
    features, _, labels = _batch(batch, frames)
    inputs, labels = [torch.from_numpy(f) for f in features], torch.from_numpy(labels)
    loss_fn = torch.nn.BCEWithLogitsLoss(reduction="none")

    def step():
        loss = loss_fn(model(inputs), labels).sum(1).mean()
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
    return step


def run_all(quick=False, repeat=3):
    """One row per model: ``{"model", "batch", "frames", "ours_s", "torch_s", "ratio", "videos_per_s"}``."""
    batch, frames = (4, 50) if quick else (32, 300)
    rows = []
    for name in MODEL_NAMES:
        ours = bench_ours(name, batch, frames, repeat)
        theirs = bench_torch(name, batch, frames, repeat)
        rows.append({"model": name, "batch": batch, "frames": frames, "ours_s": round(ours, 3),
                     "torch_s": None if theirs is None else round(theirs, 3),
                     "ratio": None if theirs is None else round(ours / theirs, 2),
                     "videos_per_s": round(batch / ours, 2)})
    return {"suite": "video_feature_models", "quick": quick, "rows": rows}


if __name__ == "__main__":
    import json
    print(json.dumps(run_all(quick=True), indent=1))
