"""The metrics of text classification: accuracy, macro-F1 and a per-class report of the predicted class ids.

Both are the framework's generic metrics (:class:`~framework.engine.metrics.Accuracy`,
:class:`~framework.engine.metrics.MacroF1`, registered as ``Accuracy`` and
``MacroF1``); they read the task's ``pred`` (N,) and the batch's ``label`` (N,)
and report ``acc`` and ``macro_f1``, the names the configs' ``train.best_metric``,
the zoo cards and ``docs/RESULTS.md`` use; :class:`ClassReport` adds each class's precision,
recall, F1 and support under ``<measure>/<class name>``. :func:`mcnemar_p` compares two
classifiers on the same lines (the paired test ``oar reproduce senta`` reports).
"""
import math

import numpy

from framework.engine.metrics import Accuracy, MacroF1

__all__ = ["ClassReport", "sentiment_metrics", "scores_of", "mcnemar_p"]


class ClassReport(MacroF1):
    """Per class of ``names`` (by id): precision, recall, F1 and support (the lines labelled with it).

    Reads ``pred`` (N,) and ``label`` (N,) class ids as :class:`MacroF1`; ``compute()`` gives
    ``{"precision/<name>", "recall/<name>", "f1/<name>", "support/<name>"}`` for every class
    (0.0 where a ratio has nothing to count).
    """

    def __init__(self, names, pred_key="pred", label_key="label"):
        self.names = tuple(names)
        super().__init__(len(self.names), pred_key, label_key, name="class_report")

    def compute(self):
        tp = numpy.diag(self.confusion).astype(numpy.float64)
        labelled, predicted = self.confusion.sum(axis=1), self.confusion.sum(axis=0)
        report = {}
        for k, name in enumerate(self.names):
            report[f"precision/{name}"] = float(tp[k] / predicted[k]) if predicted[k] else 0.0
            report[f"recall/{name}"] = float(tp[k] / labelled[k]) if labelled[k] else 0.0
            both = labelled[k] + predicted[k]
            report[f"f1/{name}"] = float(2 * tp[k] / both) if both else 0.0
            report[f"support/{name}"] = float(labelled[k])
        return report


def sentiment_metrics(names=("negative", "positive")):
    """New metric objects of a text classification task over the class ``names`` (by id):
    ``[Accuracy(), MacroF1(K), ClassReport(names)]``."""
    return [Accuracy(), MacroF1(len(names)), ClassReport(names)]


def scores_of(pred, labels):
    """``{"acc", "macro_f1"}`` of predicted class ids ``pred`` (N,) against ``labels`` (N,)."""
    result = {}
    for metric in (Accuracy(), MacroF1()):
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
