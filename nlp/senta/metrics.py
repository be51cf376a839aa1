"""The metrics of sentiment classification: accuracy and macro-F1 of the predicted class ids.

Both are the framework's generic metrics (:class:`~framework.engine.metrics.Accuracy`,
:class:`~framework.engine.metrics.MacroF1`, registered as ``Accuracy`` and
``MacroF1``); they read the task's ``pred`` (N,) and the batch's ``label`` (N,)
and report ``acc`` and ``macro_f1``, the names the configs' ``train.best_metric``,
the zoo cards and ``docs/RESULTS.md`` use. :func:`mcnemar_p` compares two
classifiers on the same lines (the paired test ``oar reproduce senta`` reports).
"""
import math

import numpy

from framework.engine.metrics import Accuracy, MacroF1

__all__ = ["sentiment_metrics", "scores_of", "mcnemar_p"]


def sentiment_metrics(num_classes=2):
    """New metric objects of a sentiment task: ``[Accuracy(), MacroF1(num_classes)]``."""
    return [Accuracy(), MacroF1(num_classes)]


def scores_of(pred, labels):
    """``{"acc", "macro_f1"}`` of predicted class ids ``pred`` (N,) against ``labels`` (N,)."""
    result = {}
    for metric in sentiment_metrics():
        metric.update({"pred": numpy.asarray(pred)}, {"label": numpy.asarray(labels)})
        result.update(metric.compute())
    return result


def mcnemar_p(correct_a, correct_b):
    """Exact two-sided McNemar p-value of two classifiers scored on the same lines.

    ``correct_a``, ``correct_b``: (N,) bools, whether each classifier got each
    line right. Only the discordant lines count: b = a right and b wrong, c = the
    reverse; p = min(1, 2 * P(X <= min(b, c))) for X ~ Binomial(b + c, 1/2)
    (1.0 when they never disagree).
    """
    a, b = numpy.asarray(correct_a, dtype=bool), numpy.asarray(correct_b, dtype=bool)
    if a.shape != b.shape or a.ndim != 1:
        raise ValueError(f"mcnemar_p: need two (N,) vectors of the same length, got {a.shape} and {b.shape}")
    only_a, only_b = int((a & ~b).sum()), int((~a & b).sum())
    n = only_a + only_b
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, k) for k in range(min(only_a, only_b) + 1)) / 2.0 ** n
    return min(1.0, 2.0 * tail)
