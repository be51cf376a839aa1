"""The metrics of sentiment classification: accuracy and macro-F1 of the predicted class ids.

Both are the framework's generic metrics (:class:`~framework.engine.metrics.Accuracy`,
:class:`~framework.engine.metrics.MacroF1`, registered as ``Accuracy`` and
``MacroF1``); they read the task's ``pred`` (N,) and the batch's ``label`` (N,)
and report ``acc`` and ``macro_f1``, the names the configs' ``train.best_metric``,
the zoo cards and ``docs/RESULTS.md`` use.
"""
from framework.engine.metrics import Accuracy, MacroF1

__all__ = ["sentiment_metrics"]


def sentiment_metrics(num_classes=2):
    """New metric objects of a sentiment task: ``[Accuracy(), MacroF1(num_classes)]``."""
    return [Accuracy(), MacroF1(num_classes)]
