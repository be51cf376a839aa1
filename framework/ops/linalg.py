"""Matrix products: matmul (NumPy semantics, batched and broadcast), bmm, linear.

A stack of matrices times one matrix runs as a single 2-D GEMM over the
flattened batch, and the gradient of a plain-matrix operand of a batched
product is one GEMM over the batch (never a broadcast product summed afterwards).
Under ``framework.amp.autocast`` float32 products run in the autocast dtype
(forward and backward) and give float32 results. On NumPy the float32/float64
products of matrices and stacks of matrices run on the GEMM provider when one is
active (:func:`framework.kernels.providers.matmul`).
"""
import numpy

from .. import autocast
from ..kernels.providers import matmul as _product
from ..tensor import Function, OpError
from .utils import unbroadcast

__all__ = ["matmul", "bmm", "linear"]


def _swap(a):
    """The last two axes of ``a`` exchanged (a view)."""
    return a.swapaxes(-1, -2)


def _mm(a, b):
    """a @ b; a stack of matrices times one matrix runs as one GEMM. Shapes: (*B, m, k) @ (k, n)."""
    if b.ndim == 2 and a.ndim > 2:
        return _product(a.reshape(-1, a.shape[-1]), b).reshape(a.shape[:-1] + (b.shape[-1],))
    return _product(a, b)


def _grad_product(xp, p, q, shape):
    """p @ q summed down to ``shape``, the shape of the operand it is the gradient of.

    When ``shape`` is a plain matrix and p, q are stacks (*B, m, k), (*B, k, n)
    with the same batch, the sum over the batch is one GEMM:
    (m, B*k) @ (B*k, n).
    """
    if len(shape) == 2 and p.ndim > 2:
        return _product(xp.moveaxis(p, -2, 0).reshape(p.shape[-2], -1), q.reshape(-1, q.shape[-1]))
    return unbroadcast(_mm(p, q), shape)


class MatMul(Function):
    def forward(self, x, y):
        self.io_dtype, self.compute_dtype = x.dtype, autocast.compute_dtype(self.xp, x.dtype)
        x, y = autocast.cast(self.compute_dtype, x, y)
        a = _swap(x) if self.transpose_x and x.ndim > 1 else x
        b = _swap(y) if self.transpose_y and y.ndim > 1 else y
        self.saved = a, b
        return _mm(a, b).astype(self.io_dtype, copy=False)

    def backward(self, gy):
        a, b = self.saved
        gy = gy.astype(self.compute_dtype, copy=False)
        # promote vectors to matrices: a (k,) -> (1, k), b (k,) -> (k, 1)
        a2 = a.reshape(1, -1) if a.ndim == 1 else a
        b2 = b.reshape(-1, 1) if b.ndim == 1 else b
        batch = numpy.broadcast_shapes(a2.shape[:-2], b2.shape[:-2])
        g = gy.reshape(batch + (a2.shape[-2], b2.shape[-1]))
        ga = gb = None
        if self.needs_input_grad[0]:
            ga = _grad_product(self.xp, g, _swap(b2), a2.shape).reshape(a.shape)
            ga = _swap(ga) if self.transpose_x and ga.ndim > 1 else ga
        if self.needs_input_grad[1]:
            gb = _grad_product(self.xp, _swap(a2), g, b2.shape).reshape(b.shape)
            gb = _swap(gb) if self.transpose_y and gb.ndim > 1 else gb
        return autocast.cast(self.io_dtype, ga, gb)


class Linear(Function):
    def forward(self, x, weight, *bias):
        self.io_dtype, self.compute_dtype = x.dtype, autocast.compute_dtype(self.xp, x.dtype)
        x, weight = autocast.cast(self.compute_dtype, x, weight)
        self.saved = x, weight
        y = _product(x.reshape(-1, x.shape[-1]), weight).astype(self.io_dtype, copy=False)
        if bias:  # added in the input dtype, after the product
            y += bias[0]
        return y.reshape(x.shape[:-1] + (weight.shape[1],))

    def backward(self, gy):
        x, weight = self.saved
        g2 = gy.reshape(-1, weight.shape[1])
        gb = g2.sum(axis=0) if len(self.needs_input_grad) == 3 and self.needs_input_grad[2] else None
        g2 = g2.astype(self.compute_dtype, copy=False)
        gx = _product(g2, weight.T).reshape(x.shape) if self.needs_input_grad[0] else None
        gw = _product(x.reshape(-1, x.shape[-1]).T, g2) if self.needs_input_grad[1] else None
        gx, gw = autocast.cast(self.io_dtype, gx, gw)
        return (gx, gw) if len(self.needs_input_grad) == 2 else (gx, gw, gb)


def _check_pair(x, y, op):
    if x.data.dtype != y.data.dtype:
        raise OpError(f"{op}: dtype mismatch, {x.data.dtype} {x.shape} vs {y.data.dtype} {y.shape}")
    if x.data.ndim == 0 or y.data.ndim == 0:
        raise OpError(f"{op}: operands must have at least 1 dimension, got shapes {x.shape} and {y.shape}")


def matmul(x, y, transpose_x=False, transpose_y=False):
    """Matrix product with NumPy ``matmul`` semantics.

    A 1-D operand is a vector (its added axis is dropped from the result);
    operands with more than 2 dimensions are stacks of matrices whose batch
    axes broadcast. ``transpose_x``/``transpose_y`` swap the last two axes of
    that operand first (ignored for 1-D operands).

    Shapes: x (*B1, m, k), y (*B2, k, n) -> (*broadcast(B1, B2), m, n).
    Example: ``matmul(x, w)`` with x (8, 5, 3) and w (3, 4) gives (8, 5, 4).
    """
    _check_pair(x, y, "matmul")
    xs, ys = x.data.shape, y.data.shape
    k_x = xs[-2] if transpose_x and len(xs) > 1 else xs[-1]
    k_y = ys[-1] if transpose_y and len(ys) > 1 else ys[-2 if len(ys) > 1 else -1]
    if k_x != k_y:
        raise OpError(f"matmul: inner dimensions differ, x {xs} (transpose_x={transpose_x}) "
                      f"vs y {ys} (transpose_y={transpose_y})")
    return MatMul.apply(x, y, transpose_x=transpose_x, transpose_y=transpose_y)


def bmm(x, y):
    """Batched matrix product of two stacks of the same batch size.

    Shapes: x (B, m, k), y (B, k, n) -> (B, m, n).
    """
    _check_pair(x, y, "bmm")
    xs, ys = x.data.shape, y.data.shape
    if len(xs) != 3 or len(ys) != 3 or xs[0] != ys[0] or xs[2] != ys[1]:
        raise OpError(f"bmm: expected x (B, m, k) and y (B, k, n), got {xs} and {ys}")
    return MatMul.apply(x, y, transpose_x=False, transpose_y=False)


def linear(x, weight, bias=None):
    """Affine map y = x @ weight + bias, with the weight stored (in, out) as in Paddle.

    Shapes: x (*, in), weight (in, out), bias (out,) or None -> y (*, out).
    """
    _check_pair(x, weight, "linear")
    xs, ws = x.data.shape, weight.data.shape
    if len(ws) != 2 or xs[-1] != ws[0]:
        raise OpError(f"linear: x {xs} does not fit weight {ws} (expected x (*, {ws[0] if ws else '?'}) "
                      "and weight (in, out))")
    if bias is None:
        return Linear.apply(x, weight)
    if bias.data.shape != (ws[1],) or bias.data.dtype != weight.data.dtype:
        raise OpError(f"linear: bias {bias.data.shape} {bias.data.dtype} does not fit weight {ws} "
                      f"{weight.data.dtype} (expected ({ws[1]},))")
    return Linear.apply(x, weight, bias)
