"""User dictionaries: the same results as the official package's LAC/custom.py, LAC's README example,
its quirks, and clear errors for malformed lines."""
import random

import pytest

from nlp.data.text import TextFormatError
from nlp.lac.customization import Customization, CustomizationError, load_customization
from nlp.lac.task import load_official_task

from .lac_source import lac_module


@pytest.fixture(scope="module")
def task():
    return load_official_task()


def reference_apply(lines, text, tags, tmp_path, sep=None):
    """LAC's own Customization on a dictionary file of ``lines``."""
    path = tmp_path / "reference.dic"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    custom = lac_module("custom").Customization()
    custom.load_customization(str(path), sep)
    tags = list(tags)
    custom.parse_customization(text, tags)
    return tags


def test_matches_lac_custom_py_on_random_dictionaries(tmp_path):
    rng = random.Random(0)
    alphabet = "甲乙丙丁戊"
    model_tags = ["n-B", "n-I", "v-B", "v-I", "O", "PER-B", "PER-I"]
    for trial in range(150):
        lines = []
        for _ in range(rng.randint(1, 6)):
            items = []
            for _ in range(rng.randint(1, 3)):
                word = "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 3)))
                items.append(word + (f"/{rng.choice(['n', 'v', 'SEASON'])}" if rng.random() < 0.4 else ""))
            lines.append(" ".join(items))
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 15)))
        tags = [rng.choice(model_tags) for _ in text]
        ours = load_customization(lines).apply(text, list(tags))
        assert ours == reference_apply(lines, text, tags, tmp_path), (lines, text, tags)


def test_overlapping_matches_are_applied_in_lac_order(tmp_path):
    lines = ["甲乙", "乙丙丁/v", "丁戊"]
    custom = load_customization(lines)
    assert custom.matches("甲乙丙丁戊") == [(0, 2), (1, 4), (3, 5)]
    tags = ["n-B"] * 5
    assert custom.apply("甲乙丙丁戊", list(tags)) == reference_apply(lines, "甲乙丙丁戊", tags, tmp_path)


def test_readme_example(task, tmp_path):
    path = tmp_path / "custom.txt"
    path.write_text("春天/SEASON\n花/n 开/v\n秋天的风\n落 阳\n", encoding="utf-8")
    task.load_customization(str(path))
    try:
        result = task.predict_raw(["春天的花开秋天的风以及冬天的落阳"])[0]
    finally:
        task.customization = None
    assert list(zip(result["words"], result["tags"])) == [
        ("春天", "SEASON"), ("的", "u"), ("花", "n"), ("开", "v"), ("秋天的风", "n"), ("以及", "c"),
        ("冬天", "TIME"), ("的", "u"), ("落", "vn"), ("阳", "vn")]


def test_add_word_on_the_task(task):
    before = task.predict_raw(["百度是一家高科技公司"])[0]
    task.add_word("高科技公司/ORG")
    try:
        after = task.predict_raw(["百度是一家高科技公司"])[0]
    finally:
        task.customization = None
    assert before["words"][-2:] == ["高科技", "公司"]
    assert after == {"words": ["百度", "是", "一家", "高科技公司"], "tags": ["ORG", "v", "m", "ORG"]}


def test_lac_quirks():
    custom = load_customization(["甲", "", "   ", "乙/n", "/x丙", "丙丁/a", "丙丁/b", "戊,己/v"], sep=None)
    assert "甲" not in custom                      # one character without a tag: ignored
    assert "乙" in custom                          # one character with a tag: kept
    assert "/x丙" in custom                        # a leading '/' is text, not a tag
    assert custom.apply("丙丁", ["n-B", "n-I"]) == ["b-B", "b-I"]        # the later line wins
    assert "戊,己" in custom                       # ',' is not a separator by default
    with_sep = load_customization(["戊,己/v"], sep=",")
    assert with_sep.apply("戊己", ["n-B", "n-B"]) == ["n-B", "v-B"]
    assert len(custom) == 4


def test_untagged_items_keep_the_model_tags():
    custom = load_customization(["花 开"])
    assert custom.apply("花开了", ["v-B", "v-I", "u-B"]) == ["v-B", "v-B", "u-B"]
    custom = load_customization(["花开"])
    assert custom.apply("花开了", ["n-B", "v-B", "O"]) == ["n-B", "v-I", "B"]


def test_malformed_lines_name_the_file_and_line(tmp_path):
    path = tmp_path / "user.dic"
    path.write_text("春天/SEASON\n花开/\n", encoding="utf-8")
    with pytest.raises(CustomizationError, match=r"user.dic:2: item '花开/' has an empty tag"):
        load_customization(str(path))
    with pytest.raises(CustomizationError, match=r"<list>\[1\]"):
        load_customization(["春天", "秋天/"])
    broken = tmp_path / "broken.dic"
    broken.write_bytes("春天\n".encode("utf-8") + b"\xe6\x98\n")
    with pytest.raises(TextFormatError, match=r"broken.dic:2: invalid UTF-8"):
        load_customization(str(broken))
    with pytest.raises(TypeError, match="entry 1 is a int"):
        load_customization(["春天", 3])
    with pytest.raises(TypeError, match="path or a list of lines"):
        load_customization(42)
    with pytest.raises(ValueError, match="2 tags for a text of 3"):
        Customization().apply("春天好", ["n-B", "n-I"])
