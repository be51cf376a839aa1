"""Test helpers: float64 central-difference gradient checks and closeness asserts."""
import numpy

from .tensor import Tensor, no_grad
from . import backend

__all__ = ["gradcheck", "assert_allclose", "numeric_grad"]


def assert_allclose(actual, expected, rtol=1e-5, atol=1e-6, msg=""):
    """Assert two arrays/Tensors are close; the message shows the worst element."""
    a = actual.numpy() if isinstance(actual, Tensor) else backend.to_device(numpy.asarray(actual)
                                                                            if not hasattr(actual, "get") else actual, "cpu")
    e = expected.numpy() if isinstance(expected, Tensor) else numpy.asarray(expected)
    if a.shape != e.shape:
        raise AssertionError(f"{msg} shape {a.shape} != expected {e.shape}")
    if a.size == 0:
        return
    a64, e64 = a.astype(numpy.float64), e.astype(numpy.float64)
    err = numpy.abs(a64 - e64) - (atol + rtol * numpy.abs(e64))
    if not numpy.all(err <= 0) or numpy.isnan(a64).any() != numpy.isnan(e64).any():
        worst = numpy.unravel_index(numpy.nanargmax(err), err.shape)
        raise AssertionError(f"{msg} not close: at {worst} got {a64[worst]!r}, expected {e64[worst]!r} "
                             f"(max abs diff {numpy.nanmax(numpy.abs(a64 - e64)):.3g}, rtol={rtol}, atol={atol})")


def _project(outputs, weights):
    total = 0.0
    for out, w in zip(outputs, weights):
        total = total + (out * Tensor(w)).sum() if isinstance(out, Tensor) else total
    return total


def _as_tuple(out):
    return out if isinstance(out, tuple) else (out,)


def numeric_grad(fn, arrays, index, weights, eps, positions):
    """Central differences of sum(w * fn(arrays)) w.r.t. ``arrays[index]`` at ``positions`` (flat)."""
    x = arrays[index]
    flat = x.reshape(-1)
    grads = numpy.zeros(len(positions))
    with no_grad():
        for k, j in enumerate(positions):
            old = flat[j]
            flat[j] = old + eps
            plus = _project(_as_tuple(fn(*[Tensor(a) for a in arrays])), weights).data
            flat[j] = old - eps
            minus = _project(_as_tuple(fn(*[Tensor(a) for a in arrays])), weights).data
            flat[j] = old
            grads[k] = (float(plus) - float(minus)) / (2 * eps)
    return grads


def gradcheck(fn, inputs, wrt=None, eps=1e-6, atol=1e-6, rtol=1e-4, max_elements=300, seed=0):
    """Compare backward's gradients with float64 central differences.

    Args:
        fn: callable taking Tensors (one per entry of ``inputs``) and returning a
            Tensor or a tuple of Tensors (non-float outputs are ignored).
        inputs: NumPy arrays; the ones differentiated must be float64.
        wrt: indices of inputs to check (default: every float input).
        max_elements: at most this many elements per input are checked
            (a random subset for larger inputs).

    Raises AssertionError naming the input and the worst element on mismatch.
    """
    arrays = [numpy.array(a, copy=True) for a in inputs]
    if wrt is None:
        wrt = [i for i, a in enumerate(arrays) if a.dtype.kind == "f"]
    for i in wrt:
        if arrays[i].dtype != numpy.float64:
            raise TypeError(f"gradcheck: input {i} must be float64, got {arrays[i].dtype}")
    rng = numpy.random.default_rng(seed)
    tensors = [Tensor(a.copy(), requires_grad=(i in wrt)) for i, a in enumerate(arrays)]
    outputs = _as_tuple(fn(*tensors))
    weights = [rng.standard_normal(o.shape) if isinstance(o, Tensor) and o.data.dtype.kind == "f" else None
               for o in outputs]
    outputs = [o if w is not None else None for o, w in zip(outputs, weights)]
    loss = _project(outputs, weights)
    if not isinstance(loss, Tensor) or not loss.requires_grad:
        raise AssertionError("gradcheck: the function's outputs do not depend on the checked inputs")
    loss.backward()
    for i in wrt:
        size = arrays[i].size
        positions = numpy.arange(size) if size <= max_elements else numpy.sort(
            rng.choice(size, max_elements, replace=False))
        analytic_full = tensors[i].grad.numpy() if tensors[i].grad is not None else numpy.zeros_like(arrays[i])
        analytic = analytic_full.reshape(-1)[positions]
        numeric = numeric_grad(fn, arrays, i, weights, eps, positions)
        err = numpy.abs(analytic - numeric) - (atol + rtol * numpy.abs(numeric))
        if numpy.any(err > 0) or numpy.isnan(analytic).any():
            k = int(numpy.nanargmax(err)) if not numpy.isnan(analytic).any() else int(numpy.argmax(numpy.isnan(analytic)))
            where = numpy.unravel_index(positions[k], arrays[i].shape)
            raise AssertionError(f"gradcheck: input {i} {arrays[i].shape} at {where}: backward gives "
                                 f"{analytic[k]:.8g}, central difference {numeric[k]:.8g}")
    return True
