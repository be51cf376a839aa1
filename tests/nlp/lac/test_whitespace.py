"""Under the ``"split"`` whitespace rule LAC output keeps whitespace out of words, for the official model (``lac``,
whose default is the official grouping) and ours (``lac_pku``, split by default), while the model still reads the
spaces (so the other characters' tags are those of the official package)."""
import pytest

from framework.engine.task import to_tensors
from framework.fetch import FetchError

TEXTS = ["今天 是个 好日子", "我爱 北京天安门", "New York 是 一个 城市", "中国\u3000人民 银行", "  \t", ""]


def _pairs(result):
    return list(zip(result["words"], result["tags"]))


def _official_grouping(task, text):
    """Words as Baidu's ``Model.parse_result`` groups the same character tags (no whitespace rule)."""
    names = task._raw_tools()[1].names
    tags = [names[i] for i in task._char_tag_ids(task.predict_batch(to_tensors(task.preprocess([text])))).tolist()]
    starts = [i for i, tag in enumerate(tags) if i == 0 or tag.endswith(("B", "S"))]
    return [text[a:b] for a, b in zip(starts, starts[1:] + [len(text)])]


def _check_splittable(results, texts):
    for text, result in zip(texts, results):
        assert all(word and not any(c.isspace() for c in word) for word in result["words"])
        assert "".join(result["words"]) == "".join(text.split())
        line = " ".join(f"{w}/{t}" for w, t in zip(result["words"], result["tags"]))
        assert [tuple(item.rsplit("/", 1)) for item in line.split()] == _pairs(result)


def test_official_lac_drops_whitespace_from_its_words_under_the_split_rule():
    from nlp.lac import load_official_task
    try:
        task = load_official_task()
    except FetchError as err:
        pytest.skip(f"the official LAC model is not cached and cannot be fetched here: {err}")
    results = task.predict(TEXTS, whitespace="split")
    assert _pairs(results[0]) == [("今天", "TIME"), ("是", "v"), ("个", "q"), ("好日子", "n")]
    assert _pairs(results[1]) == [("我", "r"), ("爱", "v"), ("北京", "LOC"), ("天安门", "LOC")]
    assert _pairs(results[2]) == [("New", "nz"), ("York", "nz"), ("是", "v"), ("一个", "m"), ("城市", "n")]
    assert results[4] == results[5] == {"words": [], "tags": []}
    _check_splittable(results, TEXTS)
    # the official package tags the same characters, but makes " " a word and keeps "New York" as one: the
    # task's default
    assert _official_grouping(task, TEXTS[2]) == ["New York", " ", "是", " ", "一个", " ", "城市"]
    assert _official_grouping(task, TEXTS[1]) == ["我", "爱", " ", "北京", "天安门"]
    assert [r["words"] for r in task.predict(TEXTS[1:3])] == [_official_grouping(task, t) for t in TEXTS[1:3]]


def test_lac_pku_drops_whitespace_from_its_words():
    import zoo
    task = zoo.load("lac_pku")
    results = task.predict(TEXTS)
    assert _pairs(results[0]) == [("今天", "t"), ("是", "v"), ("个", "q"), ("好日子", "l")]
    assert _pairs(results[1]) == [("我", "r"), ("爱", "v"), ("北京", "ns"), ("天安门", "ns")]
    assert _pairs(results[2]) == [("New", "nx"), ("Yor", "nx"), ("k", "t"), ("是", "v"), ("一个", "m"), ("城市", "n")]
    assert _pairs(results[3]) == [("中国", "ns"), ("人民", "n"), ("银行", "n")]
    assert results[4] == results[5] == {"words": [], "tags": []}
    _check_splittable(results, TEXTS)
