"""The official seg model (``LAC(mode="seg")``) on oar: the engine's words on the shared sample, on People's
Daily test lines, edge strings and a 10,000-character line; one id per character through q2b; the user
dictionary applied as LAC's custom.py applies it; the whitespace rules."""
import json
import os

import numpy
import pytest

from nlp.lac.seg import load_official_seg_task

from .engine_golden import engine_rows, fetched_or_skip
from .lac_source import lac_module

SAMPLE = os.path.join(os.path.dirname(__file__), "data", "lac_official_seg_sample.jsonl")


@pytest.fixture(scope="module")
def task():
    return fetched_or_skip("the official LAC seg model", load_official_seg_task)


@pytest.mark.parametrize("batch_size", [1, 64])
def test_shared_sample_words_match_the_engine(task, batch_size):
    with open(SAMPLE, encoding="utf-8") as f:
        rows = [json.loads(line) for line in f]
    assert len(rows) == 40
    results = task.predict([row["text"] for row in rows], batch_size=batch_size)
    assert [result["words"] for result in results] == [row["words"] for row in rows]
    assert all(list(result) == ["words"] for result in results)


@pytest.mark.parametrize("batch_size", [1, 64])
def test_generated_engine_output_matches(task, batch_size):
    """People's Daily test lines, edge strings, whitespace-only and empty texts, a 10,000-character line."""
    pairs = engine_rows("lac_seg")
    assert len(pairs) == 49 and max(len(text) for text, _ in pairs) == 10000
    results = task.predict([text for text, _ in pairs], batch_size=batch_size)
    for (text, expected), result in zip(pairs, results):
        assert result == expected, text[:40]


def test_readme_example_and_empty_text(task):
    assert task.predict(["百度是一家高科技公司", ""]) == [{"words": ["百度", "是", "一家", "高科技", "公司"]},
                                                  {"words": []}]


def test_one_id_per_character_through_q2b(task):
    pre = task.preprocessor
    text = "台灣ＡＢ😀 "
    ids, lengths = pre.encode(text)
    assert lengths == [1] * len(text)
    assert pre.q2b["灣"] == "湾" and ids[1] == pre.word2id["湾"] and ids[2] == pre.word2id["A"]
    assert ids[4] == pre.oov_id == 8223 and ids[5] == pre.word2id[" "] == 0
    batch_ids, sizes, _ = pre.encode_batch(["台灣", "", "ＡＢ😀 "])
    assert batch_ids.tolist() == ids and sizes.tolist() == [2, 0, 4]
    assert task.tag_names == ["-B", "-I", "-E", "-S"]


def _lac_grouping(text, tags):
    """LAC's SegModel.parse_result grouping of per-character tags."""
    words = []
    for char, tag in zip(text, tags):
        if not words or tag.endswith(("B", "S")):
            words.append(char)
        else:
            words[-1] += char
    return words


@pytest.mark.parametrize("lines", [["一家高科技公司"], ["百度是/ORG"], ["度是/v 一"], ["高/a 科技公司"], ["家高", "科技/n 公"]])
def test_user_dictionary_matches_lac_custom_py(tmp_path, lines):
    task = load_official_seg_task()
    text = "百度是一家高科技公司"
    plain = task.predict([text])[0]["words"]
    tags = [tag for word in plain for tag in ["-B"] + ["-I"] * (len(word) - 1)]
    path = tmp_path / "user.dic"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    reference = lac_module("custom").Customization()
    reference.load_customization(str(path))
    reference.parse_customization(text, tags)
    task.load_customization(str(path))
    assert task.predict([text])[0]["words"] == _lac_grouping(text, tags)
    assert task.predict([text])[0]["words"] != plain


def test_split_rule_drops_whitespace_and_official_rule_keeps_it(task):
    text = " 今天 是\t好日子  "
    official = task.predict([text])[0]["words"]
    split = task.predict([text], whitespace="split")[0]["words"]
    assert "".join(official) == text
    assert "".join(split) == "今天是好日子" and not any(numpy.char.isspace(list("".join(split))))
    assert task.predict(["   "], whitespace="split") == [{"words": []}]


def test_user_dictionary_gives_the_engines_words(tmp_path):
    """``LAC(mode="seg")`` after ``load_customization`` of these three lines (LAC 2.1.2 on Paddle 2.6.2)."""
    path = tmp_path / "user.dic"
    path.write_text("高科技公司/COMPANY\n春天/SEASON\n花/n 开/v\n", encoding="utf-8")
    task = load_official_seg_task()
    task.load_customization(str(path))
    assert task.predict(["百度是一家高科技公司", "春天的花开秋天的风"]) == [
        {"words": ["百度", "是", "一家", "高科技公司"]}, {"words": ["春天", "的", "花", "开", "秋天", "的", "风"]}]
