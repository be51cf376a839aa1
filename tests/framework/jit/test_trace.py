"""framework.jit.trace: every model family replays exactly as eager at several sizes; passes; guards; refusals."""
import numpy
import pytest

import framework
from framework import Tensor, jit, nn, no_grad
from framework.registry import MODELS

from ..family_examples import FAMILIES


def eager(model, feed):
    """The eager model's output array on ``feed`` ({name: array or list of arrays})."""
    with no_grad():
        out = model(**{k: [Tensor(a) for a in v] if isinstance(v, list) else Tensor(v) for k, v in feed.items()})
    return out.data


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_every_family_replays_exactly_as_eager_at_every_size(family):
    config, axes, feeds = FAMILIES[family]
    model = MODELS.build(config)
    model.eval()
    feeds = feeds(numpy.random.default_rng(0))
    program = jit.trace(model, feeds[0], axes, passes=jit.EXACT_PASSES)
    assert program.nodes and not model.training
    for feed in feeds:
        out, expected = program(**feed), eager(model, feed)
        assert out.dtype == expected.dtype and out.shape == expected.shape
        numpy.testing.assert_array_equal(out, expected)


def _model_with_statistics(family, rng):
    """The family's model in eval mode, its batch norms' statistics far from 0/1 (so the passes have work)."""
    config, _, _ = FAMILIES[family]
    model = MODELS.build(config)
    model.eval()
    for layer in model.sublayers():
        if isinstance(layer, nn.BatchNorm2D):
            layer.running_mean.data[...] = rng.normal(0, 0.5, layer.running_mean.shape)
            layer.running_var.data[...] = rng.uniform(0.5, 2.0, layer.running_var.shape)
    return model


@pytest.mark.parametrize("family", ["resnet18", "mobilenet_v2", "TSM"])
def test_batch_norm_fusion_replays_eager_bit_for_bit(family):
    rng = numpy.random.default_rng(2)
    model, (_, axes, feeds) = _model_with_statistics(family, rng), FAMILIES[family]
    feeds = feeds(rng)
    fused = jit.trace(model, feeds[0], axes, passes=jit.INFERENCE_PASSES)
    counts, exact = fused.op_counts(), jit.trace(model, feeds[0], axes, passes=jit.EXACT_PASSES).op_counts()
    assert "BatchNorm" not in counts and counts["ChannelAffine"] == exact["BatchNorm"]
    assert "ReLU" not in exact or counts.get("ReLU", 0) < exact["ReLU"]    # the ReLUs after them went in too
    for feed in feeds:
        numpy.testing.assert_array_equal(fused(**feed), eager(model, feed))


@pytest.mark.parametrize("family", ["resnet18", "resnet50", "mobilenet_v2", "TSM"])
def test_batch_norm_folding_stays_within_float32_rounding(family):
    rng = numpy.random.default_rng(1)
    model, (_, axes, feeds) = _model_with_statistics(family, rng), FAMILIES[family]
    feeds = feeds(rng)
    folded = jit.trace(model, feeds[0], axes)
    assert "BatchNorm" not in folded.op_counts()
    assert jit.trace(model, feeds[0], axes, passes=()).op_counts().get("BatchNorm")
    for feed in feeds:
        expected = eager(model, feed)
        numpy.testing.assert_allclose(folded(**feed), expected, rtol=1e-5, atol=1e-5 * numpy.abs(expected).max())


class Tiny(nn.Layer):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 3)
        self.drop = nn.Dropout(0.5)

    def forward(self, x):
        y = self.drop(self.fc(x.reshape([x.shape[0] * x.shape[1], 4])))
        return framework.nn.functional.relu(y).reshape([x.shape[0], x.shape[1], 3]), None


def test_dynamic_axes_give_size_expressions_and_dropout_leaves_no_op():
    model = Tiny()
    model.train()
    x = numpy.random.default_rng(0).standard_normal((2, 5, 4)).astype(numpy.float32)
    program = jit.trace(model, (x,), {"x": {0: "batch", 1: "seq"}})
    assert model.training                                          # the mode comes back
    assert [spec.shape for spec in program.inputs] == [("batch", "seq", 4)]
    assert "Dropout" not in program.op_counts()
    model.eval()
    for shape in [(1, 1, 4), (3, 7, 4), (6, 2, 4)]:
        x = numpy.random.default_rng(1).standard_normal(shape).astype(numpy.float32)
        out, none = program(x)
        with no_grad():
            expected, _ = model(Tensor(x))
        assert none is None
        numpy.testing.assert_array_equal(out, expected.data)


def test_a_guard_names_the_input_its_shape_and_the_traced_one():
    model = Tiny()
    program = jit.trace(model, (numpy.zeros((2, 5, 4), numpy.float32),), {"x": {0: "batch"}})
    with pytest.raises(jit.GuardError, match=r"input 'x' is \(2, 6, 4\) float32; .*\(batch, 5, 4\) float32"):
        program(numpy.zeros((2, 6, 4), numpy.float32))
    with pytest.raises(jit.GuardError, match=r"input 'x' is \(2, 5, 4\) float64"):
        program(numpy.zeros((2, 5, 4)))
    with pytest.raises(jit.GuardError, match=r"missing \['x'\]"):
        program()
    assert isinstance(jit.GuardError("x"), framework.errors.UserError)


class SizeBranch(nn.Layer):
    def forward(self, x):
        return framework.nn.functional.relu(x) if x.shape[0] < 3 else framework.tanh(x)


class NumpyMask(nn.Layer):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(2, 2)

    def forward(self, x):
        return self.fc(x) * Tensor((x.data > 0).astype(numpy.float32))      # computed outside the ops


def test_control_flow_and_arrays_that_follow_the_inputs_are_refused_by_name():
    x = numpy.ones((2, 2), numpy.float32)
    with pytest.raises(jit.TraceError, match=r"other ops for inputs of other sizes, from op 0 \(ReLU\)"):
        jit.trace(SizeBranch(), (x,))
    with pytest.raises(jit.TraceError, match=r"op 1 \(Multiply\) reads an array of shape \(2, 2\) that no traced "
                                             r"op made"):
        jit.trace(NumpyMask(), (numpy.random.default_rng(0).standard_normal((2, 2)).astype(numpy.float32),))


def test_one_array_given_as_two_inputs_stays_two_inputs():
    config, axes, feeds = FAMILIES["SimNetCNN"]
    model = MODELS.build(config)
    model.eval()
    feed = feeds(numpy.random.default_rng(0))[0]
    feed["b_lengths"] = feed["a_lengths"]                       # the same array object twice
    program = jit.trace(model, feed, axes)
    other = {**feed, "b_lengths": numpy.minimum(feed["a_lengths"], 1)}
    numpy.testing.assert_array_equal(program(**other), eager(model, other))


class Decoder(nn.Layer):
    """A tagger that decodes in forward: Viterbi inside each length is an op, so it traces."""

    def __init__(self):
        super().__init__()
        self.tagger = MODELS.build(FAMILIES["BiGRUCRF"][0])

    def forward(self, tokens, lengths, lexicon):
        emissions = self.tagger(tokens, lengths, lexicon=lexicon)
        return framework.nn.functional.viterbi_decode(emissions, self.tagger.crf.transition, lengths)[1]


def test_crf_decoding_traces_and_honours_lengths():
    model = Decoder()
    model.eval()
    feeds = FAMILIES["BiGRUCRF"][2](numpy.random.default_rng(0))
    program = jit.trace(model, feeds[0], FAMILIES["BiGRUCRF"][1])
    for feed in feeds:
        numpy.testing.assert_array_equal(program(**feed), eager(model, feed))
