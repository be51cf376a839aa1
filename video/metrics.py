"""Video classification metrics: top-k and mean class accuracy, confusion matrices, time-reversal pair scores,
and the YouTube-8M metrics.

Functions take NumPy arrays: ``scores`` (N, C), one row of class scores per
video, and ``labels``: class ids (N,) for single-label data, or multi-hot (N, C)
(any value > 0 is a positive) for multi-label data; the YouTube-8M metrics take
either. Ties between scores are broken by position (the lower class index, then
the earlier video, ranks first), so every result is deterministic.

YouTube-8M definitions (the challenge's ``eval_util.py``):

- GAP: each video's ``top_k`` highest-scoring classes are pooled over all
  videos, sorted by score, and ``sum_i precision@i * rel_i`` is divided by the
  total number of positive labels (including those outside every top k).
- Hit@1: the fraction of videos whose highest-scoring class is a positive.
- PERR: per video with k positives, the precision of its k highest-scoring
  classes (counting only scores > 0), averaged over all videos; a video
  without positives counts as 0.
- mAP: per class, the average precision of ranking all videos by that class's
  score; the mean over all classes, a class without positives counting as 0.

The registered metrics ``MeanClassAccuracy`` and ``YouTube8MMetrics`` read
``outputs[score_key]`` (N, C) and ``batch[label_key]``; top-k accuracy in
configs is ``vision.metrics.TopKAccuracy``. ``LabelGroupAccuracy`` scores one
group of classes of multi-label scores (e.g. the motions, or their time-reversal
pairs); ``FrameAttributeMetrics`` the per-frame outputs of
:class:`video.tasks.frame_attributes.FrameAttributes`.

Pair scores (:func:`collapse_pairs`, :func:`pair_collapsed_accuracy`,
:func:`per_pair_accuracy`): accuracy when a prediction only has to name the
right pair of classes that are each other's time reverse (what a model blind to
frame order can reach), and the accuracy inside each pair.
"""
import numpy

from framework.engine.metrics import Metric, to_numpy
from framework.registry import METRICS
from vision.metrics import label_ranks

__all__ = ["topk_accuracy", "mean_class_accuracy", "confusion_matrix", "collapse_pairs", "pair_collapsed_accuracy",
           "per_pair_accuracy", "gap", "hit_at_one", "perr", "mean_ap", "MeanClassAccuracy", "YouTube8MMetrics",
           "LabelGroupAccuracy", "FrameAttributeMetrics"]


def _scores(scores, who):
    scores = numpy.asarray(scores, dtype=numpy.float64)
    if scores.ndim != 2 or scores.shape[1] == 0:
        raise ValueError(f"{who}: scores must be (N, C) with C >= 1, got shape {scores.shape}")
    return scores


def _class_ids(labels, scores, who):
    labels = numpy.asarray(labels)
    if labels.shape != scores.shape[:1] or labels.dtype.kind not in "iu":
        raise ValueError(f"{who}: labels must be class ids of shape ({scores.shape[0]},), got {labels.dtype} "
                         f"{labels.shape}")
    if labels.size and (labels.min() < 0 or labels.max() >= scores.shape[1]):
        raise ValueError(f"{who}: labels must lie in [0, {scores.shape[1]}), got {labels.min()}..{labels.max()}")
    return labels.astype(numpy.int64)


def _positives(labels, scores, who):
    """Labels as a boolean (N, C) array of positives (class ids become one-hot rows)."""
    labels = numpy.asarray(labels)
    if labels.ndim == 1:
        ids = _class_ids(labels, scores, who)
        positives = numpy.zeros(scores.shape, dtype=bool)
        positives[numpy.arange(len(ids)), ids] = True
        return positives
    if labels.shape != scores.shape:
        raise ValueError(f"{who}: multi-hot labels must have the shape of the scores {scores.shape}, "
                         f"got {labels.shape}")
    return labels > 0


def _ranking(scores, axis=1):
    """Indices that sort ``scores`` from highest to lowest along ``axis``, ties in index order."""
    return numpy.argsort(-scores, axis=axis, kind="stable")


def topk_accuracy(scores, labels, k=(1, 5)):
    """Fractions of videos whose label is among their ``k`` highest scores: a list, one float per k.

    Shapes: scores (N, C), labels (N,) class ids.
    """
    scores = _scores(scores, "topk_accuracy")
    ranks = label_ranks(scores, _class_ids(labels, scores, "topk_accuracy"))
    return [float((ranks < int(kk)).mean()) if len(ranks) else 0.0 for kk in k]


def mean_class_accuracy(scores, labels):
    """The accuracy of the argmax within each class that occurs in ``labels``, averaged over those classes.

    Shapes: scores (N, C), labels (N,) class ids. Returns a float.
    """
    scores = _scores(scores, "mean_class_accuracy")
    labels = _class_ids(labels, scores, "mean_class_accuracy")
    correct = label_ranks(scores, labels) == 0
    present = numpy.unique(labels)
    if not present.size:
        return 0.0
    hits = numpy.bincount(labels, weights=correct, minlength=scores.shape[1])[present]
    counts = numpy.bincount(labels, minlength=scores.shape[1])[present]
    return float((hits / counts).mean())


def confusion_matrix(scores, labels, num_classes):
    """Counts (K, K) of the argmax predictions: row = true class, column = predicted class.

    Shapes: scores (N, K), labels (N,) class ids; ``num_classes`` is K. Returns an int64 array.
    """
    matrix = numpy.zeros((num_classes, num_classes), dtype=numpy.int64)
    numpy.add.at(matrix, (numpy.asarray(labels), numpy.asarray(scores).argmax(1)), 1)
    return matrix


def collapse_pairs(ids, pairs):
    """Class ids (N,) -> ids where both classes of each pair map to the pair's first class."""
    ids = numpy.asarray(ids).copy()
    for first, second in pairs:
        ids[ids == second] = first
    return ids


def pair_collapsed_accuracy(scores, labels, pairs):
    """Fraction of videos whose top-1 class is the label or the label's pair partner.

    scores (N, K), labels (N,) ids, pairs: [(a, b), …] classes that are each other's time reverse.
    """
    predictions = numpy.asarray(scores).argmax(axis=1)
    return float((collapse_pairs(predictions, pairs) == collapse_pairs(labels, pairs)).mean())


def per_pair_accuracy(scores, labels, pairs):
    """For each pair (a, b): top-1 accuracy on its videos when choosing only between a and b.

    Returns ``{"a/b": accuracy}`` (NaN-free: pairs without videos are left out);
    this is the accuracy inside the pair, about 0.5 for a model blind to order.
    """
    scores, labels = numpy.asarray(scores), numpy.asarray(labels)
    result = {}
    for first, second in pairs:
        rows = (labels == first) | (labels == second)
        if rows.any():
            chosen = numpy.where(scores[rows, first] >= scores[rows, second], first, second)
            result[f"{first}/{second}"] = float((chosen == labels[rows]).mean())
    return result


def _average_precision(hits, num_positives):
    """AP of ranked relevance flags ``hits`` (..., L) along the last axis over ``num_positives`` (...)."""
    cumulative = numpy.cumsum(hits, axis=-1)
    precision = cumulative / numpy.arange(1, hits.shape[-1] + 1)
    total = (precision * hits).sum(axis=-1)
    return numpy.where(num_positives > 0, total / numpy.maximum(num_positives, 1), 0.0)


def gap(scores, labels, top_k=20):
    """Global average precision over every video's ``top_k`` predictions (YouTube-8M). Returns a float.

    Shapes: scores (N, C), labels (N,) class ids or (N, C) multi-hot.
    """
    scores = _scores(scores, "gap")
    positives = _positives(labels, scores, "gap")
    top = _ranking(scores)[:, :min(int(top_k), scores.shape[1])]  # (N, k)
    pooled_scores = numpy.take_along_axis(scores, top, axis=1).ravel()
    pooled_hits = numpy.take_along_axis(positives, top, axis=1).ravel()
    order = _ranking(pooled_scores, axis=0)
    return float(_average_precision(pooled_hits[order].astype(numpy.float64), positives.sum()))


def hit_at_one(scores, labels):
    """Fraction of videos whose highest-scoring class is a positive. Returns a float.

    Shapes: scores (N, C), labels (N,) class ids or (N, C) multi-hot.
    """
    scores = _scores(scores, "hit_at_one")
    positives = _positives(labels, scores, "hit_at_one")
    best = _ranking(scores)[:, 0]
    return float(positives[numpy.arange(len(best)), best].mean()) if len(best) else 0.0


def perr(scores, labels):
    """Precision at equal recall rate (YouTube-8M), averaged over videos. Returns a float.

    Shapes: scores (N, C), labels (N,) class ids or (N, C) multi-hot.
    """
    scores = _scores(scores, "perr")
    positives = _positives(labels, scores, "perr")
    if not len(scores):
        return 0.0
    order = _ranking(scores)
    counts = positives.sum(axis=1)  # (N,)
    within = numpy.arange(scores.shape[1])[None, :] < counts[:, None]  # (N, C): among the top k_i
    ranked_hits = numpy.take_along_axis(positives & (scores > 0), order, axis=1)
    precision = (ranked_hits & within).sum(axis=1) / numpy.maximum(counts, 1)
    return float(precision.mean())


def mean_ap(scores, labels):
    """Mean over classes of the average precision of ranking the videos by that class's score.

    Shapes: scores (N, C), labels (N,) class ids or (N, C) multi-hot. A class
    without positives counts as 0 (YouTube-8M). Returns a float.
    """
    scores = _scores(scores, "mean_ap")
    positives = _positives(labels, scores, "mean_ap")
    order = _ranking(scores, axis=0)  # (N, C): videos by decreasing score, per class
    hits = numpy.take_along_axis(positives, order, axis=0).astype(numpy.float64).T  # (C, N)
    return float(_average_precision(hits, positives.sum(axis=0)).mean())


class _ScoreMetric(Metric):
    """Accumulates ``outputs[score_key]`` (N, C) and ``batch[label_key]`` of every batch."""

    counters = ("scores", "labels")

    def __init__(self, score_key="prob", label_key="label"):
        self.score_key, self.label_key = score_key, label_key
        self.reset()

    def reset(self):
        self.scores, self.labels = [], []

    def update(self, outputs, batch):
        scores = to_numpy(outputs[self.score_key])
        labels = to_numpy(batch[self.label_key])
        if scores.ndim != 2 or len(scores) != len(labels):
            raise ValueError(f"{type(self).__name__}: expected scores (N, C) and N labels, got scores "
                             f"{scores.shape} and labels {labels.shape}")
        self.scores.append(scores.astype(numpy.float32))
        self.labels.append(labels)

    def arrays(self):
        """All scores (N, C) and labels seen so far."""
        if not self.scores:
            raise ValueError(f"{type(self).__name__}: no batches were seen")
        return numpy.concatenate(self.scores), numpy.concatenate(self.labels)


@METRICS.register()
class MeanClassAccuracy(_ScoreMetric):
    """``{name: mean class accuracy}`` of single-label predictions (see :func:`mean_class_accuracy`)."""

    def __init__(self, score_key: str = "prob", label_key: str = "label", name: str = "mean_class_acc"):
        self.name = name
        super().__init__(score_key, label_key)

    def compute(self):
        return {self.name: mean_class_accuracy(*self.arrays())}


@METRICS.register()
class YouTube8MMetrics(_ScoreMetric):
    """``{"gap", "hit_at_one", "perr", "map"}`` (YouTube-8M definitions, GAP over the ``top_k`` per video)."""

    def __init__(self, top_k: int = 20, score_key: str = "prob", label_key: str = "label"):
        self.top_k = int(top_k)
        super().__init__(score_key, label_key)

    def compute(self):
        scores, labels = self.arrays()
        return {"gap": gap(scores, labels, self.top_k), "hit_at_one": hit_at_one(scores, labels),
                "perr": perr(scores, labels), "map": mean_ap(scores, labels)}


@METRICS.register()
class LabelGroupAccuracy(Metric):
    """Accuracy of the argmax inside one group of classes ``[start, end)`` of multi-label scores.

    Each video's true class in the group is its positive label there (videos with none are skipped).
    ``pairs`` (list of [a, b]) counts a prediction right when it names the other class of the true
    class's pair (e.g. a clip and its time reverse). Returns ``{name: accuracy}``.
    """

    counters = ("right", "count")

    def __init__(self, start: int, end: int, name: str = "group_acc", pairs: list = None,
                 score_key: str = "prob", label_key: str = "label"):
        self.start, self.end, self.name = int(start), int(end), name
        self.score_key, self.label_key = score_key, label_key
        self.partner = numpy.arange(self.end - self.start)
        for a, b in pairs or []:
            self.partner[int(a) - self.start], self.partner[int(b) - self.start] = int(b) - self.start, int(a) - self.start
        self.reset()

    def reset(self):
        self.right = self.count = 0

    def update(self, outputs, batch):
        scores = to_numpy(outputs[self.score_key])[:, self.start:self.end]
        labels = to_numpy(batch[self.label_key])[:, self.start:self.end] > 0.5
        has = labels.any(axis=1)
        truth, pred = labels.argmax(axis=1)[has], scores.argmax(axis=1)[has]
        self.right += int(((pred == truth) | (pred == self.partner[truth])).sum())
        self.count += int(has.sum())

    def compute(self):
        return {self.name: self.right / max(self.count, 1)}


@METRICS.register()
class FrameAttributeMetrics(Metric):
    """Shape accuracy (visible frames), visibility accuracy, and mean absolute errors of x, y
    (fractions of the frame) and of the angle (degrees) on visible frames.

    Reads ``outputs`` ``shape`` (M,) class ids, ``visible`` (M,) probabilities and ``geometry`` (M, 5), and
    ``batch`` ``shape``, ``visible`` and ``geometry`` (N, F[, 5]) with M = N * F (see
    :class:`video.tasks.frame_attributes.FrameAttributes`).
    """

    counters = ("count", "visible_count", "shape_right", "visible_right", "xy_error", "angle_error")

    def reset(self):
        self.count = self.visible_count = self.shape_right = self.visible_right = 0
        self.xy_error = self.angle_error = 0.0

    def update(self, outputs, batch):
        visible = to_numpy(batch["visible"]).reshape(-1) > 0.5
        geometry = to_numpy(batch["geometry"]).reshape(-1, 5)
        predicted = to_numpy(outputs["geometry"])
        self.count += visible.size
        self.visible_count += int(visible.sum())
        self.visible_right += int(((to_numpy(outputs["visible"]) > 0.5) == visible).sum())
        self.shape_right += int((to_numpy(outputs["shape"]) == to_numpy(batch["shape"]).reshape(-1))[visible].sum())
        self.xy_error += float(numpy.abs(predicted[visible, :2] - geometry[visible, :2]).mean(axis=1).sum())
        turn = numpy.arctan2(predicted[:, 4], predicted[:, 3]) - numpy.arctan2(geometry[:, 4], geometry[:, 3])
        self.angle_error += float(numpy.degrees(numpy.abs(numpy.angle(numpy.exp(1j * turn))))[visible].sum())

    def compute(self):
        seen = max(self.visible_count, 1)
        return {"shape_acc": self.shape_right / seen, "visible_acc": self.visible_right / max(self.count, 1),
                "xy_mae": self.xy_error / seen, "angle_mae_deg": self.angle_error / seen}
