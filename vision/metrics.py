"""Classification metrics over class probabilities (shared by image and video classification)."""
import numpy

from framework.engine.metrics import Metric, to_numpy
from framework.registry import METRICS

__all__ = ["TopKAccuracy", "label_ranks"]


def label_ranks(scores, labels):
    """The rank (0 = best) of each example's label among its classes: (N,) int64.

    Shapes: scores (N, C), labels (N,) class ids. Ties go in class-index order (as a stable
    sort of the scores would place them), so constant scores rank only class 0 first.
    """
    own = scores[numpy.arange(len(labels)), labels][:, None]
    earlier = numpy.arange(scores.shape[1])[None, :] < labels[:, None]
    return ((scores > own) | ((scores == own) & earlier)).sum(axis=1)


@METRICS.register()
class TopKAccuracy(Metric):
    """Fraction of examples whose label is among the ``k`` highest scores, for each ``k``.

    Reads ``outputs[score_key]`` (N, K) scores and ``batch[label_key]`` (N,) ids;
    ``compute()`` gives ``{"top1": …, "top5": …}``. Tied scores rank in
    class-index order (:func:`label_ranks`). A ``k`` at or above the
    number of classes counts every example as correct (never an error on a
    2-class problem).
    """

    counters = ("correct", "total")

    def __init__(self, topk: list = (1, 5), score_key: str = "prob", label_key: str = "label"):
        self.topk = tuple(int(k) for k in topk)
        if not self.topk or min(self.topk) < 1:
            raise ValueError(f"TopKAccuracy: topk must be positive ints, got {topk!r}")
        self.score_key, self.label_key = score_key, label_key
        self.reset()

    def reset(self):
        self.correct = numpy.zeros(len(self.topk), dtype=numpy.int64)  # per k
        self.total = 0

    def update(self, outputs, batch):
        scores = to_numpy(outputs[self.score_key])
        labels = to_numpy(batch[self.label_key]).reshape(-1)
        if scores.ndim != 2 or scores.shape[0] != labels.size:
            raise ValueError(f"TopKAccuracy: scores {scores.shape} must be (N, classes) for {labels.size} labels")
        rank = label_ranks(scores, labels)
        self.correct += (rank[None, :] < numpy.array(self.topk)[:, None]).sum(axis=1)
        self.total += int(labels.size)

    def compute(self):
        return {f"top{k}": int(c) / max(self.total, 1) for k, c in zip(self.topk, self.correct)}
