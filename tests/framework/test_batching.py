"""The one batching path of predict: windows read lazily, sorted by length, run batch_size at a time, results in
input order, and errors placed on the input that caused them."""
import numpy
import pytest

from framework.config import load_config
from framework.engine import runner
from framework.engine.batching import WINDOW_BATCHES, length_batches, predict_stream, text_length
from framework.errors import InputError

import zoo.toy  # noqa: F401
from tests.framework.test_trainer import TINY


def test_length_batches_sort_and_cut_by_count_and_by_padded_positions():
    assert length_batches([5, 3, 5, 1], 2) == [[3, 1], [0, 2]]
    assert length_batches([5, 3, 5, 1], 2, max_tokens=6) == [[3, 1], [0], [2]]
    assert length_batches([9, 1], 4, max_tokens=4) == [[1], [0]]         # too long for the budget: alone
    assert length_batches([], 3) == []
    assert length_batches([2, 2, 2], 2) == [[0, 1], [2]]                  # ties keep input order


def test_text_length_of_texts_pairs_and_anything_else():
    assert text_length("今天") == 2 and text_length(("ab", "cde")) == 5 and text_length(["a", 3]) == 1
    assert text_length(7) == 0 and text_length(None) == 0


class _Recorder:
    """A ``predict`` that answers each text with its own reversal and records the batches it was given."""

    def __init__(self):
        self.batches = []

    def __call__(self, batch):
        self.batches.append(list(batch))
        return [text[::-1] for text in batch]


def test_results_come_back_in_input_order_from_length_sorted_batches():
    rng = numpy.random.default_rng(0)
    texts = ["x" * int(n) + str(i) for i, n in enumerate(rng.integers(0, 30, size=300))]
    predict = _Recorder()
    assert list(predict_stream(predict, texts, 8, length=len)) == [t[::-1] for t in texts]
    assert all(len(batch) <= 8 for batch in predict.batches)
    window = WINDOW_BATCHES * 8
    first = predict.batches[:window // 8]
    assert sorted(t for b in first for t in b) == sorted(texts[:window])        # one window at a time
    assert all(len(a[-1]) <= len(b[0]) for a, b in zip(first, first[1:]))      # sorted inside the window
    unsorted = _Recorder()
    assert list(predict_stream(unsorted, texts, 8)) == [t[::-1] for t in texts]
    assert unsorted.batches[0] == texts[:8]                                    # no length: input order


def test_a_generator_is_read_one_window_at_a_time():
    read = []

    def inputs():
        for i in range(10_000):
            read.append(i)
            yield f"text {i}"

    stream = predict_stream(_Recorder(), inputs(), 4, length=len, window_batches=2)
    first = next(stream)
    assert first == "0 txet" and len(read) == 8           # two batches of four read, not the ten thousand
    assert sum(1 for _ in stream) == 9_999 and len(read) == 10_000


def test_an_input_error_names_the_input_position_in_the_whole_stream():
    def predict(batch):
        for i, text in enumerate(batch):
            if text == "bad":
                raise InputError("not a good text", index=i)
        return batch

    texts = ["a" * (i % 7 + 1) for i in range(100)]
    texts[77] = "bad"
    with pytest.raises(InputError, match="^input 77: not a good text$") as caught:
        list(predict_stream(predict, texts, 5, length=len, window_batches=3))
    assert caught.value.index == 77


def test_batch_size_must_be_a_positive_integer():
    for bad in (0, -1, 2.5, True, "4"):
        with pytest.raises(InputError, match="batch_size must be an integer >= 1"):
            list(predict_stream(_Recorder(), ["a"], bad))


def test_a_predict_that_loses_results_is_a_bug_not_a_silent_shift():
    with pytest.raises(RuntimeError, match="2 results for 3 inputs"):
        list(predict_stream(lambda batch: batch[:2], ["a", "b", "c"], 3))


@pytest.fixture(scope="module")
def task():
    return runner.build_task(load_config(TINY))


def test_task_predict_takes_any_iterable_and_batch_size(task):
    rows = [[0.1 * i, 1.0 - 0.05 * i] for i in range(20)]
    expected = task.predict(rows)
    assert task.predict(tuple(rows)) == expected
    assert task.predict(iter(rows)) == expected
    assert task.predict(numpy.array(rows)) == expected
    regrouped = task.predict(rows, batch_size=3)          # another grouping: the same up to float32 rounding
    assert [r["label"] for r in regrouped] == [r["label"] for r in expected]
    assert [r["score"] for r in regrouped] == pytest.approx([r["score"] for r in expected], rel=1e-5)
    assert list(task.predict_iter(r for r in rows)) == expected
    assert task.predict([]) == [] and task.predict(iter([])) == []
