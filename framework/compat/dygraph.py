"""``fluid.dygraph``: ``guard()`` and ``to_variable`` (``base.to_variable``)."""
import contextlib
import types

from .. import backend
from ..tensor import Tensor, to_tensor, enable_grad

__all__ = ["guard", "to_variable", "base"]


@contextlib.contextmanager
def guard(place=None):
    """Run the block in imperative mode on ``place`` ('cpu'/'gpu' or None for the current device).

    Our framework is always imperative; the guard only selects the device and
    makes sure graph recording is on, restoring both afterwards.
    """
    previous = backend.get_device()
    if place is not None:
        backend.set_device(place)
    try:
        with enable_grad():
            yield
    finally:
        backend.set_device(previous)


def to_variable(value, name=None, zero_copy=None, dtype=None):
    """A Tensor from a NumPy array (the 2019 name of ``to_tensor``).

    In DyGraph of that time, variables made this way took part in the graph:
    gradients were computed for them unless ``stop_gradient`` was set, so the
    result requires grad when its dtype is floating point.
    """
    if isinstance(value, Tensor):
        return value
    tensor = to_tensor(value, dtype=dtype)
    tensor.requires_grad = tensor.dtype.kind == "f"
    tensor.name = name
    return tensor


base = types.SimpleNamespace(to_variable=to_variable, guard=guard)
