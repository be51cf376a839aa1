"""nlp.lac.lexicon: the vectorised matcher against a plain-Python reference on random rows and lexicons."""
import numpy
import pytest

from nlp.data.vocab import Vocab
from nlp.lac.lexicon import LexiconFeatures, StackedLexiconFeatures

CHARS = "abcde"                                   # few characters, so random rows hold many lexicon words


def _reference(ids, words, max_len):
    """(N, T, 3K - 4) features of ``ids`` by comparing every window with every word (module docstring)."""
    known = {tuple(ids) for ids in words}
    n, steps = ids.shape
    start = numpy.zeros((n, steps, max_len + 1), dtype=bool)
    end, middle = start.copy(), start.copy()
    for row in range(n):
        for t in range(steps):
            for k in range(2, max_len + 1):
                window = tuple(ids[row, t:t + k].tolist())
                if len(window) == k and window in known:
                    start[row, t, k] = end[row, t + k - 1, k] = True
                    middle[row, t + 1:t + k - 1, k] = True
    return numpy.concatenate([start[..., 2:], end[..., 2:], middle[..., 3:]], axis=-1).astype(numpy.float32)


def _random_lexicon(rng, vocab, size, longest):
    """``size`` distinct random words of 1..longest characters (a few with a character outside ``vocab``)."""
    words = set()
    while len(words) < size:
        word = "".join(rng.choice(list(CHARS + "z"), p=[0.19] * 5 + [0.05], size=rng.integers(1, longest + 1)))
        words.add(word)
    words = sorted(words)
    return words, [vocab.encode(w).tolist() for w in words if 2 <= len(w) and "z" not in w]


@pytest.mark.parametrize("seed", range(4))
def test_stacked_features_equal_a_plain_python_reference(seed):
    rng = numpy.random.default_rng(seed)
    vocab = Vocab(list(CHARS))
    lexicons = [(*_random_lexicon(rng, vocab, 60, 7), 4), (*_random_lexicon(rng, vocab, 40, 5), 6)]
    blocks = [LexiconFeatures(words, vocab, max_len) for words, _, max_len in lexicons]
    stacked = StackedLexiconFeatures(blocks)
    lengths = rng.integers(1, 30, size=9)
    ids = numpy.zeros((9, lengths.max()), dtype=numpy.int64)               # 0 past each length
    for row, length in enumerate(lengths):
        ids[row, :length] = rng.integers(Vocab.UNK_ID, len(vocab), size=length)   # unknown characters too
    assert stacked.num_features == 8 + 14
    for rows in (ids, ids[:, :3], ids[:, :1]):                     # and rows shorter than the longest word
        expected = [_reference(rows, [w for w in known if len(w) <= max_len], max_len)
                    for _, known, max_len in lexicons]
        for block, want in zip(blocks, expected):
            assert numpy.array_equal(block(rows), want)
        got = stacked(rows)
        assert got.dtype == numpy.float32 and numpy.array_equal(got, numpy.concatenate(expected, axis=-1))
    assert stacked(ids).any()

def test_stacked_features_refuse_more_flags_than_fit():
    vocab = Vocab(list(CHARS))
    with pytest.raises(ValueError, match="64 start flags"):
        StackedLexiconFeatures([LexiconFeatures(["ab"], vocab, max_len=9)] * 9)
