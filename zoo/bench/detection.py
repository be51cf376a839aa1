"""Detection benchmark (``oar bench detection``): SSD-MobileNetV1 batch-1 inference beside its PyTorch twin.

The network of ``configs/vision/ssd_mobilenet_v1_shapes.yaml`` (decoding included: the eval-mode output is
boxes and probabilities) on one (1, 3, S, S) image, on one thread (oar's chunked work and BLAS, and
PyTorch's intra-op threads, all set to 1): oar eager, oar's traced program (what ``zoo.load`` runs) and
:func:`zoo.bench.torch_twins.torch_ssd_mobilenet_v1` with the same weights. Times are the best wall time
of ``repeat`` runs after a warm-up; ``*_ratio`` is oar's time over PyTorch's. Non-maximum suppression is
post-processing on both sides and is left out.
"""
import os

import numpy

import framework
from framework import jit, threadpool
from framework.config import load_config
from framework.timing import best_times
from vision.models import ssd_mobilenet_v1

from ..catalog import ROOT
from .torch_twins import torch_or_none, torch_ssd_mobilenet_v1

__all__ = ["CONFIG", "bench_ssd", "run_all"]

CONFIG = os.path.join(ROOT, "configs", "vision", "ssd_mobilenet_v1_shapes.yaml")


def bench_ssd(model_cfg, repeat=20):
    """Batch-1 inference times of the SSD of ``model_cfg`` (a config's model section), one thread."""
    threadpool.set_num_threads(1)
    framework.seed(0)
    model = ssd_mobilenet_v1(**{k: v for k, v in model_cfg.items() if k != "type"}).eval()
    side = model.image_size
    x = numpy.random.default_rng(0).standard_normal((1, 3, side, side), dtype=numpy.float32)
    tx = framework.to_tensor(x)
    static = jit.to_static(model, passes=jit.INFERENCE_PASSES)

    def eager():
        with framework.no_grad():
            model(tx)

    def traced():
        static(tx)

    row = {"model": "ssd_mobilenet_v1", "image_size": side, "priors": model.num_priors, "threads": 1,
           "oar_eager_ms": best_times(eager, repeat)[0] * 1000, "oar_static_ms": best_times(traced, repeat)[0] * 1000}
    torch = torch_or_none()
    if torch is not None:
        torch.set_num_threads(1)
        twin = torch_ssd_mobilenet_v1(model.num_classes, float(model_cfg.get("scale", 1.0)), model.source_blocks,
                                      [int(c) for c in model_cfg.get("extra_channels", (512, 256, 256, 128))],
                                      [2 + 2 * len(r) for r in model.aspect_ratios], model.priors.numpy(),
                                      model.variances).eval()
        twin.load_state_dict({k: torch.from_numpy(v.numpy()) for k, v in model.state_dict().items()})
        tx_torch = torch.from_numpy(x)
        with torch.no_grad():
            difference = float(numpy.abs(twin(tx_torch).numpy() - static(tx).numpy()).max())

        def reference():
            with torch.no_grad():
                twin(tx_torch)

        row["torch_ms"] = best_times(reference, repeat)[0] * 1000
        row["max_abs_difference"] = difference
        row["eager_ratio"] = row["oar_eager_ms"] / row["torch_ms"]
        row["static_ratio"] = row["oar_static_ms"] / row["torch_ms"]
    return row


def run_all(quick=False):
    """The shipped config's SSD; ``quick``: a 64-pixel input and 2 repeats (for tests)."""
    model_cfg = load_config(CONFIG)["model"]
    if quick:
        model_cfg = {**model_cfg, "image_size": 64}
        return {"ssd_64": bench_ssd(model_cfg, repeat=2)}
    return {f"ssd_{model_cfg['image_size']}": bench_ssd(model_cfg)}
