"""The sentiment scores of predicted ids and the exact McNemar test (checked against scipy's binomial test)."""
import math

import numpy
import pytest

from nlp.senta.metrics import ClassReport, mcnemar_p, scores_of, sentiment_metrics


def test_scores_of_predicted_ids():
    assert scores_of([1, 1, 0, 0], [1, 0, 0, 0]) == pytest.approx({"acc": 0.75, "macro_f1": (2 / 3 + 0.8) / 2})


def test_the_class_report_gives_each_named_class_its_precision_recall_f1_and_support():
    report = ClassReport(["delivery", "quality", "service"])
    report.update({"pred": numpy.array([0, 0, 1, 2, 2, 0])}, {"label": numpy.array([0, 1, 1, 2, 0, 0])})
    assert report.compute() == pytest.approx({
        "precision/delivery": 2 / 3, "recall/delivery": 2 / 3, "f1/delivery": 2 / 3, "support/delivery": 3,
        "precision/quality": 1.0, "recall/quality": 0.5, "f1/quality": 2 / 3, "support/quality": 2,
        "precision/service": 0.5, "recall/service": 1.0, "f1/service": 2 / 3, "support/service": 1})
    assert [type(m).__name__ for m in sentiment_metrics(("a", "b", "c"))] == ["Accuracy", "MacroF1", "ClassReport"]
    assert sentiment_metrics(("a", "b", "c"))[1].num_classes == 3


def test_mcnemar_counts_only_the_lines_where_the_two_disagree():
    # 20 lines only a gets right, 8 only b, 50 both: p = 2 * P(X <= 8), X ~ Binomial(28, 1/2)
    a = numpy.array([True] * 20 + [False] * 8 + [True] * 50 + [False] * 5)
    b = numpy.array([False] * 20 + [True] * 8 + [True] * 50 + [False] * 5)
    expected = 2 * sum(math.comb(28, k) for k in range(9)) / 2 ** 28
    assert mcnemar_p(a, b) == pytest.approx(expected) == pytest.approx(0.0357, abs=1e-4)
    assert mcnemar_p(b, a) == mcnemar_p(a, b)
    assert mcnemar_p(a, a) == 1.0 and mcnemar_p([True, False], [False, True]) == 1.0
    with pytest.raises(ValueError, match="same length"):
        mcnemar_p([True], [True, False])
