"""Train-step time of the frame models (``oar bench video_models``), beside PyTorch when it is importable.

One step = forward, cross-entropy loss, backward and a Momentum SGD update on a
batch of ``batch`` clips of 8 frames (3 x 224 x 224 by default). Reported per
video, as the best of ``repeat`` steps after a warm-up step:

- ``tsn_r50``, ``tsm_r50`` (ours), and ``shift_overhead`` = TSM / TSN - 1
  (what the residual temporal shift adds);
- ``torch_tsn_r50``, ``torch_tsm_r50``: the same networks in PyTorch
  (:func:`zoo.bench.torch_twins.torch_tsm`: the plain-PyTorch ResNet, with
  TSM's shift as a pre-hook on each block's first convolution, the official
  shift code), and the ratios ours / PyTorch.

``quick`` runs one 112 x 112 clip per step (for smoke runs). Benchmarks print
JSON and are never asserted.
"""
import numpy

import framework
import framework.nn.functional as F
from framework.optimizer import Momentum
from framework.timing import best_time

from video.models import TSM, TSN

from .torch_twins import require_torch, torch_or_none, torch_tsm

__all__ = ["bench_ours", "bench_torch", "oar_train_step", "torch_train_step", "run_all"]

SEGMENTS = 8


def _clips(batch, size):
    rng = numpy.random.default_rng(0)
    return rng.standard_normal((batch, SEGMENTS, 3, size, size)).astype("float32"), rng.integers(0, 400, batch)


def bench_ours(model, batch, size, repeat):
    """Seconds per video of one training step of ``model`` (ours) on (batch, 8, 3, size, size) clips."""
    return best_time(oar_train_step(model, batch, size), repeat=repeat) / batch


def oar_train_step(model, batch, size):
    """A function running one training step of ``model`` (ours) on (batch, 8, 3, size, size) clips."""
    data, labels = _clips(batch, size)
    x, y = framework.to_tensor(data), framework.to_tensor(labels)
    optimizer = Momentum(learning_rate=0.001, momentum=0.9, parameters=model.parameters())
    model.train()

    def step():
        F.cross_entropy(model(x), y).backward()
        optimizer.step()
        optimizer.clear_grad()
    return step


def bench_torch(shift, batch, size, repeat):
    """Seconds per video of one PyTorch training step of TSN-R50 (``shift`` False) or TSM-R50 (True)."""
    return best_time(torch_train_step(shift, batch, size), repeat=repeat) / batch


def torch_train_step(shift, batch, size):
    """A function running one PyTorch training step of TSN-R50 (``shift`` False) or TSM-R50 (True)."""
    torch = require_torch()
    model = torch_tsm(shift, segments=SEGMENTS).train()
    data, labels = _clips(batch, size)
    x, y = torch.from_numpy(data), torch.from_numpy(labels)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.001, momentum=0.9)

    def step():
        torch.nn.functional.cross_entropy(model(x), y).backward()
        optimizer.step()
        optimizer.zero_grad()
    return step


def run_all(quick=False):
    """The JSON-able dict of timings (seconds per video) and ratios."""
    batch, size, repeat = (1, 112, 2) if quick else (2, 224, 5)
    framework.seed(0)
    result = {"clip": [SEGMENTS, 3, size, size], "batch": batch}
    result["tsn_r50"] = bench_ours(TSN(num_classes=400, depth=50, num_segments=SEGMENTS), batch, size, repeat)
    result["tsm_r50"] = bench_ours(TSM(num_classes=400, depth=50, num_segments=SEGMENTS, dropout=0.0), batch, size,
                                   repeat)
    result["shift_overhead"] = result["tsm_r50"] / result["tsn_r50"] - 1
    torch = torch_or_none()
    if torch is None:
        return result
    torch.set_num_threads(max(1, torch.get_num_threads()))
    result["torch_tsn_r50"] = bench_torch(False, batch, size, repeat)
    result["torch_tsm_r50"] = bench_torch(True, batch, size, repeat)
    result["tsn_ratio_to_torch"] = result["tsn_r50"] / result["torch_tsn_r50"]
    result["tsm_ratio_to_torch"] = result["tsm_r50"] / result["torch_tsm_r50"]
    return result
