"""Compiled CPU kernels (Numba) for the loops NumPy cannot fuse: the GRU and LSTM steps, the CRF forward
algorithm, Viterbi, the depthwise convolution, batch norm with batch statistics, an inference program's batch
norm with its ReLU, an embedding's weight gradient (a row scatter-add), the Adam update and 2-D max pooling.

They sit behind the same op classes as the NumPy kernels, which stay the reference:
``OAR_KERNELS=numpy`` selects those (read on every call, so a test can switch),
and so does a missing or broken Numba (with one warning). Nothing here imports
Numba: :mod:`framework.kernels.cpu.compiler` does, on the first call of a
compiled kernel, so ``oar list`` and models without recurrences never pay its
import. Compiled code is cached under ``$OAR_HOME/numba`` (one folder per CPU,
Numba version and BLAS); where that folder cannot be written the kernels compile
in memory for the process, with one warning.

Public: :func:`enabled` (whether ops use the compiled kernels now), :func:`requested` (what
``OAR_KERNELS`` asks for; the GEMM provider, :mod:`framework.kernels.providers`, follows it too),
:func:`warmup` (compile every kernel for float32 and float64, as ``oar warmup``
does), :data:`KERNELS_ENV`.
"""
import importlib.util
import os
import warnings

from ..choice import KERNELS_ENV, requested

__all__ = ["enabled", "requested", "warmup", "KERNELS_ENV"]

_state = {"checked": False, "available": False}


def _numba_available():
    """Whether Numba can be imported (checked once per process without importing it)."""
    if not _state["checked"]:
        _state["checked"] = True
        _state["available"] = importlib.util.find_spec("numba") is not None
        if not _state["available"]:
            warnings.warn("oar: Numba is not installed; the CPU recurrences and CRF run on the NumPy kernels "
                          "(slower). `pip install numba` to compile them.", RuntimeWarning, stacklevel=3)
    return _state["available"]


def enabled():
    """True when the ops run the compiled CPU kernels: ``OAR_KERNELS`` is unset or 'numba' and Numba is installed.

    ``OAR_KERNELS=numpy`` selects the NumPy kernels (the reference). Any other value is a
    :class:`~framework.settings.SettingError` naming the choices. The variable is read on every call; the
    answer is kept for the value last read (ops ask several times per call).
    """
    raw = os.environ[KERNELS_ENV] if KERNELS_ENV in os.environ else None     # no KeyError raised and caught
    if "raw" not in _state or _state["raw"] != raw:
        answer = requested() == "numba" and _numba_available()
        _state.update(raw=raw, enabled=answer)
    return _state["enabled"]


def warmup(progress=None):
    """Compile (or load from the cache) every compiled kernel for float32 and float64.

    ``progress``: optional callable(str) told each kernel family as it is done.
    Returns a dict: ``cache`` (the folder, or None when compiling in memory),
    ``kernels`` (names compiled), ``seconds``.
    """
    from . import warm
    return warm.warmup(progress)
