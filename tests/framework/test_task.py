"""Task.predict serves both the Trainer (a batch dict) and users (a list of raw inputs)."""
import numpy
import pytest

from framework.config import load_config
from framework.engine import runner, to_tensors

import zoo.toy  # noqa: F401
from tests.framework.test_trainer import TINY


@pytest.fixture(scope="module")
def task():
    return runner.build_task(load_config(TINY))


def test_predict_on_a_batch_returns_model_outputs(task):
    outputs = task.predict(to_tensors({"x": numpy.zeros((3, 2), numpy.float32)}))
    assert outputs["pred"].shape == (3,) and outputs["prob"].shape == (3, 2)
    numpy.testing.assert_allclose(outputs["prob"].numpy().sum(axis=1), 1.0, rtol=1e-6)


def test_predict_on_raw_inputs_returns_plain_dicts(task):
    results = task.predict(["0 0", [1.5, -0.5]])
    assert len(results) == 2 and all(set(r) == {"label", "score"} for r in results)
    assert all(isinstance(r["label"], int) and 0.0 <= r["score"] <= 1.0 for r in results)


def test_predict_rejects_a_bare_string(task):
    with pytest.raises(TypeError, match="list of inputs"):
        task.predict("0 0")
