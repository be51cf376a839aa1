"""Vision benchmarks (``oar bench vision``): ResNet forward and forward+backward images/s.

ResNet-50 at batch 8, 224x224 and ResNet-18 at batch 8, 112x112, 1000 classes.
"forward" is inference (eval mode, no graph); "forward+backward" is a training
step without the optimizer (train mode, cross-entropy loss, backward). Rates
are from the best wall time of a few repeats; ``*_cpu_s`` is the best process
CPU time per step (all threads), steadier on a shared machine. When PyTorch is
importable, the same definition (:func:`zoo.bench.torch_twins.torch_resnet`)
with the same weights runs beside it on the same threads; ``*_ratio`` is oar's
wall time over PyTorch's and ``*_cpu_ratio`` the same for CPU time. ``profile`` splits
one oar forward+backward of ResNet-50 by op family (wall seconds from
cProfile: the cumulative time of each op's ``forward``/``backward`` in
``framework/ops``).
"""
import numpy

import framework
import framework.nn.functional as F
from framework.timing import best_times

from vision.models import resnet18, resnet50

from .op_profile import seconds_by_op
from .torch_twins import torch_or_none, torch_resnet

__all__ = ["bench_resnet", "profile_resnet", "run_all"]

_BUILDERS = {18: (resnet18, "basic", (2, 2, 2, 2)), 50: (resnet50, "bottleneck", (3, 4, 6, 3))}


def _oar_steps(model, x, labels):
    """(forward, forward+backward) closures for an oar model on arrays x (N, 3, H, W), labels (N,)."""
    tx, tl = framework.to_tensor(x), framework.to_tensor(labels)

    def forward():
        model.eval()
        with framework.no_grad():
            model(tx)

    def forward_backward():
        model.train()
        model.clear_gradients()
        F.cross_entropy(model(tx), tl).backward()

    return forward, forward_backward


def _torch_steps(torch, model, x, labels):
    """The same two closures for a PyTorch model."""
    tx, tl = torch.from_numpy(x), torch.from_numpy(labels)

    def forward():
        model.eval()
        with torch.no_grad():
            model(tx)

    def forward_backward():
        model.train()
        model.zero_grad(set_to_none=True)
        torch.nn.functional.cross_entropy(model(tx), tl).backward()

    return forward, forward_backward


def bench_resnet(depth=50, batch=8, size=224, repeat=3):
    """Images/s of ResNet-``depth`` (18 or 50) on (batch, 3, size, size), oar and (if installed) PyTorch."""
    builder, block, layers = _BUILDERS[depth]
    rng = numpy.random.default_rng(0)
    x = rng.standard_normal((batch, 3, size, size), dtype=numpy.float32)
    labels = rng.integers(0, 1000, batch).astype(numpy.int64)
    framework.seed(0)
    model = builder()
    row = {"model": f"resnet{depth}", "batch": batch, "size": size}
    times = {}
    for name, fn in zip(("forward", "forward_backward"), _oar_steps(model, x, labels)):
        times[name] = best_times(fn, repeat)
        row[f"oar_{name}_images_per_s"] = batch / times[name][0]
        row[f"oar_{name}_cpu_s"] = times[name][1]
    torch = torch_or_none()
    if torch is not None:
        reference = torch_resnet(block, layers)
        result = reference.load_state_dict({k: torch.from_numpy(v.numpy()) for k, v in model.state_dict().items()},
                                           strict=False)  # only num_batches_tracked may be missing
        if result.unexpected_keys or any(not k.endswith("num_batches_tracked") for k in result.missing_keys):
            raise RuntimeError(f"the PyTorch reference does not match resnet{depth}: {result}")
        row["torch_threads"] = torch.get_num_threads()
        for name, fn in zip(("forward", "forward_backward"), _torch_steps(torch, reference, x, labels)):
            wall, cpu = best_times(fn, repeat)
            row[f"torch_{name}_images_per_s"] = batch / wall
            row[f"torch_{name}_cpu_s"] = cpu
            row[f"{name}_ratio"] = times[name][0] / wall  # oar time / PyTorch time
            row[f"{name}_cpu_ratio"] = times[name][1] / cpu
    return row


def profile_resnet(depth=50, batch=8, size=224):
    """Seconds of one oar forward+backward of ResNet-``depth``, by op family (``conv.backward`` …)."""
    builder = _BUILDERS[depth][0]
    rng = numpy.random.default_rng(0)
    x = rng.standard_normal((batch, 3, size, size), dtype=numpy.float32)
    _, step = _oar_steps(builder(), x, rng.integers(0, 1000, batch).astype(numpy.int64))
    step()  # warm-up: scratch buffers
    return {"model": f"resnet{depth}", "batch": batch, "size": size, **seconds_by_op(step)}


def run_all(quick=False):
    """Every vision benchmark; ``quick`` uses tiny inputs and one repeat (for tests)."""
    if quick:
        return {"resnet18_32": bench_resnet(18, batch=2, size=32, repeat=1),
                "profile": profile_resnet(18, batch=2, size=32)}
    return {"resnet50_224": bench_resnet(50, batch=8, size=224),
            "resnet18_112": bench_resnet(18, batch=8, size=112),
            "profile": profile_resnet(50, batch=8, size=224)}
