"""Generic metrics: accumulate over batches, then ``compute()`` a dict of floats.

A metric takes the Task's ``predict`` output dict and the batch; which keys it
reads is a constructor argument, so the same metric serves every task.
"""
import numpy

from ..registry import METRICS

__all__ = ["Metric", "Accuracy", "MacroF1", "MeanLoss", "to_numpy"]


def to_numpy(value):
    """A Tensor, CuPy or NumPy array (or list) as a NumPy array."""
    if hasattr(value, "numpy"):
        return value.numpy()
    if hasattr(value, "get"):
        return value.get()
    return numpy.asarray(value)


class Metric:
    """Base class: ``reset()``, ``update(outputs, batch)``, ``compute() -> dict``.

    ``counters`` names the attributes that ``update`` accumulates: numbers or
    NumPy arrays that add up, or lists that concatenate. ``state()`` returns
    them and ``set_state()`` puts them back, which is how an evaluation
    sharded over several processes merges its ranks' counts
    (``framework.distributed.reduce_metrics``) before ``compute()``. A metric
    whose state is not such counters overrides both methods.
    """

    counters = ()

    def state(self):
        """``{name: value}`` of the accumulated counters."""
        if not self.counters:
            raise NotImplementedError(f"{type(self).__name__} declares no `counters` (the attributes update() "
                                      "accumulates) and does not override state()/set_state()")
        return {name: getattr(self, name) for name in self.counters}

    def set_state(self, state):
        """Replace the accumulated counters by ``state`` (as returned by :meth:`state`)."""
        for name, value in state.items():
            setattr(self, name, value)

    def reset(self):
        raise NotImplementedError

    def update(self, outputs, batch):
        raise NotImplementedError

    def compute(self):
        raise NotImplementedError


@METRICS.register()
class Accuracy(Metric):
    """Fraction of examples whose ``outputs[pred_key]`` equals ``batch[label_key]``.

    Shapes: predictions (N,) int class ids, labels (N,).
    """

    counters = ("correct", "total")

    def __init__(self, pred_key="pred", label_key="label", name="acc"):
        self.pred_key, self.label_key, self.name = pred_key, label_key, name
        self.reset()

    def reset(self):
        self.correct = 0
        self.total = 0

    def update(self, outputs, batch):
        pred = to_numpy(outputs[self.pred_key]).reshape(-1)
        label = to_numpy(batch[self.label_key]).reshape(-1)
        if pred.shape != label.shape:
            raise ValueError(f"Accuracy: {pred.size} predictions for {label.size} labels")
        self.correct += int((pred == label).sum())
        self.total += int(label.size)

    def compute(self):
        return {self.name: self.correct / max(self.total, 1)}


@METRICS.register()
class MacroF1(Metric):
    """Unweighted mean over classes of F1 = 2TP / (2TP + FP + FN).

    Classes that occur neither among the labels nor the predictions are left
    out of the mean. Shapes: ``outputs[pred_key]`` (N,) and ``batch[label_key]``
    (N,) integer class ids in [0, num_classes).
    """

    counters = ("confusion",)

    def __init__(self, num_classes: int = 2, pred_key: str = "pred", label_key: str = "label",
                 name: str = "macro_f1"):
        self.num_classes, self.pred_key, self.label_key, self.name = int(num_classes), pred_key, label_key, name
        self.reset()

    def reset(self):
        self.confusion = numpy.zeros((self.num_classes, self.num_classes), dtype=numpy.int64)   # [label, pred]

    def update(self, outputs, batch):
        pred = to_numpy(outputs[self.pred_key]).reshape(-1).astype(numpy.int64)
        label = to_numpy(batch[self.label_key]).reshape(-1).astype(numpy.int64)
        if pred.shape != label.shape:
            raise ValueError(f"MacroF1: {pred.size} predictions for {label.size} labels")
        both = numpy.concatenate([pred, label])
        if both.size and (both.min() < 0 or both.max() >= self.num_classes):
            raise ValueError(f"MacroF1: class ids must lie in [0, {self.num_classes}), "
                             f"got [{both.min()}, {both.max()}]")
        numpy.add.at(self.confusion, (label, pred), 1)

    def compute(self):
        tp = numpy.diag(self.confusion).astype(numpy.float64)
        support = self.confusion.sum(axis=1) + self.confusion.sum(axis=0)     # 2TP + FP + FN
        present = support > 0
        f1 = 2 * tp[present] / support[present]
        return {self.name: float(f1.mean()) if f1.size else 0.0}


@METRICS.register()
class MeanLoss(Metric):
    """Mean of ``outputs[key]`` (a per-example loss) over all examples seen."""

    counters = ("sum", "count")

    def __init__(self, key="loss", name="loss"):
        self.key, self.name = key, name
        self.reset()

    def reset(self):
        self.sum = 0.0
        self.count = 0

    def update(self, outputs, batch):
        values = to_numpy(outputs[self.key]).reshape(-1)
        self.sum += float(values.sum())
        self.count += int(values.size)

    def compute(self):
        return {self.name: self.sum / max(self.count, 1)}
