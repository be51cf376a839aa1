"""Where a training step's time goes, by op family: cProfile's cumulative time of each op's ``forward`` and
``backward`` in ``framework/ops`` (``conv.backward`` …), of the optimizer's ``step``, and the rest; on
request also the public functions of the fused kernels in ``framework/kernels`` (``im2col.im2col``,
``im2col.group_matmul`` …), which run inside the ops (their time is part of the op's, not added to it)."""
import cProfile
import os
import pstats
import time

import framework

__all__ = ["seconds_by_op"]

_OPS_DIR = os.path.join(os.path.dirname(os.path.abspath(framework.__file__)), "ops")
_OPTIMIZER_DIR = os.path.join(os.path.dirname(os.path.abspath(framework.__file__)), "optimizer")
_KERNELS_DIR = os.path.join(os.path.dirname(os.path.abspath(framework.__file__)), "kernels")


def seconds_by_op(step, kernels=False):
    """Run ``step()`` once under cProfile; returns ``{"total_s", "seconds_by_op": {family.pass: s, …, "other"}}``,
    families by decreasing time (wall seconds, profiler overhead included); with ``kernels`` also
    ``"seconds_by_kernel": {module.function: s}`` of the kernels' public functions."""
    profiler = cProfile.Profile()
    start = time.perf_counter()
    profiler.runcall(step)
    total = time.perf_counter() - start
    shares, kernel_shares = {}, {}
    for (path, _, function), (_, _, _, cumulative, _) in pstats.Stats(profiler).stats.items():
        folder = os.path.dirname(os.path.abspath(path))
        if folder == _KERNELS_DIR and not function.startswith("_"):
            key = f"{os.path.splitext(os.path.basename(path))[0]}.{function}"
            kernel_shares[key] = kernel_shares.get(key, 0.0) + cumulative
        if folder == _OPS_DIR and function in ("forward", "backward"):
            key = f"{os.path.splitext(os.path.basename(path))[0]}.{function}"
        elif folder == _OPTIMIZER_DIR and function == "step":
            key = "optimizer.step"
        else:
            continue
        shares[key] = shares.get(key, 0.0) + cumulative
    shares = {key: round(value, 4) for key, value in sorted(shares.items(), key=lambda item: -item[1])}
    shares["other"] = round(max(total - sum(shares.values()), 0.0), 4)
    result = {"total_s": round(total, 4), "seconds_by_op": shares}
    if kernels:
        result["seconds_by_kernel"] = {key: round(value, 4) for key, value in
                                       sorted(kernel_shares.items(), key=lambda item: -item[1])}
    return result
