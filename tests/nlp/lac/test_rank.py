"""LAC's word-importance model (``lac_rank``): the peephole-LSTM rank network on top of the official LAC gives
exactly what Baidu's ``LAC(mode="rank").run`` gives, on the shared sample and on the golden file generated with
the reference engine (People's Daily test lines and edge strings: empty, whitespace-only, emoji, mixed scripts,
a 10,000-character line), at batch 1, in batches and streamed; the grouping of character ranks into word ranks.
Tests that need the official model skip when it can be neither fetched nor found in the cache."""
import json
import os

import numpy
import pytest

from framework.fetch import FetchError
from nlp.lac.rank_task import load_rank_task, word_ranks

DATA = os.path.join(os.path.dirname(__file__), "data")


def _rows(name):
    with open(os.path.join(DATA, name), encoding="utf-8") as f:
        return [json.loads(line) for line in f]


def _triples(results):
    return [(r["words"], r["tags"], r["rank"]) for r in results]


@pytest.fixture(scope="module")
def task():
    try:
        return load_rank_task()
    except FetchError as err:
        pytest.skip(f"the official LAC models cannot be fetched here and are not cached ({str(err).split('. ')[0]})")


def test_word_rank_is_the_largest_character_rank():
    texts = ["ab c", "", "de"]
    results = [{"words": ["ab", " c"], "tags": ["n", "w"]}, {"words": [], "tags": []}, {"words": ["d", "e"],
                                                                                         "tags": ["v", "n"]}]
    ranks = numpy.array([0, 2, 3, 1, 1, 0])                # a b ' ' c d e
    assert [r["rank"] for r in word_ranks(texts, results, ranks, "official")] == [[2, 3], [], [1, 0]]
    split = [{"words": ["ab", "c"], "tags": ["n", "w"]}, {"words": [], "tags": []}, {"words": ["de"], "tags": ["v"]}]
    assert [r["rank"] for r in word_ranks(texts, split, ranks, "split")] == [[2, 1], [], [1]]


def test_matches_the_official_sample(task):
    rows = _rows("lac_official_rank_sample.jsonl")
    assert _triples(task.predict([r["text"] for r in rows])) == [(r["words"], r["tags"], r["rank"]) for r in rows]


def test_matches_the_engine_on_generated_lines_at_every_batching(task):
    rows = _rows("lac_official_rank_golden.jsonl")
    texts, expected = [r["text"] for r in rows], [(r["words"], r["tags"], r["rank"]) for r in rows]
    assert any(len(t) == 10000 for t in texts) and "" in texts and " " in texts
    assert _triples(task.predict(texts)) == expected
    assert _triples(task.predict(texts, batch_size=3)) == expected
    assert _triples(task.predict_iter(iter(texts))) == expected
    short = [i for i, t in enumerate(texts) if len(t) < 200][:40]
    assert [_triples(task.predict([texts[i]], batch_size=1))[0] for i in short] == [expected[i] for i in short]


def test_user_dictionary_regroups_the_ranks(task):
    """A user-dictionary word is one word; its rank is the largest of its characters' (as LAC groups them)."""
    text = "百度是一家高科技公司"
    plain = task.predict([text])[0]
    task.add_word("一家高科技")
    try:
        custom = task.predict([text])[0]
    finally:
        task.customization = None
    assert custom["words"] == ["百度", "是", "一家高科技", "公司"]
    assert custom["rank"] == [plain["rank"][0], plain["rank"][1], max(plain["rank"][2:4]), plain["rank"][4]]
