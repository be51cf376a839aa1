"""The int8 ONNX model ONNX Runtime runs with int8 kernels, made by ONNX Runtime's own quantiser.

oar's int8 program exports as QDQ (``framework/onnx/quantized.py``), but ONNX
Runtime fuses QDQ into int8 kernels only in its own patterns (batch norm folded
into the convolution, the output quantised after it), so the speed path
takes the float model as oar exports it (batch norm folded) and quantises it
with ``onnxruntime.quantization`` on the same calibration batches:

- ``static`` (convolution models): QDQ format, int8 weights per output channel
  (symmetric), uint8 activations per tensor, calibrated with the method of the
  config (abs-max -> MinMax, KL -> Entropy, percentile -> Percentile); ONNX Runtime
  then runs ``QLinearConv``/``QLinearMatMul``-style int8 kernels;
- ``dynamic`` (recurrent models): int8 weights, activations quantised per call;
  ONNX Runtime turns ``LSTM`` into its int8 ``DynamicQuantizeLSTM`` and the
  matmuls into integer matmuls. It has no int8 GRU.
"""
import contextlib
import logging
import os
import shutil
import sys

from framework.onnx.errors import reading_model
from framework.onnx.runtime import sidecar_path

__all__ = ["quantize_onnx", "METHODS"]

METHODS = {"abs_max": "MinMax", "kl": "Entropy", "percentile": "Percentile"}


def _reader(feeds):
    """An ONNX Runtime calibration reader over a list of ``{input name: array}`` feeds."""
    from onnxruntime.quantization import CalibrationDataReader

    class Feeds(CalibrationDataReader):
        def __init__(self):
            self.feeds = iter(feeds)

        def get_next(self):
            return next(self.feeds, None)

    return Feeds()


def quantize_onnx(float_path, int8_path, mode, feeds=(), method="kl"):
    """Write the int8 model of ``float_path`` (an oar export, its ``.json`` beside it) to ``int8_path``:
    ``mode`` ``static`` with the calibration ``feeds`` (list of ``{input name: array}``) and ``method``,
    or ``dynamic``. The sidecar is copied, so :class:`framework.onnx.OnnxProgram` runs the result."""
    from onnxruntime import quantization as q
    with contextlib.redirect_stdout(sys.stderr), reading_model(float_path, "quantise"):   # it prints on stdout
        _quantize(q, float_path, int8_path, mode, feeds, method)
    shutil.copyfile(sidecar_path(float_path), sidecar_path(int8_path))
    return os.path.getsize(int8_path)


def _quantize(q, float_path, int8_path, mode, feeds, method):
    logging.getLogger().setLevel(max(logging.getLogger().level, logging.ERROR))
    if mode == "dynamic":
        q.quantize_dynamic(float_path, int8_path, per_channel=True, weight_type=q.QuantType.QInt8)
    else:
        q.quantize_static(float_path, int8_path, _reader(list(feeds)), quant_format=q.QuantFormat.QDQ, per_channel=True,
                          activation_type=q.QuantType.QUInt8, weight_type=q.QuantType.QInt8,
                          calibrate_method=getattr(q.CalibrationMethod, METHODS[method]))
