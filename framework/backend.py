"""Array modules and devices.

The framework runs every op against an array module ``xp``: NumPy on the CPU,
CuPy on the GPU. CuPy is imported lazily, so ``import framework`` works on
machines without it.
"""
import numpy
from .errors import UserError

__all__ = ["set_device", "get_device", "is_gpu_available", "get_array_module",
           "array_module", "device_of", "to_device", "DeviceError"]

_current_device = "cpu"
_cupy = None
_cupy_checked = False


class DeviceError(UserError, RuntimeError):
    """Raised when a device is unknown, unavailable, or tensors live on different devices."""


def _load_cupy():
    """Return the cupy module, or None when it is not installed or has no GPU."""
    global _cupy, _cupy_checked
    if not _cupy_checked:
        _cupy_checked = True
        try:
            import cupy
            if cupy.cuda.runtime.getDeviceCount() > 0:
                _cupy = cupy
        except Exception:  # ImportError, or CUDA driver/runtime errors
            _cupy = None
    return _cupy


def is_gpu_available():
    """True when CuPy is installed and sees at least one GPU."""
    return _load_cupy() is not None


def normalise_device(device):
    """"cpu" or "gpu" for ``device`` (a name such as "gpu:0" or "cuda"; None: the current device)."""
    if device is None:
        return _current_device
    name = str(device).lower()
    if name.startswith("gpu") or name.startswith("cuda"):
        return "gpu"
    if name == "cpu":
        return "cpu"
    raise DeviceError(f"unknown device {device!r}: use 'cpu' or 'gpu'")


def set_device(device):
    """Make ``device`` ('cpu' or 'gpu') the default for new tensors and parameters."""
    global _current_device
    name = normalise_device(device)
    if name == "gpu" and not is_gpu_available():
        raise DeviceError("set_device('gpu'): CuPy with a visible GPU is required "
                          "(pip install 'oar[gpu]')")
    _current_device = name
    return name


def get_device():
    """The default device for new tensors: 'cpu' or 'gpu'."""
    return _current_device


def array_module(device=None):
    """The array module (numpy or cupy) of ``device`` (default: the current device)."""
    name = normalise_device(device)
    if name == "cpu":
        return numpy
    cupy = _load_cupy()
    if cupy is None:
        raise DeviceError("device 'gpu' needs CuPy with a visible GPU (pip install 'oar[gpu]')")
    return cupy


def get_array_module(array):
    """The array module that owns ``array``: numpy for NumPy arrays, cupy for CuPy arrays."""
    if isinstance(array, numpy.ndarray) or _cupy is None:
        return numpy
    return _cupy.get_array_module(array)


def device_of(array):
    """'cpu' for a NumPy array, 'gpu' for a CuPy array."""
    return "cpu" if get_array_module(array) is numpy else "gpu"


def to_device(array, device):
    """Copy ``array`` to ``device`` ('cpu' or 'gpu'); returns it unchanged when already there."""
    name = normalise_device(device)
    if device_of(array) == name:
        return array
    if name == "cpu":
        return array.get()
    return array_module("gpu").asarray(array)
