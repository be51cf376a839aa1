"""The generic metrics of framework.engine.metrics."""
import numpy
import pytest

from framework.engine.metrics import MacroF1
from framework.registry import METRICS


def test_macro_f1_matches_hand_computation():
    metric = METRICS.build({"type": "MacroF1"})
    metric.update({"pred": numpy.array([1, 1, 0, 1])}, {"label": numpy.array([1, 0, 0, 1])})
    metric.update({"pred": numpy.array([0])}, {"label": numpy.array([1])})
    # class 0: tp 1, fp 1, fn 1 -> 0.5; class 1: tp 2, fp 1, fn 1 -> 2/3
    assert metric.compute()["macro_f1"] == pytest.approx((0.5 + 2 / 3) / 2)
    metric.reset()
    metric.update({"pred": numpy.array([1, 1])}, {"label": numpy.array([1, 1])})
    assert metric.compute() == {"macro_f1": 1.0}                     # class 0 never occurs: left out
    with pytest.raises(ValueError, match=r"class ids must lie in \[0, 2\)"):
        MacroF1().update({"pred": numpy.array([2])}, {"label": numpy.array([1])})
    state = MacroF1()
    state.update({"pred": numpy.array([1, 0])}, {"label": numpy.array([1, 1])})
    merged = MacroF1()
    merged.set_state(state.state())
    assert merged.compute() == state.compute()                       # counts merge over ranks
