"""Converters of the int8 ops of :mod:`framework.slim.ops`.

- ``DequantizeWeight`` read by convolutions and matmuls becomes
  ``DequantizeLinear`` of the int8 initializer (per-channel scale, zero point 0,
  the op's axis): the file keeps the int8 weights. Read by any other op (an
  embedding lookup, a recurrence whose converter needs its weight as an array)
  it becomes the dequantised float32 initializer, computed here once.
- ``FakeQuantize`` becomes ``QuantizeLinear`` + ``DequantizeLinear`` with the
  per-tensor scale and a uint8 zero point of 128, which is oar's int8 grid
  [-128, 127] shifted (ONNX Runtime's x86 int8 kernels take uint8 activations).
"""
import numpy

from ..ops.conv import ConvNd
from ..ops.linalg import Linear, MatMul
from ..ops.rnn import SequenceLinear
from ..slim.ops import DequantizeWeight, FakeQuantize
from ..slim.quant import dequantize_weight
from .graph import converts

_GEMMS = (ConvNd, Linear, MatMul, SequenceLinear)


def has_int8_activations(program):
    """True when some op of ``program`` rounds an activation to the int8 grid (``FakeQuantize``)."""
    return any(node.cls is FakeQuantize for node in program)


@converts(DequantizeWeight)
def dequantize_weight_converter(g, node, inputs):
    """int8 weights as DequantizeLinear before a GEMM, else the dequantised float32 array."""
    axis = int(node.attrs["axis"])
    q, scale = g.array(inputs[0]), g.array(inputs[1])
    readers = g.program.readers(node.outputs[0])
    if q is None or scale is None or not readers or not all(r.cls in _GEMMS for r in readers):
        return g.const(dequantize_weight(g.constant(inputs[0], "int8 weight"), g.constant(inputs[1], "weight scale"),
                                         axis), hint="dequantized_weight")
    zero = g.const(numpy.zeros(scale.shape, dtype=numpy.int8), hint="weight_zero_point")
    return g.op("DequantizeLinear", [inputs[0], inputs[1], zero], axis=axis)


@converts(FakeQuantize)
def fake_quantize_converter(g, node, inputs):
    """QuantizeLinear + DequantizeLinear on the per-tensor scale, uint8 with zero point 128."""
    zero = g.const(numpy.uint8(128), hint="activation_zero_point")
    return g.op("DequantizeLinear", [g.op("QuantizeLinear", [inputs[0], inputs[1], zero]), inputs[1], zero])
