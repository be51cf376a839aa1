"""The official LAC model on oar: exact official output on the 50-sentence sample, LAC's preprocessing
quirks (checked against LAC's own segment.py), edge cases, tables and the conversion cache."""
import json
import os
import random
import subprocess
import sys
import textwrap
import time

import numpy
import pytest

from framework.engine.task import to_tensors
from framework.errors import InputError
from nlp.data.text import TextFormatError
from nlp.lac import official
from nlp.lac.official import official_model_dir
from nlp.lac.preprocess import OfficialPreprocessor
from nlp.lac.segment import CoarseSegmenter
from nlp.lac.tables import load_kv_dict
from nlp.lac.task import load_official, load_official_task

from .lac_source import lac_module

SAMPLE = os.path.join(os.path.dirname(__file__), "data", "lac_official_sample.jsonl")
WHITESPACE_SAMPLE = os.path.join(os.path.dirname(__file__), "data", "lac_official_whitespace.jsonl")


@pytest.fixture(scope="module")
def task():
    return load_official_task()


@pytest.fixture(scope="module")
def sample():
    with open(SAMPLE, encoding="utf-8") as f:
        return [json.loads(line) for line in f]


def analyse(task, text):
    result = task.predict_raw([text])[0]
    return list(zip(result["words"], result["tags"]))


def test_sample_input_ids_match_official(task, sample):
    assert len(sample) == 50
    for row in sample:
        ids, word_len = task.preprocessor.encode(row["text"])
        assert ids == row["word_ids"], row["i"]
        assert word_len == row["word_len"], row["i"]


def test_sample_tag_ids_match_official(task, sample):
    batch = task.preprocess([row["text"] for row in sample])
    outputs = task.predict_batch(to_tensors(batch))
    paths, lengths = outputs["tags"].numpy(), outputs["lengths"].numpy()
    assert paths.dtype == numpy.int64
    for row, path, length in zip(sample, paths, lengths):
        assert path[:length].tolist() == row["tag_ids"], row["i"]
        assert not path[length:].any()


@pytest.mark.parametrize("batch_size", [1, 64])
def test_sample_words_and_tags_match_official(task, sample, batch_size):
    results = task.predict((row["text"] for row in sample), batch_size=batch_size)
    for row, result in zip(sample, results):
        assert result["words"] == row["words"], row["i"]
        assert result["tags"] == row["tags"], row["i"]


def test_whitespace_words_and_tags_match_official(task):
    """The official engine's words for texts with spaces, tabs and runs of them, odd ones included
    (``"Apple Watch Series 9"`` with an empty tag, ``"GPU  显卡  "`` as one word)."""
    with open(WHITESPACE_SAMPLE, encoding="utf-8") as f:
        rows = [json.loads(line) for line in f]
    assert len(rows) == 20
    for row, result in zip(rows, task.predict([row["text"] for row in rows])):
        assert (result["words"], result["tags"]) == (row["words"], row["tags"]), row["text"]
        assert "".join(result["words"]) == row["text"]


@pytest.mark.parametrize("text, expected", [
    ("百度是一家高科技公司", [("百度", "ORG"), ("是", "v"), ("一家", "m"), ("高科技", "n"), ("公司", "n")]),
    ("LAC是个优秀的分词工具", [("LAC", "nz"), ("是", "v"), ("个", "q"), ("优秀", "a"), ("的", "u"), ("分词", "n"),
                            ("工具", "n")]),
    ("今天是个好日子", [("今天", "TIME"), ("是", "v"), ("个", "q"), ("好日子", "n")]),
    ("春天的花开秋天的风以及冬天的落阳", [("春天", "TIME"), ("的", "u"), ("花开", "v"), ("秋天", "TIME"), ("的", "u"),
                                ("风", "n"), ("以及", "c"), ("冬天", "TIME"), ("的", "u"), ("落阳", "vn")]),
])
def test_readme_examples(task, text, expected):
    assert analyse(task, text) == expected


def test_out_of_vocabulary_characters_and_emoji(task):
    text = "𠀀𪚥龘靐齉😀"
    ids, _ = task.preprocessor.encode(text)
    oov = task.preprocessor.oov_id
    assert oov == 58223 and ids.count(oov) >= 2
    # characters tagged O join the previous word, which takes the label '' (as in the official output)
    assert analyse(task, text) == [(text, "")]
    words = task.predict_raw(["我爱北京天安门😀！"])[0]["words"]
    assert "".join(words) == "我爱北京天安门😀！" and "😀" in words


def test_ascii_runs_are_one_piece(task):
    segmenter = task.preprocessor.segmenter
    assert segmenter.cut("iPhone12和Python3.8") == ["iPhone12", "和", "Python3", ".", "8"]
    assert segmenter.cut("ＡＢＣ公司和ABC公司")[:3] == ["Ａ", "Ｂ", "Ｃ"]      # full-width letters are not merged
    assert analyse(task, "ＡＢＣ公司和ABC公司") == [("ＡＢＣ公司", "ORG"), ("和", "c"), ("ABC公司", "ORG")]


def test_spaces_are_characters_of_the_model_and_never_words_under_the_split_rule(task):
    ids, _ = task.preprocessor.encode(" 今天 是 个 好日子 ")
    assert ids.count(0) == 5                          # id 0 is the space: the model sees it, as the official does
    result = task.predict([" 今天 是 个 好日子 "], whitespace="split")[0]
    assert result == {"words": ["今天", "是", "个", "好日子"], "tags": ["TIME", "v", "q", "n"]}
    assert analyse(task, "今天是个好日子") == list(zip(result["words"], result["tags"]))
    official = task.predict([" 今天 是 个 好日子 "])[0]
    assert "".join(official["words"]) == " 今天 是 个 好日子 " and " " in official["words"]


def test_whitespace_only_and_empty_texts(task):
    results = task.predict(["", "   ", "今天是个好日子", "", "\t"], whitespace="split")
    assert results[0] == results[1] == results[3] == results[4] == {"words": [], "tags": []}
    assert results[2] == {"words": ["今天", "是", "个", "好日子"], "tags": ["TIME", "v", "q", "n"]}
    assert task.predict([]) == []
    # as the official engine answers them (LAC 2.1.2 on Paddle 2.6.2)
    assert task.predict(["   ", "\t", "a  "]) == [{"words": ["   "], "tags": ["nz"]}, {"words": ["\t"], "tags": ["n"]},
                                                 {"words": ["a", "  "], "tags": ["xc", "n"]}]
    with pytest.raises(InputError, match="whitespace must be one of"):
        task.predict(["今天"], whitespace="strip")


def test_traditional_characters_go_through_q2b(task):
    text = "台灣的學生們喜歡吃蘋果"
    ids, lengths = task.preprocessor.encode(text)
    word2id, q2b = task.preprocessor.word2id, task.preprocessor.q2b
    assert q2b["灣"] == "湾" and lengths == [1] * len(text)
    assert ids == [word2id[q2b.get(c, c)] for c in text]
    result = task.predict_raw([text])[0]
    assert "".join(result["words"]) == text and result["tags"][:2] == ["LOC", "u"]


@pytest.mark.parametrize("kernels", ["numba", "numpy"])
def test_preprocessor_tests_membership_before_q2b(kernels, monkeypatch):
    monkeypatch.setenv("OAR_KERNELS", kernels)
    segmenter = CoarseSegmenter(["ＡＢ", "ＡＡ", "x們"], 10)     # each text below is one piece
    pre = OfficialPreprocessor({"ＡＢ": 5, "A": 1, "B": 2, "AB": 7, "們": 3, "们": 4, "OOV": 9},
                               {"Ａ": "A", "Ｂ": "B", "們": "们"}, segmenter, oov_id=9)
    assert pre.encode("ＡＢ") == ([5], [2])           # the raw piece is a key: one id, q2b of the whole piece
    assert pre.encode("ＡＡ") == ([1, 1], [1, 1])     # not a key: per character, after q2b
    assert pre.encode("們") == ([4], [1])             # a key whose q2b form has its own id
    assert pre.encode("x們") == ([9, 4], [1, 1])


def test_segmentation_matches_lac_segment_py(task, sample, tmp_path):
    reference = lac_module("segment").Segment(os.path.join(official_model_dir(), "conf", "small_seg.dic"))
    ours = task.preprocessor.segmenter
    assert ours.logtotal == reference.logtotal
    texts = [row["text"] for row in sample] + ["LAC是个优秀的分词工具", "C++和c#的T恤", "ab 12 cd", ""]
    rng = random.Random(0)
    alphabet = sorted(set("".join(texts))) + list("abcXYZ019 +#")
    texts += ["".join(rng.choice(alphabet) for _ in range(rng.randint(1, 40))) for _ in range(300)]
    for text in texts:
        assert ours.cut(text) == reference.fast_cut(text), text


@pytest.mark.parametrize("kernels", ["numba", "numpy"])
def test_ids_follow_lac_segment_py_on_both_kernels(task, sample, kernels, monkeypatch):
    """The compiled preprocessing and the NumPy reference both give LAC's pieces and text_to_ids."""
    monkeypatch.setenv("OAR_KERNELS", kernels)
    reference = lac_module("segment").Segment(os.path.join(official_model_dir(), "conf", "small_seg.dic"))
    pre = task.preprocessor
    texts = [row["text"] for row in sample] + ["iPhone12和Python3.8", "ok OK 2024年", "𠀀𪚥龘😀 x", "", "a"]
    rng = random.Random(1)
    alphabet = sorted(set("".join(texts))) + list("abcXYZ019 +#\t")
    texts += ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 60))) for _ in range(300)]
    expected_ids, expected_lengths, expected_sizes = [], [], []
    for text in texts:
        before = len(expected_ids)
        for piece in reference.fast_cut(text):
            if piece in pre.word2id:
                expected_ids.append(pre.word2id.get(pre.q2b.get(piece, piece), pre.oov_id))
                expected_lengths.append(len(piece))
            else:
                expected_ids += [pre.word2id.get(pre.q2b.get(c, c), pre.oov_id) for c in piece]
                expected_lengths += [1] * len(piece)
        expected_sizes.append(len(expected_ids) - before)
    ids, sizes, lengths = pre.encode_batch(texts)
    assert ids.tolist() == expected_ids and lengths.tolist() == expected_lengths
    assert sizes.tolist() == expected_sizes


def test_segmentation_quirks_on_a_small_dictionary(tmp_path):
    path = tmp_path / "seg.dic"
    path.write_text("甲乙 1\n乙丙 1000\nab 5\n", encoding="utf-8")
    reference = lac_module("segment").Segment(str(path))
    ours = CoarseSegmenter.from_file(str(path))
    # equal scores: the tie goes to the longer first piece; counts play no part (only their log total)
    assert ours.cut("甲乙丙") == reference.fast_cut("甲乙丙") == ["甲乙", "丙"]
    # single ASCII letters/digits merge; a dictionary piece does not
    assert ours.cut("xy7ab9") == reference.fast_cut("xy7ab9") == ["xy7", "ab", "9"]
    assert ours.words == ["甲乙", "乙丙", "ab"] and ours.total_count == 1006


def test_segmenter_and_tables_errors(tmp_path):
    bad = tmp_path / "small_seg.dic"
    bad.write_text("甲乙 1\n乙丙\n", encoding="utf-8")
    with pytest.raises(TextFormatError, match=r"small_seg.dic:2: expected 'word count'"):
        CoarseSegmenter.from_file(str(bad))
    broken = tmp_path / "word.dic"
    broken.write_bytes("0\t甲\n1\t乙\n".encode("utf-8") + b"2\t\xff\n")
    with pytest.raises(TextFormatError, match=r"word.dic:3: invalid UTF-8"):
        load_kv_dict(str(broken))


def test_kv_tables_follow_lac_rules(tmp_path):
    path = tmp_path / "tag.dic"
    path.write_text("0\ta-B\n1\ta-I\nnot a pair\n16\tnr-B\n16\tPER-B\n2\tx\ty\n", encoding="utf-8")
    assert load_kv_dict(str(path)) == {"0": "a-B", "1": "a-I", "16": "PER-B"}
    assert load_kv_dict(str(path), reverse=True) == {"a-B": "0", "a-I": "1", "nr-B": "16", "PER-B": "16"}
    with pytest.raises(TextFormatError, match=r"tag.dic:1: value 'a-B'.*not a valid int"):
        load_kv_dict(str(path), value_type=int)


def test_official_tag_names(task):
    names = task.tag_names
    assert len(names) == 49 and names[48] == "O"
    assert names[16:22] == ["PER-B", "PER-I", "LOC-B", "LOC-I", "ORG-B", "ORG-I"]
    assert names[34:36] == ["TIME-B", "TIME-I"]
    assert "nr-B" not in names and "t-B" not in names


def test_conversion_cache(tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    model, pre, tags = load_official(cache_dir=str(cache))
    assert sorted(os.listdir(cache)) == ["tables.json", "weights.npz"]
    reference = model.state_dict()

    def no_conversion(model_dir):
        raise AssertionError("the cache should have been used")

    monkeypatch.setattr(official, "convert_official", no_conversion)
    cached_model, cached_pre, cached_tags = load_official(cache_dir=str(cache))
    assert cached_tags == tags and cached_pre.word2id == pre.word2id and cached_pre.q2b == pre.q2b
    assert cached_pre.segmenter.cut("百度是一家高科技公司") == pre.segmenter.cut("百度是一家高科技公司")
    for name, value in cached_model.state_dict().items():
        numpy.testing.assert_array_equal(value.numpy(), reference[name].numpy())
    # a cache stamped with other sources is converted again
    monkeypatch.setattr(official, "source_digest", lambda model_dir: "0" * 64)
    with pytest.raises(AssertionError, match="cache should have been used"):
        load_official(cache_dir=str(cache))


def test_concurrent_first_loads_convert_once(tmp_path):
    model_dir, cache, go = official_model_dir(), tmp_path / "cache", tmp_path / "go"
    script = textwrap.dedent(f"""
        import hashlib, json, os, time
        from nlp.lac import official, task
        convert = official.convert_official
        converted = []
        official.convert_official = lambda model_dir: converted.append(1) or convert(model_dir)
        while not os.path.exists({str(go)!r}):
            time.sleep(0.005)
        model, pre, tags = task.load_official({model_dir!r}, cache_dir={str(cache)!r})
        crf = model.state_dict()["crf.transition"].numpy()
        print(json.dumps({{"converted": len(converted), "tags": len(tags), "vocabulary": len(pre.word2id),
                           "crf": hashlib.sha256(crf.tobytes()).hexdigest()}}))
    """)
    root = os.path.join(os.path.dirname(__file__), "..", "..", "..")
    workers = [subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True, cwd=root) for _ in range(3)]
    time.sleep(2.0)                                  # let every worker import and wait at the start line
    go.write_text("")
    results = [worker.communicate(timeout=300) for worker in workers]
    assert [w.returncode for w in workers] == [0, 0, 0], [err[-2000:] for _, err in results]
    reports = [json.loads(out) for out, _ in results]
    assert sorted(r["converted"] for r in reports) == [0, 0, 1]          # one converted, the others waited
    assert len({(r["tags"], r["vocabulary"], r["crf"]) for r in reports}) == 1
    assert reports[0]["tags"] == 49 and reports[0]["vocabulary"] == 58224
    assert sorted(os.listdir(cache)) == ["tables.json", "weights.npz"]   # no temporaries left


def test_text_over_ten_thousand_characters(task, sample):
    text = "".join(row["text"] for row in sample) * 3
    assert len(text) > 10000
    result = task.predict_raw([text])[0]
    assert "".join(result["words"]) == text and len(result["tags"]) == len(result["words"])
    # the chunks are cut after sentence ends, so nearly every word is the one found sentence by sentence
    expected = sum(len(row["words"]) for row in sample) * 3
    assert abs(len(result["words"]) - expected) < 0.01 * expected
