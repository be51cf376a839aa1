"""nlp.data.vocab: Vocab and TagSet tables, their text files and errors."""
import collections

import numpy
import pytest

from nlp.data.text import TextFormatError
from nlp.data.vocab import TagSet, Vocab


def test_build_orders_by_count_then_token_and_reserves_pad_and_unk():
    vocab = Vocab.build("的的的中中国国人")
    assert vocab.tokens == ["<pad>", "<unk>", "的", "中", "国", "人"]      # 中 (U+4E2D) < 国 (U+56FD)
    assert len(vocab) == 6 and vocab.PAD_ID == 0 and vocab.UNK_ID == 1
    same = Vocab.build(collections.Counter({"人": 1, "国": 2, "中": 2, "的": 3}))
    assert same == vocab


def test_build_min_freq_and_max_size():
    counts = {"a": 5, "b": 3, "c": 2, "d": 1}
    assert Vocab.build(counts, min_freq=2).tokens[2:] == ["a", "b", "c"]
    assert Vocab.build(counts, max_size=4).tokens == ["<pad>", "<unk>", "a", "b"]
    with pytest.raises(ValueError, match="min_freq must be >= 1"):
        Vocab.build(counts, min_freq=0)


def test_encode_decode():
    vocab = Vocab(["我", "们", "好"])
    ids = vocab.encode(["我", "们", "很", "好"])
    assert ids.dtype == numpy.int64
    numpy.testing.assert_array_equal(ids, [2, 3, 1, 4])
    numpy.testing.assert_array_equal(vocab.encode("好我"), [4, 2])
    assert vocab.encode([]).shape == (0,)
    assert vocab.decode(numpy.array([4, 0, 1])) == ["好", "<pad>", "<unk>"]
    assert vocab.id_of("我") == 2 and vocab.id_of("你") == 1 and "们" in vocab


def test_characters_are_looked_up_by_code_point():
    vocab = Vocab(["中", "国", "ab", "😀", "\ud800"])                # a multi-character token is never a character
    text = "中国ab😀x\ud800国"
    assert vocab.encode(text).tolist() == [vocab.id_of(c) for c in text] == [2, 3, 1, 1, 5, 1, 6, 3]
    assert vocab.char_ids(numpy.array([-1, 0x4E2D, 0x10FFFF])).tolist() == [Vocab.UNK_ID, 2, Vocab.UNK_ID]
    assert Vocab([]).encode("中").tolist() == [Vocab.UNK_ID] and vocab.encode("").shape == (0,)


def test_bad_tokens_and_ids():
    vocab = Vocab(["a"])
    with pytest.raises(TypeError, match="tokens must be strings, got int 3"):
        vocab.encode(["a", 3])
    with pytest.raises(IndexError, match=r"ids must be integers in \[0, 3\)"):
        vocab.decode([0, 3])
    with pytest.raises(ValueError, match="'a' is given twice"):
        Vocab(["a", "b", "a"])
    with pytest.raises(ValueError, match="equals pad/unk"):
        Vocab(["<unk>"])


def test_save_load_round_trip(tmp_path):
    vocab = Vocab(["中", "Ａ", " ", "word"], unk="[UNK]", pad="[PAD]")
    path = tmp_path / "sub" / "vocab.txt"
    vocab.save(path)
    assert path.read_text(encoding="utf-8") == "[PAD]\n[UNK]\n中\nＡ\n \nword\n"
    loaded = Vocab.load(path)
    assert loaded == vocab and loaded.unk == "[UNK]" and loaded.pad == "[PAD]"
    numpy.testing.assert_array_equal(loaded.encode(["word", " ", "?"]), [5, 4, 1])
    assert not list(path.parent.glob("*.part"))


def test_save_rejects_line_breaks(tmp_path):
    with pytest.raises(ValueError, match="holds a line break"):
        Vocab(["a\nb"]).save(tmp_path / "v.txt")


@pytest.mark.parametrize("content, message", [
    ("<pad>\n<unk>\na\n\nb\n", r"v\.txt:4: empty line"),
    ("<pad>\n<unk>\na\nb\na\n", r"v\.txt:5: token 'a' repeats line 3"),
    ("<pad>\n", r"v\.txt: a vocabulary file needs at least 2 lines"),
])
def test_load_names_file_and_line_of_bad_lines(tmp_path, content, message):
    path = tmp_path / "v.txt"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(TextFormatError, match=message):
        Vocab.load(path)


def test_load_rejects_invalid_utf8(tmp_path):
    path = tmp_path / "v.txt"
    path.write_bytes(b"<pad>\n<unk>\n\xe4\xb8\n")
    with pytest.raises(TextFormatError, match=r"v\.txt:3: invalid UTF-8"):
        Vocab.load(path)


def test_tagset_from_pos_order_and_tables():
    tags = TagSet.from_pos(["v", "nr", "n", "nr"])
    assert tags.names == ["n-B", "n-I", "nr-B", "nr-I", "v-B", "v-I", "O"]
    assert tags.pos_tags == ["n", "nr", "v"] and tags.type_names == ["n", "nr", "v", "O"]
    numpy.testing.assert_array_equal(tags.type_ids, [0, 0, 1, 1, 2, 2, 3])
    numpy.testing.assert_array_equal(tags.begins, [1, 0, 1, 0, 1, 0, 0])
    numpy.testing.assert_array_equal(tags.encode(["v-B", "O", "n-I"]), [4, 6, 1])
    assert tags.decode([2, 3]) == ["nr-B", "nr-I"]
    assert TagSet.from_pos(["a"], outside=False).names == ["a-B", "a-I"]
    with pytest.raises(KeyError, match="unknown label 'x-B'"):
        tags.encode(["x-B"])


def test_tagset_rejects_bad_names():
    with pytest.raises(ValueError, match="neither 'O' nor of the form"):
        TagSet(["n-B", "n-E"])
    with pytest.raises(ValueError, match="given twice"):
        TagSet(["n-B", "n-B"])


def test_tagset_save_load_round_trip_and_errors(tmp_path):
    tags = TagSet.from_pos(["PER", "n"])
    path = tmp_path / "tags.txt"
    tags.save(path)
    assert path.read_text(encoding="utf-8") == "PER-B\nPER-I\nn-B\nn-I\nO\n"
    assert TagSet.load(path) == tags
    path.write_text("n-B\nn-I\nn-S\n", encoding="utf-8")
    with pytest.raises(TextFormatError, match=r"tags\.txt:3: 'n-S' is neither"):
        TagSet.load(path)
    path.write_text("n-B\nO\nn-B\n", encoding="utf-8")
    with pytest.raises(TextFormatError, match=r"tags\.txt:3: label 'n-B' repeats line 1"):
        TagSet.load(path)
