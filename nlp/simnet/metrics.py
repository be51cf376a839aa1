"""Metrics of text matching: accuracy at a threshold, AUC, pairwise ranking accuracy, accuracy per
negative type, and the search for the threshold that maximises accuracy.

:func:`pair_metrics` scores a list of :class:`~nlp.simnet.pairs.MatchPair`
given one score each (a model's or a peer's, outside the Trainer), and
:func:`length_artefacts` measures how much trivial pair features (length
difference, new characters) say about the label.

They read the task's outputs ``score`` (N,) float (higher = more alike) and
``threshold`` (the model's, a float), and the batch's ``label`` (N,) 0/1,
``neg_type`` (a list of N str) and ``query_id`` (N,) int (pairs that share
``text_a`` share it). Scores are kept until ``compute()``, so the metrics that
need a threshold (:class:`MatchAccuracy`, :class:`NegTypeAccuracy`) can be
given another one by :class:`ThresholdSearch` before they compute.
"""
import numpy

from framework.engine.metrics import Metric, to_numpy
from framework.registry import METRICS

from .pairs import NEG_TYPES, POSITIVE

__all__ = ["average_ranks", "auc", "best_threshold", "ranking_accuracy", "pair_metrics", "length_artefacts",
           "ScoredPairs", "MatchAccuracy", "MatchAUC", "NegTypeAccuracy", "RankingAccuracy", "ThresholdSearch"]


def average_ranks(values):
    """Ranks 1..n of ``values`` (n,), ties sharing their average rank: float64 (n,)."""
    values = numpy.asarray(values)
    order = numpy.argsort(values, kind="stable")
    sorted_values = values[order]
    starts = numpy.flatnonzero(numpy.r_[True, sorted_values[1:] != sorted_values[:-1]])
    ends = numpy.r_[starts[1:], len(values)]
    ranks = numpy.empty(len(values), dtype=numpy.float64)
    ranks[order] = numpy.repeat((starts + ends + 1) / 2.0, ends - starts)
    return ranks


def auc(scores, labels):
    """Area under the ROC curve of ``scores`` (n,) for binary ``labels`` (n,): the chance that a random
    positive scores above a random negative, ties counting one half. NaN without both classes."""
    labels = numpy.asarray(labels).astype(bool)
    positives, negatives = int(labels.sum()), int((~labels).sum())
    if not positives or not negatives:
        return float("nan")
    rank_sum = average_ranks(scores)[labels].sum()
    return float((rank_sum - positives * (positives + 1) / 2.0) / (positives * negatives))


def best_threshold(scores, labels):
    """``(threshold, accuracy)`` maximising the accuracy of ``score >= threshold`` over ``labels`` (n,).

    Candidates lie halfway between consecutive distinct scores, plus one
    above the highest (nothing matches) and the lowest score (everything
    matches); among equally accurate ones the highest threshold wins.
    """
    scores = numpy.asarray(scores, dtype=numpy.float64)
    labels = numpy.asarray(labels).astype(bool)
    if not len(scores):
        raise ValueError("best_threshold: no scores")
    order = numpy.argsort(-scores, kind="stable")
    s, y = scores[order], labels[order]
    positives_taken = numpy.r_[0, numpy.cumsum(y)]                     # predicted matches: the first k
    negatives_taken = numpy.r_[0, numpy.cumsum(~y)]
    correct = positives_taken + (negatives_taken[-1] - negatives_taken)
    cut = numpy.r_[True, s[1:] != s[:-1], True]                       # k splits distinct scores
    k = int(numpy.flatnonzero(cut)[numpy.argmax(correct[cut])])
    if k == 0:
        threshold = float(numpy.nextafter(s[0], numpy.inf))
    elif k == len(s):
        threshold = float(s[-1])
    else:
        threshold = float((s[k - 1] + s[k]) / 2.0)
    return threshold, float(correct[k] / len(s))


def ranking_accuracy(scores, labels, queries):
    """Share of (positive, negative) pairs of one query where the positive scores higher (ties one half).

    ``scores``, ``labels``, ``queries`` (n,); NaN when no query has both a positive and a negative.
    """
    scores, labels, queries = numpy.asarray(scores), numpy.asarray(labels).astype(bool), numpy.asarray(queries)
    order = numpy.argsort(queries, kind="stable")
    bounds = numpy.flatnonzero(numpy.r_[True, queries[order][1:] != queries[order][:-1], True])
    wins, total = 0.0, 0
    for start, end in zip(bounds[:-1], bounds[1:]):
        group = order[start:end]
        pos, neg = scores[group][labels[group]], scores[group][~labels[group]]
        if len(pos) and len(neg):
            diff = pos[:, None] - neg[None, :]                          # (P, Q)
            wins += float((diff > 0).sum() + 0.5 * (diff == 0).sum())
            total += diff.size
    return wins / total if total else float("nan")


def pair_metrics(scores, pairs, threshold):
    """Accuracy at ``threshold``, AUC, ranking accuracy and accuracy per negative type of ``scores`` (n,)
    for ``pairs`` (n MatchPair): a dict like the task's metrics."""
    scores = numpy.asarray(scores, dtype=numpy.float64)
    labels = numpy.array([p.label for p in pairs])
    types = numpy.array([p.neg_type or (POSITIVE if p.label else "neg") for p in pairs])
    queries = {}
    query_ids = numpy.array([queries.setdefault(p.text_a, len(queries)) for p in pairs])
    correct = (scores >= threshold) == labels
    result = {"acc": float(correct.mean()), "auc": auc(scores, labels),
              "rank_acc": ranking_accuracy(scores, labels, query_ids), "threshold": float(threshold)}
    result.update({f"acc_{t}": float(correct[types == t].mean()) for t in sorted(set(types.tolist()))})
    return result


def length_artefacts(pairs):
    """AUCs (label 1 = positive) of trivial pair features, overall and per negative type:
    ``{"len_diff": ..., "len_diff_<type>": ..., "new_chars": ...}``.

    ``len_diff`` is ``|len(a) - len(b)|``; ``new_chars`` the share of
    ``text_b``'s characters absent from ``text_a``. Per type, the positives
    are those of the anchors whose negative has that type. Near 0.5 means no signal.
    """
    labels = numpy.array([p.label for p in pairs])
    diff = numpy.array([abs(len(p.text_a) - len(p.text_b)) for p in pairs], dtype=numpy.float64)
    new = numpy.array([sum(c not in set(p.text_a) for c in p.text_b) / max(len(p.text_b), 1) for p in pairs])
    anchor_type = {p.text_a: p.neg_type for p in pairs if p.label == 0}
    types = numpy.array([anchor_type.get(p.text_a, "") for p in pairs])
    result = {"len_diff": auc(-diff, labels), "new_chars": auc(-new, labels)}
    for t in NEG_TYPES:
        chosen = types == t
        if chosen.any():
            result[f"len_diff_{t}"] = auc(-diff[chosen], labels[chosen])
    return result


class ScoredPairs(Metric):
    """Keeps every pair's score, label, negative type, query and the model's threshold for ``compute``.

    ``threshold``: when set (e.g. by :class:`ThresholdSearch`), it replaces the
    model's threshold in :meth:`threshold_used`; :meth:`reset` clears it.
    """

    counters = ("scores", "labels", "types", "queries", "thresholds")

    def __init__(self, score_key="score", label_key="label", type_key="neg_type", query_key="query_id"):
        self.score_key, self.label_key, self.type_key, self.query_key = score_key, label_key, type_key, query_key
        self.reset()

    def reset(self):
        self.scores, self.labels, self.types, self.queries, self.thresholds = [], [], [], [], []
        self.threshold = None

    def update(self, outputs, batch):
        scores = to_numpy(outputs[self.score_key]).reshape(-1).astype(numpy.float64)
        labels = to_numpy(batch[self.label_key]).reshape(-1).astype(numpy.int64)
        if scores.shape != labels.shape:
            raise ValueError(f"{type(self).__name__}: {scores.size} scores for {labels.size} labels")
        types = list(batch.get(self.type_key) or [""] * len(labels))
        queries = batch.get(self.query_key)
        if queries is None:                                  # every pair its own query: negative ids, never shared
            queries = -1 - (sum(len(seen) for seen in self.labels) + numpy.arange(len(labels)))
        self.scores.append(scores)
        self.labels.append(labels)
        self.types.extend(t or ("pos" if y else "neg") for t, y in zip(types, labels.tolist()))
        self.queries.append(to_numpy(queries).astype(numpy.int64).reshape(-1))
        if "threshold" in outputs:
            self.thresholds.append(float(outputs["threshold"]))

    def arrays(self):
        """(scores, labels, types, queries) of every pair seen: float64, int64, str array, int64 (n,)."""
        cat = lambda parts, dtype: numpy.concatenate(parts) if parts else numpy.zeros(0, dtype=dtype)  # noqa: E731
        return (cat(self.scores, numpy.float64), cat(self.labels, numpy.int64), numpy.asarray(self.types, dtype=str),
                cat(self.queries, numpy.int64))

    def threshold_used(self):
        """The threshold set on this metric, else the model's (from the outputs)."""
        if self.threshold is not None:
            return self.threshold
        if not self.thresholds:
            raise ValueError(f"{type(self).__name__}: the outputs hold no 'threshold' and none was set")
        return self.thresholds[0]


@METRICS.register()
class MatchAccuracy(ScoredPairs):
    """Accuracy of ``score >= threshold`` against the labels: ``{name: value}``."""

    def __init__(self, name: str = "acc", **keys):
        self.name = name
        super().__init__(**keys)

    def compute(self):
        scores, labels, _, _ = self.arrays()
        return {self.name: float(((scores >= self.threshold_used()) == labels).mean()) if len(labels) else 0.0}


@METRICS.register()
class MatchAUC(ScoredPairs):
    """Area under the ROC curve of the scores (threshold-free): ``{name: value}``."""

    def __init__(self, name: str = "auc", **keys):
        self.name = name
        super().__init__(**keys)

    def compute(self):
        scores, labels, _, _ = self.arrays()
        return {self.name: auc(scores, labels)}


@METRICS.register()
class NegTypeAccuracy(ScoredPairs):
    """Accuracy at the threshold for each negative type, and for the positives: ``{"acc_<type>": value}``.

    Pairs without a type count as ``pos`` or ``neg`` by their label.
    """

    def __init__(self, prefix: str = "acc_", **keys):
        self.prefix = prefix
        super().__init__(**keys)

    def compute(self):
        scores, labels, types, _ = self.arrays()
        correct = (scores >= self.threshold_used()) == labels if len(labels) else numpy.zeros(0, dtype=bool)
        return {f"{self.prefix}{t}": float(correct[types == t].mean()) for t in sorted(set(types.tolist()))}


@METRICS.register()
class RankingAccuracy(ScoredPairs):
    """Pairwise ranking accuracy over queries (see :func:`ranking_accuracy`): ``{name: value}``."""

    def __init__(self, name: str = "rank_acc", **keys):
        self.name = name
        super().__init__(**keys)

    def compute(self):
        scores, labels, _, queries = self.arrays()
        return {self.name: ranking_accuracy(scores, labels, queries)}


@METRICS.register()
class ThresholdSearch(ScoredPairs):
    """The threshold that maximises accuracy on the pairs seen: ``{"threshold": t, "best_acc": a}``.

    ``targets``: threshold metrics that :meth:`compute` hands ``t`` to before
    they compute (list it before them); ``on_choose``: a function called with
    ``t`` (the matching task stores it in its model).
    """

    def __init__(self, targets=(), on_choose=None, **keys):
        self.targets, self.on_choose = list(targets), on_choose
        super().__init__(**keys)

    def compute(self):
        scores, labels, _, _ = self.arrays()
        if not len(scores):
            return {}
        threshold, accuracy = best_threshold(scores, labels)
        for target in self.targets:
            target.threshold = threshold
        if self.on_choose is not None:
            self.on_choose(threshold)
        return {"threshold": threshold, "best_acc": accuracy}
