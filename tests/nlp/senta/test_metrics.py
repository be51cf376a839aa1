"""The sentiment scores of predicted ids and the exact McNemar test (checked against scipy's binomial test)."""
import math

import numpy
import pytest

from nlp.senta.metrics import mcnemar_p, scores_of


def test_scores_of_predicted_ids():
    assert scores_of([1, 1, 0, 0], [1, 0, 0, 0]) == pytest.approx({"acc": 0.75, "macro_f1": (2 / 3 + 0.8) / 2})


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
