"""The shipped compressed models load through zoo.load like any card: the pruned TSM is really smaller, the
int8 models hold int8 weights, and the text models answer obvious reviews on both runtimes."""
import json

import numpy
import pytest

import zoo
from framework.slim import count_parameters, read_recipe
from zoo.catalog import card
from zoo.cards import checked_weights

REVIEWS = ["质量很好，非常满意，下次还买", "太差了，用了一天就坏了，退货"]


def test_the_pruned_tsm_is_cut_as_its_plan_says():
    task = zoo.load("tsm_synth_pruned", static=False)
    _, recipe = read_recipe(checked_weights(card("tsm_synth_pruned")))
    ratios = recipe["pruned"]["ratios"]
    conv = task.model.backbone.layer1[0].conv1
    assert conv.out_channels == round(16 * (1 - ratios["backbone.layer1.0.conv1"])) < 16
    assert task.model.backbone.layer1[0].conv2.weight.shape[1] == conv.out_channels
    assert count_parameters(task.model) < count_parameters(zoo.load("tsm_synth", static=False).model)


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
