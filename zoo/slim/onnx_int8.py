"""The int8 ONNX model ONNX Runtime runs with int8 kernels, made by ONNX Runtime's own quantiser.

oar's int8 program exports as QDQ (``framework/onnx/quantized.py``), but ONNX
Runtime fuses QDQ into int8 kernels only in its own patterns (batch norm folded
into the convolution, the output quantised after it), so the speed path
takes the float model as oar exports it (batch norm folded) and quantises it
with ``onnxruntime.quantization`` on the same calibration batches:

- ``static`` (convolution models): QDQ format, int8 weights per output channel
  (symmetric), uint8 activations per tensor, calibrated with the method of the
  config (abs-max -> MinMax, KL -> Entropy, percentile -> Percentile); ONNX Runtime
  then runs ``QLinearConv``/``QLinearMatMul``-style int8 kernels. Its quantiser
  leaves a zero ``Pad`` (the temporal shift's) in float between a
  ``DequantizeLinear`` and a ``QuantizeLinear`` of the same scale, which ONNX
  Runtime keeps as three ops; :func:`int8_pads` makes it one ``Pad`` of the uint8
  tensor with the zero point as its value, so activations stay int8 through it;
- ``dynamic`` (recurrent models): int8 weights, activations quantised per call;
  ONNX Runtime turns ``LSTM`` into its int8 ``DynamicQuantizeLSTM`` and the
  matmuls into integer matmuls. It has no int8 GRU.
"""
import contextlib
import logging
import os
import shutil
import sys

import numpy

from framework.onnx.errors import reading_model
from framework.onnx.runtime import sidecar_path

__all__ = ["quantize_onnx", "int8_pads", "padded_feeds", "METHODS"]

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


def padded_feeds(feeds):
    """``feeds`` (list of ``{input name: array}``) with each input zero-padded at the end of every axis to the
    largest shape it has in any feed: ONNX Runtime's calibrator stacks a tensor's values over all feeds, so
    sentences of different lengths need one padded length (the lengths inputs keep the true ones)."""
    largest = {}
    for feed in feeds:
        for name, array in feed.items():
            largest[name] = numpy.maximum(largest.get(name, array.shape), array.shape)
    return [{name: numpy.pad(array, [(0, int(big) - size) for big, size in zip(largest[name], array.shape)])
             for name, array in feed.items()} for feed in feeds]


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
        q.quantize_static(float_path, int8_path, _reader(padded_feeds(list(feeds))), quant_format=q.QuantFormat.QDQ,
                          per_channel=True,
                          activation_type=q.QuantType.QUInt8, weight_type=q.QuantType.QInt8,
                          calibrate_method=getattr(q.CalibrationMethod, METHODS[method]))
        import onnx
        model = onnx.load(int8_path)
        if int8_pads(model):
            onnx.save(model, int8_path)


def _requantised_pad(pad, producer, readers, arrays):
    """``(dq, q)`` when ``pad`` is a constant-mode zero Pad between a DequantizeLinear and a QuantizeLinear (its
    only reader) of one per-tensor scale and zero point, else None."""
    mode = next((a.s for a in pad.attribute if a.name == "mode"), b"constant")
    value = pad.input[2] if len(pad.input) > 2 else ""
    if mode != b"constant" or (value and (value not in arrays or arrays[value].any())):
        return None
    dq, after = producer.get(pad.input[0]), readers.get(pad.output[0], [])
    if dq is None or dq.op_type != "DequantizeLinear" or len(after) != 1 or after[0].op_type != "QuantizeLinear":
        return None
    q = after[0]
    if len(dq.input) < 3 or len(q.input) < 3 or arrays.get(dq.input[2], numpy.zeros(2)).size != 1:
        return None
    same = all(a in arrays and b in arrays and numpy.array_equal(arrays[a], arrays[b])
               for a, b in zip(dq.input[1:3], q.input[1:3]))
    return (dq, q) if same else None


def int8_pads(model):
    """Rewrite, in place, each ``DequantizeLinear -> Pad(zero) -> QuantizeLinear`` of one scale and zero point
    into a ``Pad`` of the quantised tensor by its zero point (the int8 code of 0.0); returns how many."""
    from onnx import numpy_helper
    graph = model.graph
    arrays = {t.name: numpy_helper.to_array(t) for t in graph.initializer}
    producer = {name: node for node in graph.node for name in node.output}
    readers = {}
    for node in graph.node:
        for name in node.input:
            readers.setdefault(name, []).append(node)
    outputs, dropped, count = {o.name for o in graph.output}, [], 0
    for pad in [node for node in graph.node if node.op_type == "Pad"]:
        found = _requantised_pad(pad, producer, readers, arrays)
        if found is None:
            continue
        dq, q = found
        inputs = [dq.input[0], pad.input[1], dq.input[2]]
        del pad.input[:]
        pad.input.extend(inputs)
        pad.output[0] = q.output[0]
        readers[dq.output[0]].remove(pad)
        dropped += [q] + ([dq] if not readers[dq.output[0]] and dq.output[0] not in outputs else [])
        count += 1
    for node in dropped:
        graph.node.remove(node)
    return count
