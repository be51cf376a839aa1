"""The zoo's one task table (zoo/tasks.py): it covers every registered Task class and every card, and the
parts that need a task's inputs — export, serving's warm-up, compression's trace — take them from it."""
import dataclasses
import os

import pytest

import zoo
from framework.registry import TASKS as REGISTERED_TASKS
from zoo import tasks
from zoo.api import register_everything
from zoo.catalog import CatalogError, cards
from zoo.reproduce import groups
from zoo.serving.metrics import ServingMetrics
from zoo.serving.models import ServedModel
from zoo.serving.options import ServeOptions
from zoo.slim.source import open_source, traced


def test_every_registered_task_class_is_in_the_table_or_listed_as_not_a_zoo_task():
    register_everything()
    listed = [t for spec in tasks.TASK_TABLE.values() for t in spec.task_types]
    assert len(listed) == len(set(listed)), "a Task class is in two entries"
    # the library's Task classes: a test module may register a toy task of its own in the same process
    library = {name for name in REGISTERED_TASKS.names()
               if not REGISTERED_TASKS.get(name).__module__.startswith("tests.")}
    assert library == set(listed) | set(tasks.UNLISTED_TASK_TYPES)
    assert not set(listed) & set(tasks.UNLISTED_TASK_TYPES)


def test_every_card_serves_a_task_of_the_table_and_every_default_is_a_card_of_its_task():
    table = cards()
    assert {entry.task for entry in table.values()} <= set(tasks.TASK_TABLE)
    for name, default in tasks.DEFAULT_MODELS.items():
        assert table[default].task == name


def test_names_and_aliases_are_unique_and_resolve_to_their_entry():
    names = [n for spec in tasks.TASK_TABLE.values() for n in (spec.name,) + spec.aliases]
    assert len(names) == len(set(names))
    assert tasks.task_spec("senta").name == "sentiment" and tasks.task_spec("simnet").kind == "pair"
    assert tasks.spec_of_type("FeatureRecognition").name == "video" and tasks.spec_of_type("Nope") is None
    assert tasks.task_spec("ssd").name == "detection" and tasks.spec_of_type("ObjectDetection").kind == "file"
    with pytest.raises(CatalogError, match=r"unknown task 'segmentation' \(known: lexical_analysis \(lac, lexical\)"):
        tasks.task_spec("segmentation")
    with pytest.raises(ValueError, match="kind must be one of"):
        tasks.TaskSpec("x", ("X",), "tensor", list)


def test_reproduce_groups_come_from_the_table():
    table = groups()
    assert table["nlp"] == ("lexical_analysis", "sentiment", "matching")
    assert table["senta"] == ("sentiment",) and table["simnet"] == ("matching",) and table["video"] == ("video",)


@pytest.mark.parametrize("name", sorted(tasks.TASK_TABLE))
def test_example_inputs_are_real_inputs_of_the_task(name, tmp_path):
    examples = tasks.TASK_TABLE[name].example_inputs(str(tmp_path))
    kind = tasks.TASK_TABLE[name].kind
    assert examples and all({"text": lambda x: isinstance(x, str) and x,
                             "pair": lambda x: len(x) == 2 and all(isinstance(t, str) for t in x),
                             "file": os.path.isfile}[kind](x) for x in examples)


@pytest.fixture
def recorded_examples(monkeypatch):
    """The sentiment entry with its example maker replaced by one that records each call (and gives two
    reviews of its own), so a test sees who asks the table for inputs."""
    calls = []
    reviews = ["这家店的菜很好吃", "服务太差了，再也不来"]

    def examples(folder):
        calls.append(folder)
        return list(reviews)
    spec = dataclasses.replace(tasks.TASK_TABLE["sentiment"], examples=examples)
    monkeypatch.setitem(tasks.TASK_TABLE, "sentiment", spec)
    return calls


def test_export_traces_on_the_tables_example_inputs(recorded_examples, tmp_path):
    zoo.export("senta_bow", str(tmp_path / "export"))
    assert len(recorded_examples) == 1
    assert zoo.load(str(tmp_path / "export")).predict(["这家店的菜很好吃"])[0]["label"] in ("positive", "negative")


def test_a_served_model_warms_up_on_the_tables_example_inputs(recorded_examples):
    served = ServedModel("senta_bow", ServeOptions(port=0), ServingMetrics())
    served.load()
    try:
        assert served.state == "ready" and served.kind == "text" and len(recorded_examples) == 1
    finally:
        served.stop()


def test_compression_traces_on_the_tables_example_inputs(recorded_examples):
    program = traced(open_source("senta_bow"))
    assert program is not None and len(recorded_examples) == 1
