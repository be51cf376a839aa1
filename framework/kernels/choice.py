"""``OAR_KERNELS``: which kernels the ops run, read by the compiled kernels (:mod:`framework.kernels.cpu`) and
the GEMM provider (:mod:`framework.kernels.providers`) alike, so neither imports the other to ask."""
from ..settings import env_choice

__all__ = ["KERNELS_ENV", "requested"]

KERNELS_ENV = "OAR_KERNELS"
_CHOICES = ("numba", "numpy")


def requested():
    """What ``OAR_KERNELS`` asks for: 'numba' (the default) or 'numpy' (the reference kernels, and no provider)."""
    return env_choice(KERNELS_ENV, _CHOICES, "numba")
