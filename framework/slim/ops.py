"""The two ops of an int8 model, recorded like every op so quantised models trace and export.

- :class:`DequantizeWeight` (``q`` int8, ``scale`` (C,) float32; attribute ``axis``)
  -> float32 ``q * scale`` along ``axis``. Its inputs are int8 buffers, so it has no
  gradient. On NumPy it is how an int8 layer computes: NumPy has no integer
  GEMM, so the weight is dequantised and the float GEMM runs (a traced program
  folds it once, at trace time). ONNX: ``DequantizeLinear`` with that axis.
- :class:`FakeQuantize` (``x``, ``scale`` () float32) -> ``x`` on the int8 grid
  (:func:`framework.slim.quant.fake_quantize`); the gradient is the
  straight-through estimate (``gy`` where ``x`` is inside the grid's range,
  0 where it was clipped). ONNX: ``QuantizeLinear`` + ``DequantizeLinear``,
  which ONNX Runtime fuses with the following convolution or matmul into an
  int8 kernel.
"""
from ..tensor import Function
from .quant import QMAX, dequantize_weight, fake_quantize

__all__ = ["DequantizeWeight", "FakeQuantize", "dequantize", "quantize_activation"]


class DequantizeWeight(Function):
    """float32 weight from int8 ``q`` and per-channel ``scale`` along ``self.axis``."""

    def forward(self, q, scale):
        return dequantize_weight(q, scale, self.axis, self.xp)

    def backward(self, gy):
        raise RuntimeError("DequantizeWeight: int8 weights have no gradient (quantise after training)")


class FakeQuantize(Function):
    """``x`` rounded to the int8 grid of the per-tensor ``scale``; straight-through gradient."""

    def forward(self, x, scale):
        self.saved = x, scale
        return fake_quantize(x, scale, self.xp)

    def backward(self, gy):
        x, scale = self.saved
        inside = (x >= (-QMAX - 1) * scale) & (x <= QMAX * scale)
        return gy * inside, None


def dequantize(q, scale, axis):
    """Tensor float32 of the int8 Tensor ``q`` (any shape) times the (C,) ``scale`` along ``axis``."""
    return DequantizeWeight.apply(q, scale, axis=int(axis))


def quantize_activation(x, scale):
    """Tensor ``x`` (any shape, float) on the int8 grid of the () float32 Tensor ``scale``."""
    return FakeQuantize.apply(x, scale)
