"""nlp.data.peoples_daily: the corpus reader, on the real corpus (fetched once into the cache)."""
import pytest

from nlp.data import peoples_daily as pd
from nlp.data.text import TextFormatError

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


def test_tagset_is_fixed():
    assert len(pd.TAGSET) == 85 and len(pd.PKU_TAGS) == 42
    assert pd.TAGSET.names[:4] == ["Ag-B", "Ag-I", "Bg-B", "Bg-I"] and pd.TAGSET.names[-1] == "O"
    assert pd.TAGSET.id_of("nr-B") + 1 == pd.TAGSET.id_of("nr-I")
