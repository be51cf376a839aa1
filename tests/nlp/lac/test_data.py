"""nlp.lac.data: the People's Daily tagging dataset, its vocabulary and labels, on the real corpus (fetched once
into the cache) and on small files."""
import os

import numpy
import pytest

from framework.registry import DATASETS
from nlp.data import peoples_daily as pd
from nlp.data.text import TextFormatError
from nlp.data.vocab import Vocab
from nlp.lac import data as lac_data

LINE_1 = "中共中央/nt  总书记/n  、/w  国家/n  主席/n  江/nr  泽民/nr"


@pytest.fixture(scope="module")
def corpus():
    return pd.read_corpus()


def test_char_labels_normalise_full_width(corpus):
    text, labels = lac_data.char_labels(*pd.parse_line(LINE_1)[:2])
    assert text == "中共中央总书记、国家主席江泽民"
    assert labels == ["nt-B", "nt-I", "nt-I", "nt-I", "n-B", "n-I", "n-I", "w-B", "n-B", "n-I", "n-B", "n-I",
                      "nr-B", "nr-B", "nr-I"]
    line_3 = corpus.sentences[3]
    assert line_3.words[:3] == ["１２月", "３１日", "，"]                   # read_sentences keeps the raw words
    text, labels = lac_data.char_labels(line_3.words[:3], line_3.tags[:3])
    assert text == "12月31日,"
    assert labels == ["t-B", "t-I", "t-I", "t-B", "t-I", "t-I", "w-B"]


def test_char_vocab_from_train_split():
    vocab = lac_data.char_vocab()
    assert vocab is lac_data.char_vocab() and len(vocab) == 4571
    assert len(lac_data.char_vocab(min_freq=2)) == 4034
    assert vocab.tokens[2:6] == [",", "的", "。", "、"]                     # most frequent first
    assert "1" in vocab and "１" not in vocab                            # normalised characters only


def test_dataset_samples_cover_the_split():
    dev = lac_data.PeoplesDailyTagging("dev")
    sample = dev[0]
    assert sample["tokens"].dtype == numpy.int64 and sample["labels"].dtype == numpy.int64
    assert "".join(dev.vocab.decode(sample["tokens"])) == "中共中央总书记、国家主席江泽民"
    assert dev.tagset.decode(sample["labels"]) == lac_data.char_labels(*pd.parse_line(LINE_1)[:2])[1]
    lengths = numpy.asarray([len(dev[i]["tokens"]) for i in range(len(dev))])
    assert lengths.sum() == 175844 and lengths.max() == 200 and len(dev) == 2200
    assert numpy.unique(dev.lines).tolist() == [s.line for s in pd.read_sentences("dev")]
    first_labels = numpy.asarray([dev[i]["labels"][0] for i in range(len(dev))])
    assert dev.tagset.begins[first_labels].all()                           # chunks are cut between words
    unknown = sum(int((dev[i]["tokens"] == Vocab.UNK_ID).sum()) for i in range(len(dev)))
    assert unknown == 67                                                    # dev characters unseen in train


def test_dataset_shares_vocab_and_honours_max_len_and_vocab_file(tmp_path):
    test = lac_data.PeoplesDailyTagging("test", max_len=0)
    assert test.vocab is lac_data.PeoplesDailyTagging("dev").vocab and test.tagset is pd.TAGSET
    assert len(test) == 1949 and sum(len(test[i]["tokens"]) for i in range(len(test))) == 187364
    path = tmp_path / "vocab.txt"
    Vocab(["中", "共"]).save(path)
    small = lac_data.PeoplesDailyTagging("dev", vocab_file=str(path), max_len=5)
    assert small[0]["tokens"].tolist() == [2, 3, 2, 1]                    # 中共中央 | 总书记、 | ...
    assert max(len(small[i]["tokens"]) for i in range(len(small))) <= 5
    sample = small[0]
    sample["tokens"][:] = 0
    assert small[0]["tokens"].tolist() == [2, 3, 2, 1]                    # samples are copies


def test_dataset_is_registered_and_checks_arguments():
    data = DATASETS.build({"type": "PeoplesDailyTagging", "split": "dev", "max_len": 100})
    assert len(data[0]["labels"]) == 15
    with pytest.raises(ValueError, match="split must be one of"):
        lac_data.PeoplesDailyTagging("valid")


def test_small_corpus_file(tmp_path):
    lines = [f"第{i}/m  句/q" for i in range(12)]
    lines.insert(3, "   ")                                                  # blank lines are not numbered
    path = tmp_path / "tiny.txt"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert [s.words[0] for s in pd.read_sentences("dev", str(path))] == ["第1", "第11"]
    data = lac_data.PeoplesDailyTagging("test", corpus_file=str(path))
    assert data.lines.tolist() == [0, 10]
    assert data.vocab.tokens == ["<pad>", "<unk>", "句", "第", "2", "3", "4", "5", "6", "7", "8", "9"]
    assert data[1]["tokens"].tolist() == [3, 1, 1, 2]                    # "1" and "0" only occur outside train
    path.write_text("甲/n\n乙/n  丙\n", encoding="utf-8")
    with pytest.raises(TextFormatError, match=r"tiny\.txt:2: token '丙' is not of the form word/TAG"):
        pd.read_corpus(str(path))


PKU_VOCAB = os.path.join(os.path.dirname(__file__), "..", "..", "..", "zoo", "weights", "lac_pku.vocab.txt")


def test_a_test_file_read_whole_with_a_saved_tag_set(tmp_path):
    tags = tmp_path / "tags.txt"
    tags.write_text("BRAND-B\nBRAND-I\nCOLOR-B\nCOLOR-I\nO-B\nO-I\nO\n", encoding="utf-8")
    path = tmp_path / "test.txt"
    path.write_text("".join(f"第{i}/O 华为/BRAND\n" for i in range(12)), encoding="utf-8")
    data = lac_data.PeoplesDailyTagging("all", vocab_file=PKU_VOCAB, path=str(path),
                                        tag_file=str(tags))
    assert data.lines.tolist() == list(range(12)) and data.num_labels == 7       # every line; the saved tags
    assert data.tagset.decode(data[0]["labels"]) == ["O-B", "O-I", "BRAND-B", "BRAND-I"]     # 第0 华为
    assert data.labels_source == f"the tag set of {tags}"
    path.write_text("红/COLOR\n\n华为/BRAND 手机/PRODUCT\n", encoding="utf-8")
    with pytest.raises(TextFormatError, match=rf"test\.txt:3: tag 'PRODUCT' is not in the tag set of .*tags\.txt "
                                              r"\(BRAND, COLOR, O\)"):
        lac_data.PeoplesDailyTagging("all", vocab_file=PKU_VOCAB, path=str(path),
                                     tag_file=str(tags))
