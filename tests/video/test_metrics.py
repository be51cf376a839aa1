"""video.metrics: hand-computed cases, the YouTube-8M definitions written as plain loops, the registered metrics."""
import numpy
import pytest

from framework.registry import METRICS
from video.metrics import confusion_matrix, gap, hit_at_one, mean_ap, mean_class_accuracy, perr, topk_accuracy

SCORES = numpy.array([[0.9, 0.8, 0.1], [0.7, 0.2, 0.6]])
LABELS = numpy.array([[1, 0, 1], [0, 0, 1]])


def test_youtube8m_metrics_by_hand():
    # pooled top-2 predictions by score: 0.9 hit, 0.8 miss, 0.7 miss, 0.6 hit; 3 positives in all
    assert gap(SCORES, LABELS, top_k=2) == pytest.approx((1 / 1 + 2 / 4) / 3)
    # with the top 3 the 0.1 hit joins last (6th): (1 + 2/4 + 3/6) / 3
    assert gap(SCORES, LABELS, top_k=3) == pytest.approx((1 + 2 / 4 + 3 / 6) / 3)
    assert hit_at_one(SCORES, LABELS) == pytest.approx(0.5)
    # video 0 has 2 positives, its top 2 hold one: 1/2; video 1 has 1, its top 1 misses: 0
    assert perr(SCORES, LABELS) == pytest.approx(0.25)
    # class 0: AP 1; class 1: no positives, 0; class 2: both positive, AP 1
    assert mean_ap(SCORES, LABELS) == pytest.approx(2 / 3)


def test_single_label_ids_work_as_one_hot_rows():
    ids = numpy.array([0, 2])
    one_hot = numpy.eye(3)[ids]
    for metric in (gap, hit_at_one, perr, mean_ap):
        assert metric(SCORES, ids) == pytest.approx(metric(SCORES, one_hot))
    assert hit_at_one(SCORES, ids) == pytest.approx(0.5)


def test_perr_counts_only_positive_scores_and_videos_without_labels_as_zero():
    scores = numpy.array([[0.0, -1.0], [0.5, 0.2]])
    labels = numpy.array([[1, 0], [0, 0]])
    assert perr(scores, labels) == pytest.approx(0.0)  # the hit scores 0: not counted; video 2 has no labels
    assert perr(numpy.array([[0.3, 0.1]]), numpy.array([[1, 0]])) == pytest.approx(1.0)


def _reference(scores, labels, top_k):
    """The YouTube-8M eval_util definitions as plain Python loops (ties in index order)."""
    def ap(pairs, positives):
        pairs = sorted(pairs, key=lambda p: -p[0])
        hits, total = 0, 0.0
        for rank, (_, hit) in enumerate(pairs, start=1):
            if hit:
                hits += 1
                total += hits / rank
        return total / positives if positives else 0.0

    n, c = scores.shape
    pooled = []
    for i in range(n):
        order = sorted(range(c), key=lambda j: -scores[i, j])[:top_k]
        pooled += [(scores[i, j], labels[i, j] > 0) for j in order]
    result = {"gap": ap(pooled, int((labels > 0).sum()))}
    result["hit"] = sum(labels[i, max(range(c), key=lambda j: scores[i, j])] > 0 for i in range(n)) / n
    precisions = []
    for i in range(n):
        k = int((labels[i] > 0).sum())
        order = sorted(range(c), key=lambda j: -scores[i, j])[:k]
        precisions.append(sum(labels[i, j] > 0 and scores[i, j] > 0 for j in order) / k if k else 0.0)
    result["perr"] = sum(precisions) / n
    result["map"] = sum(ap([(scores[i, j], labels[i, j] > 0) for i in range(n)], int((labels[:, j] > 0).sum()))
                        for j in range(c)) / c
    return result


def test_against_the_loop_definitions_on_random_data():
    rng = numpy.random.default_rng(0)
    scores = rng.random((40, 12))
    labels = (rng.random((40, 12)) < 0.2).astype(numpy.int64)
    labels[3] = 0
    expected = _reference(scores, labels, top_k=5)
    assert gap(scores, labels, top_k=5) == pytest.approx(expected["gap"])
    assert hit_at_one(scores, labels) == pytest.approx(expected["hit"])
    assert perr(scores, labels) == pytest.approx(expected["perr"])
    assert mean_ap(scores, labels) == pytest.approx(expected["map"])


def test_topk_and_mean_class_accuracy_by_hand():
    scores = numpy.array([[0.1, 0.5, 0.4], [0.3, 0.3, 0.4], [0.2, 0.1, 0.7]])
    labels = numpy.array([2, 1, 0])
    # ranks: 1 (0.5 above), 2 (0.4 above, and the tie 0.3 of the lower class 0), 1 (0.7 above)
    assert topk_accuracy(scores, labels, k=(1, 2, 3)) == pytest.approx([0.0, 2 / 3, 1.0])
    assert mean_class_accuracy(scores, labels) == pytest.approx(0.0)
    scores = numpy.eye(2)[[0, 1, 1, 0, 0]]  # predictions 0, 1, 1, 0, 0
    labels = numpy.array([0, 0, 1, 1, 1])
    assert mean_class_accuracy(scores, labels) == pytest.approx((1 / 2 + 1 / 3) / 2)
    assert topk_accuracy(scores, labels, k=(1,)) == pytest.approx([2 / 5])



def test_confusion_matrix_counts_true_rows_and_predicted_columns():
    probs = numpy.array([[0.9, 0.1, 0.0], [0.2, 0.8, 0.0], [0.7, 0.3, 0.0], [0.1, 0.2, 0.7]])
    matrix = confusion_matrix(probs, numpy.array([0, 1, 1, 1]), 3)
    numpy.testing.assert_array_equal(matrix, [[1, 0, 0], [1, 1, 1], [0, 0, 0]])
    assert matrix.dtype == numpy.int64 and matrix.sum() == 4

def test_bad_shapes_and_labels_are_named():
    with pytest.raises(ValueError, match=r"scores must be \(N, C\)"):
        gap(numpy.zeros(3), numpy.zeros(3))
    with pytest.raises(ValueError, match="multi-hot labels"):
        mean_ap(SCORES, numpy.zeros((2, 4)))
    with pytest.raises(ValueError, match=r"\[0, 3\)"):
        topk_accuracy(SCORES, numpy.array([0, 3]))


def test_registered_metrics_accumulate_batches():
    metric = METRICS.build({"type": "YouTube8MMetrics", "top_k": 2})
    metric.update({"prob": SCORES[:1]}, {"label": LABELS[:1]})
    metric.update({"prob": SCORES[1:]}, {"label": LABELS[1:]})
    assert metric.compute() == pytest.approx({"gap": 0.5, "hit_at_one": 0.5, "perr": 0.25, "map": 2 / 3})
    state = metric.state()
    other = METRICS.build({"type": "YouTube8MMetrics", "top_k": 2})
    other.set_state(state)
    assert other.compute()["gap"] == pytest.approx(0.5)
    mean = METRICS.build({"type": "MeanClassAccuracy", "score_key": "scores"})
    mean.update({"scores": numpy.eye(2)[[0, 1, 1, 0, 0]]}, {"label": numpy.array([0, 0, 1, 1, 1])})
    assert mean.compute() == {"mean_class_acc": pytest.approx(5 / 12)}
    mean.reset()
    with pytest.raises(ValueError, match="no batches"):
        mean.compute()
    with pytest.raises(ValueError, match="scores"):
        mean.update({"scores": numpy.zeros(5)}, {"label": numpy.zeros(5, dtype=int)})
