"""The framework's random number generators (dropout, initializers, samplers).

One NumPy ``Generator`` drives all CPU randomness; ``seed(n)`` resets it (and
CuPy's generator when a GPU is in use). ``get_rng_state``/``set_rng_state``
capture it exactly, for resuming a run.
"""
import numpy

from . import backend

__all__ = ["seed", "get_rng", "get_rng_state", "set_rng_state", "rng_for"]

_rng = numpy.random.default_rng(0)
_gpu_rng = None


def seed(n):
    """Reset the framework's random generators to a fixed state."""
    global _rng, _gpu_rng
    _rng = numpy.random.default_rng(int(n))
    _gpu_rng = None
    if backend.is_gpu_available():
        cupy = backend.array_module("gpu")
        _gpu_rng = cupy.random.default_rng(int(n))


def get_rng():
    """The NumPy Generator used for CPU randomness."""
    return _rng


def rng_for(xp):
    """The generator for array module ``xp`` (numpy or cupy)."""
    global _gpu_rng
    if xp is numpy:
        return _rng
    if _gpu_rng is None:
        _gpu_rng = xp.random.default_rng(int(_rng.integers(2 ** 31)))
    return _gpu_rng


def get_rng_state():
    """A dict of plain values capturing the CPU generator's state."""
    state = _rng.bit_generator.state
    return {"bit_generator": state["bit_generator"],
            "state": int(state["state"]["state"]), "inc": int(state["state"]["inc"]),
            "has_uint32": int(state["has_uint32"]), "uinteger": int(state["uinteger"])}


def set_rng_state(state):
    """Restore a state returned by :func:`get_rng_state`."""
    global _rng
    _rng = numpy.random.default_rng()
    _rng.bit_generator.state = {
        "bit_generator": state["bit_generator"],
        "state": {"state": int(state["state"]), "inc": int(state["inc"])},
        "has_uint32": int(state["has_uint32"]), "uinteger": int(state["uinteger"])}
