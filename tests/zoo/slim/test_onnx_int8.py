"""The int8 ONNX model runs in a bare ONNX Runtime (a process that imports only numpy and onnxruntime) with
int8 kernels, close to the float model; oar's own int8 program exports as QDQ and matches ONNX Runtime."""
import os

import numpy
import pytest

from framework import jit, no_grad, to_tensor
from framework.slim import int8

from ...framework.slim.nets import ShiftNet, SmallResNet, randomised
from .bare import run_bare

onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")
from framework.onnx import export  # noqa: E402
from framework.onnx.quantized import has_int8_activations  # noqa: E402
from zoo.slim.onnx_int8 import int8_pads, quantize_onnx  # noqa: E402

RNG = numpy.random.default_rng(2)


def test_onnx_runtime_runs_the_int8_model_with_int8_kernels(tmp_path):
    model = randomised(SmallResNet())
    x = RNG.normal(size=(4, 3, 10, 10)).astype(numpy.float32)
    float_path, int8_path = str(tmp_path / "model.onnx"), str(tmp_path / "model.int8.onnx")
    export(jit.trace(model, (x[:1],)), float_path)
    feeds = [{"x": RNG.normal(size=(1, 3, 10, 10)).astype(numpy.float32)} for _ in range(16)]
    quantize_onnx(float_path, int8_path, "static", feeds, "abs_max")
    with no_grad():
        expected = model(to_tensor(x)).numpy()
    result = run_bare(int8_path, x, expected, str(tmp_path))
    optimized = str(tmp_path / "optimized.onnx")
    assert result["modules"] == [] and result["shape"] == [4, 5]
    assert result["error"] < 0.1 * numpy.abs(expected).max()
    kernels = {node.op_type for node in onnx.load(optimized).graph.node}
    assert "QLinearConv" in kernels, kernels
    initializers = {t.data_type for t in onnx.load(int8_path).graph.initializer}
    assert onnx.TensorProto.INT8 in initializers


def _quantised(model, x, tmp_path):
    float_path, int8_path = str(tmp_path / "model.onnx"), str(tmp_path / "model.int8.onnx")
    export(jit.trace(model, (x,)), float_path)
    feeds = [{"x": RNG.normal(size=x.shape).astype(numpy.float32)} for _ in range(8)]
    quantize_onnx(float_path, int8_path, "static", feeds, "abs_max")
    return onnx.load(int8_path)


def test_the_temporal_shift_stays_int8(tmp_path):
    """The shift's zero Pads read the uint8 tensor (padded by its zero point), not a dequantised copy; no
    DequantizeLinear is left to read the tensor's shape (sizes come from the graph input); the values stay those of the float model."""
    model = ShiftNet()
    x = RNG.normal(size=(2, 2, 3, 6, 6)).astype(numpy.float32)
    quantised = _quantised(model, x, tmp_path)
    producer = {name: node for node in quantised.graph.node for name in node.output}
    pads = [node for node in quantised.graph.node if node.op_type == "Pad"]
    assert len(pads) == 2 and all(producer[p.input[0]].op_type != "DequantizeLinear" for p in pads)
    assert all(p.input[2].endswith("zero_point") for p in pads)
    inputs = {i.name for i in quantised.graph.input}
    assert all(node.input[0] in inputs for node in quantised.graph.node if node.op_type == "Shape")
    assert int8_pads(quantised) == 0                                          # nothing left to rewrite
    import onnxruntime
    got = onnxruntime.InferenceSession(str(tmp_path / "model.int8.onnx"),
                                       providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    with no_grad():
        expected = model(to_tensor(x)).numpy()
    assert numpy.abs(got - expected).max() < 0.05 * numpy.abs(expected).max() + 0.02


def test_oar_int8_program_exports_as_qdq(tmp_path):
    model = randomised(SmallResNet())
    x = RNG.normal(size=(2, 3, 10, 10)).astype(numpy.float32)
    int8.quantize(model, lambda b: model(to_tensor(b)), [x], "abs_max")
    program = jit.trace(model, (x,), passes=("remove_identities", "eliminate_dead_code"))
    path = str(tmp_path / "qdq.onnx")
    report = export(program, path)         # checked against the program in ONNX Runtime, int8 tolerance
    assert has_int8_activations(program) and min(next(iter(report.errors.values()))) < 0.02
    ops = [node.op_type for node in onnx.load(path).graph.node]
    assert ops.count("DequantizeLinear") >= 6 + 6 and ops.count("QuantizeLinear") == 6
    assert os.path.getsize(path) < 0.5 * sum(p.size * 4 for p in SmallResNet().parameters()) + 20000
