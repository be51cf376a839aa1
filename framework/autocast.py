"""Autocast state: in which dtype the GEMM ops compute, per thread (the half of :mod:`framework.amp` the ops read).

Inside ``autocast()``, the GEMM ops (``matmul``/``bmm``, ``linear``,
``conv1d/2d/3d``) given float32 inputs cast them down to the autocast dtype,
multiply in that precision and return float32 outputs; their backward
multiplies in the same precision and returns float32 gradients. This module
holds that state and the helpers the ops call (:func:`compute_dtype`,
:func:`cast`); it imports no Tensor, so the ops can read it without joining an
import circle. Loss scaling is :mod:`framework.grad_scaler`; both are
re-exported by :mod:`framework.amp`.
"""
import contextlib
import functools
import threading

import numpy

__all__ = ["autocast", "is_autocast_enabled", "autocast_dtype", "compute_dtype", "resolve_dtype", "cast", "DTYPES"]

DTYPES = ("float16", "bfloat16")


class _State(threading.local):
    enabled = False
    dtype = "float16"


_state = _State()


def _dtype_name(dtype):
    """'float16' or 'bfloat16' from a name, a NumPy type or a dtype; ValueError for anything else."""
    name = str(getattr(dtype, "__name__", dtype))
    if name not in DTYPES:
        raise ValueError(f"autocast: dtype must be one of {', '.join(DTYPES)}, got {dtype!r}")
    return name


@contextlib.contextmanager
def autocast(enabled=True, dtype="float16"):
    """Context (and decorator) in which float32 GEMM ops compute in ``dtype``.

    ``dtype`` is "float16" or "bfloat16" (the latter only on an array module
    that has it: NumPy does not). Contexts nest; ``autocast(False)`` inside
    turns it off for its block. The state is per thread.
    """
    name = _dtype_name(dtype)
    previous = _state.enabled, _state.dtype
    _state.enabled, _state.dtype = bool(enabled), name
    try:
        yield
    finally:
        _state.enabled, _state.dtype = previous


def is_autocast_enabled():
    """True inside an enabled ``autocast`` block (in this thread)."""
    return _state.enabled


def autocast_dtype():
    """The name of the dtype autocast computes in ("float16" or "bfloat16")."""
    return _state.dtype


@functools.lru_cache(maxsize=None)
def resolve_dtype(name, xp=numpy):
    """The dtype object of ``name`` ("float16"/"bfloat16") on array module ``xp``.

    Raises a ValueError naming the module and what to use when ``xp`` has no such dtype.
    """
    name = _dtype_name(name)
    kind = getattr(xp, name, None)
    if kind is None:
        raise ValueError(f"autocast: {xp.__name__} has no {name} dtype; use dtype='float16'")
    return numpy.dtype(kind)


def compute_dtype(xp, dtype):
    """The dtype a GEMM op with inputs of ``dtype`` computes in, under the current autocast state.

    The autocast dtype when autocast is on and ``dtype`` is float32; ``dtype`` itself otherwise.
    GEMM Functions call it in ``forward`` and keep the answer for ``backward``
    (which runs outside the context).
    """
    if _state.enabled and dtype == numpy.float32:
        return resolve_dtype(_state.dtype, xp)
    return dtype


def cast(dtype, *arrays):
    """The arrays as ``dtype`` (a tuple; an array already of ``dtype`` is returned as is, None stays None)."""
    return tuple(None if a is None else a.astype(dtype, copy=False) for a in arrays)
