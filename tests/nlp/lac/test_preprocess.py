"""nlp.lac.preprocess: a batch of texts encodes to its texts' ids end to end."""
import numpy
import pytest

from nlp.data.vocab import Vocab
from nlp.lac.preprocess import CharPreprocessor, OfficialPreprocessor
from nlp.lac.segment import CoarseSegmenter


def _check_batch(preprocessor, texts):
    ids, sizes, word_lengths = preprocessor.encode_batch(texts)
    encoded = [preprocessor.encode(text) for text in texts]
    assert ids.dtype == sizes.dtype == word_lengths.dtype == numpy.int64
    assert sizes.tolist() == [len(text_ids) for text_ids, _ in encoded]
    assert ids.tolist() == [i for text_ids, _ in encoded for i in text_ids]
    assert word_lengths.tolist() == [n for _, lengths in encoded for n in lengths]
    return encoded


def test_char_preprocessor_batch_equals_one_text_at_a_time():
    pre = CharPreprocessor(Vocab(list("今天是好日子12,! ")))
    texts = ["今天是好日子", "", "１２，全角！", "今\u3000天 x", "😀"]
    encoded = _check_batch(pre, texts)
    assert encoded[2] == ([8, 9, 10, 1, 1, 11], [1] * 6)              # full-width forms read as their ASCII ones
    assert encoded[3][0] == [2, 12, 3, 12, 1] and encoded[1] == ([], [])
    assert [len(part) for part in pre.encode_batch([])] == [0, 0, 0]


@pytest.mark.parametrize("kernels", ["numba", "numpy"])
def test_official_preprocessor_batch_equals_one_text_at_a_time(kernels, monkeypatch):
    monkeypatch.setenv("OAR_KERNELS", kernels)                 # the compiled kernels and the NumPy reference
    segmenter = CoarseSegmenter(["ＡＢ", "xyz"], 10)
    pre = OfficialPreprocessor({"ＡＢ": 5, "A": 1, "B": 2, "们": 4, "ab": 6, "OOV": 9}, {"Ａ": "A", "們": "们"},
                               segmenter, oov_id=9)
    encoded = _check_batch(pre, ["ＡＢＡＡ", "們x", "", "ＡＢ", "ab 12 ab", "𠀀ＡＢ", "xyz"])
    assert encoded[0] == ([5, 1, 1], [2, 1, 1])                # a dictionary piece that is a key: one id
    assert encoded[1] == ([4, 9], [1, 1]) and encoded[2] == ([], [])
    assert encoded[4] == ([6, 9, 9, 9, 9, 6], [2, 1, 1, 1, 1, 2])   # ASCII runs: "ab" is a key, "12" is not
    assert encoded[5] == ([9, 5], [1, 2]) and encoded[6] == ([9, 9, 9], [1, 1, 1])
    assert [len(part) for part in pre.encode_batch([])] == [0, 0, 0]
