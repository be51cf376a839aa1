"""The 2019 PaddleNLP LAC (jieba 0.42.1's parameters) on oar: the engine's words and tags on the shared sample,
on People's Daily test lines, edge strings and a 10,000-character line; characters through LAC's q2b; the
2019 word rule against the engine script's loop; no user dictionary."""
import json
import os
import random

import numpy
import pytest

from nlp.lac.small import NoUserDictionaryError, load_small_task, word_opens

from .engine_golden import engine_rows, fetched_or_skip

SAMPLE = os.path.join(os.path.dirname(__file__), "data", "lac_small_sample.jsonl")


@pytest.fixture(scope="module")
def task():
    return fetched_or_skip("jieba's lac_small parameters", load_small_task)


@pytest.mark.parametrize("batch_size", [1, 64])
def test_shared_sample_matches_the_engine(task, batch_size):
    with open(SAMPLE, encoding="utf-8") as f:
        rows = [json.loads(line) for line in f]
    assert len(rows) == 40
    results = task.predict([row["text"] for row in rows], batch_size=batch_size)
    assert results == [{"words": row["words"], "tags": row["tags"]} for row in rows]


@pytest.mark.parametrize("batch_size", [1, 64])
def test_generated_engine_output_matches(task, batch_size):
    """People's Daily test lines, edge strings, whitespace-only and empty texts, a 10,000-character line."""
    pairs = engine_rows("lac_small")
    assert len(pairs) == 48 and max(len(text) for text, _ in pairs) == 10000
    results = task.predict([text for text, _ in pairs], batch_size=batch_size)
    for (text, expected), result in zip(pairs, results):
        assert result == expected, text[:40]


def test_tables_and_q2b(task):
    pre = task.preprocessor
    assert len(task.tag_names) == 57 and task.tag_names[:2] == ["a-B", "a-I"] and task.tag_names[-1] == "O"
    assert pre.oov_id == 20940 and task.model.embedding.weight.shape == (20941, 128)
    ids, _ = pre.encode("學ＡB😀")
    assert (pre.q2b["學"], pre.q2b["Ａ"], pre.q2b["B"]) == ("学", "A", "b")        # LAC's q2b also lower-cases
    assert ids == [pre.word2id["学"], pre.word2id["A"], pre.word2id["b"], pre.oov_id]
    assert task.predict(["百度是一家高科技公司"]) == [{"words": ["百度", "是", "一家", "高科技", "公司"],
                                                "tags": ["ORG", "v", "m", "n", "n"]}]


def _engine_loop(tags):
    """Where the engine script's loop starts words (lac_small.py's ``run``)."""
    opens, labels = [], []
    for tag in tags:
        starts = not labels or tag.endswith("-B") or (tag == "O" and labels[-1] != "O")
        opens.append(starts)
        if starts:
            labels.append(tag.split("-")[0])
    return opens


def test_word_rule_matches_the_engine_loop_on_random_tags():
    rng = random.Random(0)
    for _ in range(500):
        texts = [[rng.choice(["n-B", "n-I", "v-I", "O"]) for _ in range(rng.randint(0, 7))]
                 for _ in range(rng.randint(1, 4))]
        flat = [tag for tags in texts for tag in tags]
        lengths = numpy.array([len(tags) for tags in texts])
        firsts = numpy.cumsum(lengths) - lengths
        got = word_opens(numpy.array([t.endswith("-B") for t in flat], dtype=bool),
                         numpy.array([t == "O" for t in flat], dtype=bool), firsts[lengths > 0])
        assert got.tolist() == [o for tags in texts for o in _engine_loop(tags)], texts


def test_word_tag_is_the_first_characters(task):
    """The 2019 rule labels a word by its first character (LAC 2.1.2 by its last), and an O run is one word."""
    ids = numpy.array([task.tag_names.index(t) for t in ["n-B", "v-I", "O", "O", "n-I", "O", "v-B", "O"]])
    assert task._results(["abcdefgh"], ids, "official") == [{"words": ["ab", "cdef", "g", "h"],
                                                             "tags": ["n", "O", "v", "O"]}]


def test_user_dictionary_is_refused_in_one_line(task):
    for call in (lambda: task.load_customization(["春天/SEASON"]), lambda: task.add_word("春天/SEASON")):
        with pytest.raises(NoUserDictionaryError, match="applies no user dictionary") as caught:
            call()
        assert "\n" not in str(caught.value)
