"""The shipped compressed models load through zoo.load like any card: the pruned TSM is really smaller, the
int8 models hold int8 weights, and the text models answer obvious reviews on both runtimes."""
import json

import numpy
import pytest

import zoo
from framework import jit
from framework.slim import count_parameters, read_recipe
from zoo.catalog import card
from zoo.build import checked_weights

from .bare import run_bare

REVIEWS = ["质量很好，非常满意，下次还买", "太差了，用了一天就坏了，退货"]


def test_the_pruned_tsm_is_cut_as_its_plan_says():
    """Each pruned convolution keeps round(width * (1 - ratio)) filters, a multiple of 8 (the config's
    channel_multiple), and the convolution after it reads that many channels."""
    pruned, full = (zoo.load(name, static=False).model for name in ("tsm_synth_pruned", "tsm_synth"))
    _, recipe = read_recipe(checked_weights(card("tsm_synth_pruned")))
    ratios = recipe["pruned"]["ratios"]
    layers, widths = dict(pruned.named_sublayers()), {n: l.out_channels for n, l in full.named_sublayers()
                                                       if hasattr(l, "out_channels")}
    assert ratios
    for name, ratio in ratios.items():
        kept = layers[name].out_channels
        assert kept == round(widths[name] * (1 - ratio)) < widths[name] and kept % 8 == 0
        assert layers[name.replace("conv1", "conv2")].weight.shape[1] == kept
    assert count_parameters(pruned) < count_parameters(full)


@pytest.mark.parametrize("name, tolerance", [("tsm_synth_pruned", 1e-3), ("tsm_synth_int8", 0.1)])
def test_video_cards_run_their_onnx_file_without_oar(tmp_path, name, tolerance):
    """The exported ONNX file of a compressed video model gives, in a process that imports no oar code, what
    its oar program gives (int8: within the export's int8 tolerance, framework.onnx.exporter)."""
    pytest.importorskip("onnxruntime")
    zoo.export(name, str(tmp_path / "export"), formats=("oar", "onnx"))
    program = jit.load(str(tmp_path / "export" / "program"))
    clips = numpy.random.default_rng(0).normal(size=(2, 6, 3, 112, 112)).astype(numpy.float32)
    expected = program(clips)
    result = run_bare(tmp_path / "export" / "model.onnx", clips, expected, str(tmp_path))
    assert result["modules"] == [] and result["shape"] == [2, 12]
    assert result["error"] < tolerance * numpy.abs(expected).max()


@pytest.mark.parametrize("name", ["tsm_synth_int8", "senta_bilstm_int8"])
def test_int8_cards_hold_int8_weights(name):
    model = zoo.load(name, static=False).model
    int8 = [n for n, b in model.named_buffers() if n.endswith("_int8")]
    assert int8 and all(dict(model.named_buffers())[n].dtype == numpy.int8 for n in int8)


@pytest.mark.parametrize("name", ["senta_bilstm_int8", "senta_bow_distilled"])
@pytest.mark.parametrize("runtime", ["oar", "onnxruntime"])
def test_text_cards_answer_obvious_reviews(name, runtime):
    if runtime == "onnxruntime":
        pytest.importorskip("onnxruntime")
    labels = [r["label"] for r in zoo.load(name, runtime=runtime).predict(REVIEWS)]
    assert labels == ["positive", "negative"], json.dumps(labels)
