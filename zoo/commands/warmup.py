"""``oar warmup``: compile every compiled CPU kernel ahead into the cache (for images and CI)."""
import json
import sys

from ..usage import UsageError

__all__ = ["add_arguments", "run"]


def add_arguments(parser):
    """No flags."""


def run(args):
    """Compile every compiled CPU kernel ahead (for images and CI); prints what was compiled, as JSON."""
    from framework.kernels import cpu
    if not cpu.enabled():
        raise UsageError("the compiled CPU kernels are off (OAR_KERNELS=numpy, or Numba is not installed)")
    report = cpu.warmup(progress=lambda done: print(f"compiled {done}", file=sys.stderr, flush=True))
    print(json.dumps(report))
