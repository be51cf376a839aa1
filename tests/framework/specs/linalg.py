"""Specs for framework/ops/linalg.py. The reference multiplies by broadcasting
and summing (no matmul), promoting 1-D operands by hand."""
import numpy

import framework as fw
from ..opspec import OpSpec


def _swap(a):
    return numpy.swapaxes(a, -1, -2)


def matmul_ref(a, b, transpose_a=False, transpose_b=False):
    """NumPy matmul semantics from elementwise products: out[..., i, j] = sum_k a[..., i, k] b[..., k, j]."""
    a = _swap(a) if transpose_a and a.ndim > 1 else a
    b = _swap(b) if transpose_b and b.ndim > 1 else b
    a2 = a[None, :] if a.ndim == 1 else a
    b2 = b[:, None] if b.ndim == 1 else b
    out = (a2[..., :, :, None] * b2[..., None, :, :]).sum(axis=-2)
    if a.ndim == 1:
        out = out[..., 0, :]
    if b.ndim == 1:
        out = out[..., 0]
    return out


def _pair(shape_a, shape_b):
    return lambda rng: [rng.uniform(-1, 1, shape_a), rng.uniform(-1, 1, shape_b)]


MATMUL_CASES = [
    ((3, 4), (4, 5), False, False),
    ((4, 3), (4, 5), True, False),
    ((3, 4), (5, 4), False, True),
    ((4, 3), (5, 4), True, True),
    ((2, 3, 4), (4, 5), False, False),       # stack @ matrix: one GEMM forward and backward
    ((2, 3, 4), (5, 4), False, True),
    ((3, 4), (2, 4, 5), False, False),       # matrix @ stack: weight gradient summed over the batch
    ((2, 1, 3, 4), (3, 4, 2), False, False),  # broadcast batch axes
    ((2, 4, 3), (2, 4, 5), True, False),
    ((4,), (4, 5), False, False),            # vector @ matrix
    ((3, 4), (4,), False, False),            # matrix @ vector
    ((4,), (4,), False, False),              # dot product -> scalar
    ((4,), (2, 4, 3), False, False),         # vector @ stack
    ((2, 3, 4), (4,), False, False),         # stack @ vector
]

SPECS = [
    OpSpec("matmul", lambda x, y, tx=tx, ty=ty: fw.matmul(x, y, transpose_x=tx, transpose_y=ty), _pair(sa, sb),
           lambda a, b, tx=tx, ty=ty: matmul_ref(a, b, tx, ty))
    for sa, sb, tx, ty in MATMUL_CASES
]
SPECS += [
    OpSpec("bmm", fw.bmm, _pair((2, 3, 4), (2, 4, 5)), matmul_ref),
    OpSpec("linear", fw.linear,
           lambda rng: [rng.uniform(-1, 1, (2, 3, 4)), rng.uniform(-1, 1, (4, 5)), rng.uniform(-1, 1, (5,))],
           lambda x, w, b: matmul_ref(x, w) + b),
    OpSpec("linear", fw.linear, _pair((3, 4), (4, 2)), matmul_ref),
    OpSpec("linear", fw.linear,
           lambda rng: [rng.uniform(-1, 1, (4,)), rng.uniform(-1, 1, (4, 3)), rng.uniform(-1, 1, (3,))],
           lambda x, w, b: matmul_ref(x, w) + b),
]
