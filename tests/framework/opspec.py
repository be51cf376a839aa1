"""The op table: one OpSpec per public op drives forward, gradient and GPU tests.

Each spec file in ``tests/framework/specs/`` defines ``SPECS``, a list of
OpSpec. ``name`` is the public name in ``framework.ops.__all__`` (several specs
may share a name, e.g. different axes or options).
"""
from dataclasses import dataclass, field
from typing import Callable, Optional

import numpy


@dataclass
class OpSpec:
    """How to test one op.

    name: public op name (as in ``framework.ops.__all__``).
    fn: callable(*Tensors) -> Tensor or tuple of Tensors (wraps the op with its options).
    make: callable(rng) -> list of NumPy arrays, the inputs. Float inputs are
        made in float64; the forward test casts them to ``dtype``.
    ref: callable(*arrays) -> array or tuple, an independent NumPy reference
        (loops or closed forms, never the op itself). None only for ops whose
        forward is random (dropout); then ``check`` must test the values.
    grad: whether to run the float64 gradient check.
    wrt: indices of inputs to check (default: every float input).
    check: optional callable(outputs, inputs) with extra value assertions.
    dtype / out_dtype: float dtype of the forward test's inputs / expected
        float outputs (default: the same as ``dtype``).
    """
    name: str
    fn: Callable
    make: Callable
    ref: Optional[Callable]
    grad: bool = True
    wrt: Optional[list] = None
    dtype: str = "float32"
    out_dtype: Optional[str] = None
    atol: float = 1e-5
    rtol: float = 1e-4
    grad_atol: float = 1e-6
    grad_rtol: float = 1e-4
    eps: float = 1e-6
    check: Optional[Callable] = None
    id: str = field(default="")


def rand(*shape, low=-1.0, high=1.0):
    """Input maker: one uniform float64 array of ``shape``, as a one-element list."""
    return lambda rng: [rng.uniform(low, high, size=shape)]


def away_from(values, points, margin=0.05):
    """Move entries of ``values`` within ``margin`` of any of ``points`` away (for kinks)."""
    out = numpy.array(values, dtype=numpy.float64, copy=True)
    for p in points:
        near = numpy.abs(out - p) < margin
        out[near] = p + numpy.where(out[near] >= p, 2, -2) * margin
    return out
