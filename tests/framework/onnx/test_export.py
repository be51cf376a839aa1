"""framework.onnx.export: the file's interface, refusals and messages; OnnxProgram."""
import sys

import numpy
import pytest

import framework
import framework.onnx
from framework import jit, nn
from framework.errors import InputError
from framework.ops.activation import ReLU
from framework.tensor import Function

from .parity import onnx

RNG = numpy.random.default_rng(2)


class Tagger(nn.Layer):
    """A small sequence model with a dict output: ids (N, T), lengths (N,) -> scores (N, T, 3) and a pooled (N, 3)."""

    def __init__(self):
        super().__init__()
        self.embedding = nn.Embedding(10, 4)
        self.gru = nn.GRU(4, 3, direction="bidirect")
        self.head = nn.Linear(6, 3)

    def forward(self, ids, lengths):
        hidden, _ = self.gru(self.embedding(ids), lengths)
        scores = framework.nn.functional.relu(self.head(hidden))
        return {"scores": scores, "pooled": (scores.mean(axis=1), scores.sum(axis=1))}


AXES = {"ids": {0: "batch", 1: "seq"}, "lengths": {0: "batch"}}


def _feed(lengths):
    lengths = numpy.asarray(lengths, dtype=numpy.int64)
    return {"ids": RNG.integers(0, 10, (len(lengths), int(lengths.max()))).astype(numpy.int64), "lengths": lengths}


@pytest.fixture
def program():
    return jit.trace(Tagger(), _feed([4, 2]), AXES)


def test_named_inputs_outputs_and_dynamic_axes(program, tmp_path):
    report = framework.onnx.export(program, tmp_path / "tagger.onnx", _feed([4, 2]))
    model = onnx.load(str(tmp_path / "tagger.onnx"))
    onnx.checker.check_model(model, full_check=True)
    assert model.opset_import[0].version == 17
    dims = {i.name: [d.dim_param or d.dim_value for d in i.type.tensor_type.shape.dim] for i in model.graph.input}
    assert dims == {"ids": ["batch", "seq"], "lengths": ["batch"]}
    assert [o.name for o in model.graph.output] == ["scores", "pooled.0", "pooled.1"]
    assert set(report.errors) == {"scores", "pooled.0", "pooled.1"}
    assert max(min(e) for e in report.errors.values()) <= 1e-4


def test_onnx_program_returns_the_program_structure(program, tmp_path):
    framework.onnx.export(program, tmp_path / "tagger.onnx", _feed([4, 2]))
    runner = framework.onnx.OnnxProgram(tmp_path / "tagger.onnx")
    feed = _feed([7, 1, 3])
    got, expected = runner(**feed), program(**feed)
    assert set(got) == {"scores", "pooled"} and isinstance(got["pooled"], tuple)
    numpy.testing.assert_allclose(got["scores"], expected["scores"], atol=1e-5)
    numpy.testing.assert_allclose(runner(feed["ids"], feed["lengths"])["pooled"][1], expected["pooled"][1], atol=1e-5)
    with pytest.raises(InputError, match="'lengths'"):
        runner(ids=feed["ids"], lengths=feed["lengths"].astype(numpy.int32))


def test_layers_and_static_layers_trace_on_the_examples(tmp_path):
    layer = nn.Sequential(nn.Linear(3, 4), nn.ReLU())
    x = RNG.standard_normal((2, 3)).astype(numpy.float32)
    for target in (layer, jit.to_static(layer)):
        report = framework.onnx.export(target, tmp_path / "mlp.onnx", (x,))
        assert report.program.inputs[0].shape == ("batch", 3)
    assert framework.onnx.export(report.program, tmp_path / "mlp.onnx").errors["output"][0] <= 1e-5   # synthetic


class Mystery(Function):
    def forward(self, x):
        return x * 2

    def backward(self, gy):
        return gy * 2


class Inner(nn.Layer):
    def forward(self, x):
        return Mystery.apply(x)


class Outer(nn.Layer):
    def __init__(self):
        super().__init__()
        self.inner = Inner()

    def forward(self, x):
        return self.inner(x) + 1.0


def test_an_unmapped_op_names_the_op_and_its_layer(tmp_path):
    x = RNG.standard_normal((2, 3)).astype(numpy.float32)
    with pytest.raises(framework.onnx.UnsupportedOpError, match=r"Mystery in layer 'inner'"):
        framework.onnx.export(Outer(), tmp_path / "m.onnx", (x,))
    assert not (tmp_path / "m.onnx").exists()


def test_a_wrong_conversion_is_refused_naming_the_output(program, tmp_path, monkeypatch):
    from framework.onnx import CONVERTERS  # the exporter package, with every converter registered
    with CONVERTERS.override(ReLU, lambda g, node, inputs: g.op("Sigmoid", inputs)), \
            pytest.raises(framework.onnx.ExportError, match=r"output 'pooled.1' differs by .* beyond 0.0001"):
        framework.onnx.export(program, tmp_path / "bad.onnx", _feed([4, 2]))
    assert not (tmp_path / "bad.onnx").exists() and not (tmp_path / "bad.onnx.json").exists()


@pytest.mark.parametrize("missing", ["onnx", "onnxruntime"])
def test_a_missing_install_names_the_export_extra(program, tmp_path, monkeypatch, missing):
    monkeypatch.setitem(sys.modules, missing, None)
    from framework.onnx.exporter import export
    with pytest.raises(framework.onnx.MissingExportDependency, match=r'pip install "oar\[export\]"'):
        export(program, tmp_path / "m.onnx", _feed([4, 2]))
    with pytest.raises(framework.onnx.MissingExportDependency, match=r'pip install "oar\[export\]"'):
        getattr(framework.onnx, "OnnxProgram" if missing == "onnxruntime" else "export")
