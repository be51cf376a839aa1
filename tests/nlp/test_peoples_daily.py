"""nlp.data.peoples_daily on the real corpus (fetched once into the cache) and on small files."""
import numpy
import pytest

from framework.registry import DATASETS
from nlp.data import peoples_daily as pd
from nlp.data.text import TextFormatError
from nlp.data.vocab import Vocab

LINE_1 = "中共中央/nt  总书记/n  、/w  国家/n  主席/n  江/nr  泽民/nr"


@pytest.fixture(scope="module")
def corpus():
    return pd.read_corpus()


def test_parse_line_on_a_real_line():
    words, tags, fixes = pd.parse_line(LINE_1)
    assert words == ["中共中央", "总书记", "、", "国家", "主席", "江", "泽民"]
    assert tags == ["nt", "n", "w", "n", "n", "nr", "nr"]
    assert fixes == []


def test_parse_line_odd_spacing_fixes_and_errors():
    words, tags, fixes = pd.parse_line("叹/Vg 曰/Vg   面试/vvn  １/m")
    assert words == ["叹", "曰", "面试", "１"] and tags == ["Vg", "Vg", "vn", "m"]
    assert fixes == [("面试", "vvn", "vn")]
    assert pd.parse_line("１／２/m")[0] == ["１／２"]                      # full-width slash stays in the word
    with pytest.raises(TextFormatError, match=r"f\.txt:7: token '江泽民' is not of the form word/TAG"):
        pd.parse_line("江泽民  发表/v", "f.txt:7")
    with pytest.raises(TextFormatError, match=r"f\.txt:2: token '泽民/xx' has tag 'xx', which is not a PKU tag"):
        pd.parse_line("江/nr  泽民/xx", "f.txt:2")
    with pytest.raises(TextFormatError, match="not of the form"):
        pd.parse_line("/w")


def test_corpus_lines_and_fixes(corpus):
    assert len(corpus.sentences) == 19484
    first, second = corpus.sentences[0], corpus.sentences[1]
    assert first.words[:3] == ["迈向", "充满", "希望"] and first.line == 0
    assert (second.words, second.tags) == pd.parse_line(LINE_1)[:2] and second.line == 1
    assert corpus.fixes == [(2257, "面试", "vvn", "vn"), (8917, "镇国寺", "na", "ns")]
    assert sum(len(s.words) for s in corpus.sentences) == 1121447
    assert {t for s in corpus.sentences for t in s.tags} == set(pd.PKU_TAGS)


def test_split_sizes_and_membership(corpus):
    splits = {name: pd.read_sentences(name) for name in pd.SPLITS}
    assert {name: len(s) for name, s in splits.items()} == {"train": 15586, "dev": 1949, "test": 1949}
    assert all(s.line % 10 == 0 for s in splits["test"])
    assert all(s.line % 10 == 1 for s in splits["dev"])
    assert all(s.line % 10 >= 2 for s in splits["train"])
    assert sorted(s.line for split in splits.values() for s in split) == list(range(19484))
    assert splits["dev"][0] == corpus.sentences[1] and splits["train"][0].line == 2
    assert [pd.split_of(i) for i in (0, 1, 2, 9, 10, 11, 19483)] == ["test", "dev", "train", "train", "test",
                                                                     "dev", "train"]
    with pytest.raises(ValueError, match="split must be one of train, dev, test"):
        pd.read_sentences("eval")


def test_char_labels_normalise_full_width(corpus):
    text, labels = pd.char_labels(*pd.parse_line(LINE_1)[:2])
    assert text == "中共中央总书记、国家主席江泽民"
    assert labels == ["nt-B", "nt-I", "nt-I", "nt-I", "n-B", "n-I", "n-I", "w-B", "n-B", "n-I", "n-B", "n-I",
                      "nr-B", "nr-B", "nr-I"]
    line_3 = corpus.sentences[3]
    assert line_3.words[:3] == ["１２月", "３１日", "，"]                   # read_sentences keeps the raw words
    text, labels = pd.char_labels(line_3.words[:3], line_3.tags[:3])
    assert text == "12月31日,"
    assert labels == ["t-B", "t-I", "t-I", "t-B", "t-I", "t-I", "w-B"]


def test_tagset_is_fixed():
    assert len(pd.TAGSET) == 85 and len(pd.PKU_TAGS) == 42
    assert pd.TAGSET.names[:4] == ["Ag-B", "Ag-I", "Bg-B", "Bg-I"] and pd.TAGSET.names[-1] == "O"
    assert pd.TAGSET.id_of("nr-B") + 1 == pd.TAGSET.id_of("nr-I")


def test_char_vocab_from_train_split():
    vocab = pd.char_vocab()
    assert vocab is pd.char_vocab() and len(vocab) == 4571
    assert len(pd.char_vocab(min_freq=2)) == 4034
    assert vocab.tokens[2:6] == [",", "的", "。", "、"]                     # most frequent first
    assert "1" in vocab and "１" not in vocab                            # normalised characters only


def test_dataset_samples_cover_the_split():
    dev = pd.PeoplesDailyTagging("dev")
    sample = dev[0]
    assert sample["tokens"].dtype == numpy.int64 and sample["labels"].dtype == numpy.int64
    assert "".join(dev.vocab.decode(sample["tokens"])) == "中共中央总书记、国家主席江泽民"
    assert dev.tagset.decode(sample["labels"]) == pd.char_labels(*pd.parse_line(LINE_1)[:2])[1]
    lengths = numpy.asarray([len(dev[i]["tokens"]) for i in range(len(dev))])
    assert lengths.sum() == 175844 and lengths.max() == 200 and len(dev) == 2200
    assert numpy.unique(dev.lines).tolist() == [s.line for s in pd.read_sentences("dev")]
    first_labels = numpy.asarray([dev[i]["labels"][0] for i in range(len(dev))])
    assert dev.tagset.begins[first_labels].all()                           # chunks are cut between words
    unknown = sum(int((dev[i]["tokens"] == Vocab.UNK_ID).sum()) for i in range(len(dev)))
    assert unknown == 67                                                    # dev characters unseen in train


def test_dataset_shares_vocab_and_honours_max_len_and_vocab_file(tmp_path):
    test = pd.PeoplesDailyTagging("test", max_len=0)
    assert test.vocab is pd.PeoplesDailyTagging("dev").vocab and test.tagset is pd.TAGSET
    assert len(test) == 1949 and sum(len(test[i]["tokens"]) for i in range(len(test))) == 187364
    path = tmp_path / "vocab.txt"
    Vocab(["中", "共"]).save(path)
    small = pd.PeoplesDailyTagging("dev", vocab_file=str(path), max_len=5)
    assert small[0]["tokens"].tolist() == [2, 3, 2, 1]                    # 中共中央 | 总书记、 | ...
    assert max(len(small[i]["tokens"]) for i in range(len(small))) <= 5
    sample = small[0]
    sample["tokens"][:] = 0
    assert small[0]["tokens"].tolist() == [2, 3, 2, 1]                    # samples are copies


def test_dataset_is_registered_and_checks_arguments():
    data = DATASETS.build({"type": "PeoplesDailyTagging", "split": "dev", "max_len": 100})
    assert len(data[0]["labels"]) == 15
    with pytest.raises(ValueError, match="split must be one of"):
        pd.PeoplesDailyTagging("valid")


def test_small_corpus_file(tmp_path):
    lines = [f"第{i}/m  句/q" for i in range(12)]
    lines.insert(3, "   ")                                                  # blank lines are not numbered
    path = tmp_path / "tiny.txt"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert [s.words[0] for s in pd.read_sentences("dev", str(path))] == ["第1", "第11"]
    data = pd.PeoplesDailyTagging("test", corpus_file=str(path))
    assert data.lines.tolist() == [0, 10]
    assert data.vocab.tokens == ["<pad>", "<unk>", "句", "第", "2", "3", "4", "5", "6", "7", "8", "9"]
    assert data[1]["tokens"].tolist() == [3, 1, 1, 2]                    # "1" and "0" only occur outside train
    path.write_text("甲/n\n乙/n  丙\n", encoding="utf-8")
    with pytest.raises(TextFormatError, match=r"tiny\.txt:2: token '丙' is not of the form word/TAG"):
        pd.read_corpus(str(path))
