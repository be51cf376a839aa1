"""The Program API (inputs, outputs, spec, nodes, readers, replace_nodes, values), and a program read back by
``jit.load`` that exports to ONNX, folds its batch norms and counts its multiply-adds like a fresh trace."""
import numpy
import pytest

import framework
from framework import jit, nn
from framework.jit.passes import DEFAULT_PASSES, optimize
from framework.ops.norm import BatchNorm
from framework.slim import channel_groups, profile


class ConvBN(nn.Layer):
    """conv -> batch norm -> relu -> conv -> batch norm, pooled to (N, C) and returned twice in a dict."""

    def __init__(self):
        super().__init__()
        framework.seed(0)
        self.conv1, self.bn1 = nn.Conv2D(3, 8, 3, padding=1), nn.BatchNorm2D(8)
        self.conv2, self.bn2 = nn.Conv2D(8, 4, 3, padding=1), nn.BatchNorm2D(4)
        for bn in (self.bn1, self.bn2):                       # running statistics that are not the identity
            rng = numpy.random.default_rng(bn.running_mean.shape[0])
            bn.running_mean.data = rng.standard_normal(bn.running_mean.shape).astype(numpy.float32)
            bn.running_var.data = rng.uniform(0.5, 2.0, bn.running_var.shape).astype(numpy.float32)

    def forward(self, x):
        y = self.bn2(self.conv2(nn.functional.relu(self.bn1(self.conv1(x)))))
        return {"pooled": y.mean(axis=(2, 3)), "pair": (y.sum(axis=(2, 3)), None)}


def _x(n=2):
    return numpy.random.default_rng(1).standard_normal((n, 3, 6, 6)).astype(numpy.float32)


def test_the_api_reads_inputs_outputs_specs_and_readers():
    program = jit.trace(ConvBN(), (_x(),), passes=())
    assert [s.name for s in program.inputs] == ["x"] and program.inputs[0].shape == ("batch", 3, 6, 6)
    slots = program.output_slots()
    assert program.outputs == {"pooled": slots[0], "pair": (slots[1], None)}
    assert program.spec(0) == ((2, 3, 6, 6), numpy.float32) and program.spec(slots[0]).shape == (2, 4)
    assert list(program) == list(program.nodes)
    bn = next(node for node in program if node.cls is BatchNorm)
    assert program.readers(bn.inputs[0]) == [bn] and program.producers()[bn.outputs[0]] is bn
    assert program.is_value(bn.inputs[1]) and program.value_name(bn.inputs[1]) == "bn1.weight"
    assert program.read_counts()[slots[0]] == 1
    with pytest.raises(jit.UnknownSlotError, match="slots 0..") as err:
        program.spec(program.num_slots)
    assert isinstance(err.value, KeyError)


def test_replace_nodes_renames_reads_and_drops_the_replay_plan():
    program = jit.trace(ConvBN(), (_x(),), passes=())
    before = program(_x())
    last = program.nodes[-1]
    extra = program.add_value(numpy.zeros((), numpy.float32), "zero")
    assert program.is_value(extra) and program.spec(extra) == ((), numpy.float32)
    program.replace_nodes(program.nodes[:-1], renames={last.outputs[0]: last.inputs[0]})
    assert len(program.nodes) == len(jit.trace(ConvBN(), (_x(),), passes=()).nodes) - 1
    after = program(_x())                                   # the last op (a sum) dropped: its input is the output
    assert after["pair"][0].shape == (2, 4, 6, 6) and after["pair"][1] is None
    numpy.testing.assert_array_equal(after["pair"][0].sum(axis=(2, 3)), before["pair"][0])
    numpy.testing.assert_array_equal(after["pooled"], before["pooled"])
    program.remove_values([extra])
    assert not program.is_value(extra)


def test_a_program_without_slot_specs_names_the_missing_spec(tmp_path):
    program = jit.trace(ConvBN(), (_x(),), passes=())
    program.slot_specs.clear()
    with pytest.raises(jit.UnknownSlotError, match="no trace-time shape for slot 5"):
        program.spec(5)


def test_a_loaded_program_folds_counts_and_exports_like_a_fresh_trace(tmp_path):
    model = ConvBN()
    fresh = jit.trace(model, (_x(),), passes=())
    jit.save(fresh, tmp_path / "unfolded")
    loaded = jit.load(tmp_path / "unfolded")
    assert profile(loaded) == profile(fresh) and profile(loaded)["macs"] > 0
    assert [(g.name, g.size, g.prunable) for g in channel_groups(loaded)] == \
        [(g.name, g.size, g.prunable) for g in channel_groups(fresh)]

    folded_fresh, folded_loaded = optimize(fresh, DEFAULT_PASSES), optimize(loaded, DEFAULT_PASSES)
    assert "BatchNorm" not in folded_loaded.op_counts()
    assert folded_loaded.op_counts() == folded_fresh.op_counts()
    x = _x(3)
    for key in ("pooled",):
        numpy.testing.assert_array_equal(folded_loaded(x)[key], folded_fresh(x)[key])
    model.eval()
    eager = model(framework.to_tensor(x))
    numpy.testing.assert_allclose(folded_loaded(x)["pooled"], eager["pooled"].numpy(), rtol=1e-5, atol=1e-5)

    pytest.importorskip("onnx")
    pytest.importorskip("onnxruntime")
    from framework import onnx
    report = onnx.export(jit.load(tmp_path / "unfolded"), tmp_path / "loaded.onnx", {"x": x})
    assert set(report.errors) == {"pooled", "pair.0"}
    numpy.testing.assert_allclose(onnx.OnnxProgram(tmp_path / "loaded.onnx")(x=x)["pooled"], eager["pooled"].numpy(),
                                  rtol=1e-4, atol=1e-5)
