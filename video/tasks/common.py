"""Helpers shared by the video tasks: readable top-k results and the time-reversal pair scores.

- :func:`topk_result`: one ``{"topk": [[name, prob], …]}`` dict, best first.
- :func:`collapse_pairs`, :func:`pair_collapsed_accuracy`, :func:`per_pair_accuracy`:
  accuracy when a prediction only has to name the right pair of classes that
  are each other's time reverse (what a model blind to frame order can reach).
"""
import numpy

__all__ = ["topk_result", "collapse_pairs", "pair_collapsed_accuracy", "per_pair_accuracy"]


def topk_result(probs, class_names=None, top_k=None):
    """``{"topk": [[name, prob], …]}`` for one video: the ``top_k`` best classes (all when None), best first.

    ``probs``: (K,) class probabilities; ``class_names``: K names (ids when None).
    Ties go to the lower class id.
    """
    probs = numpy.asarray(probs, dtype=numpy.float64).reshape(-1)
    if class_names is not None and len(class_names) != len(probs):
        raise ValueError(f"topk_result: {len(class_names)} class names for {len(probs)} scores")
    count = len(probs) if top_k is None else max(1, min(int(top_k), len(probs)))
    order = numpy.argsort(-probs, kind="stable")[:count]
    return {"topk": [[class_names[c] if class_names is not None else int(c), float(probs[c])] for c in order]}


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
