"""A word lexicon and the per-character lexicon features a tagger reads: which known words start, end or cover
each character.

A lexicon file is UTF-8 text with one word per line (no empty lines, no
repeats), written by :func:`save_lexicon` and read by :func:`load_lexicon`.

:class:`LexiconFeatures` matches the lexicon against rows of character ids
(the ids of a character :class:`~nlp.data.vocab.Vocab`): for every word length
k in 2..``max_len`` and every position t it sets

- ``start k``: a lexicon word of length k starts at t;
- ``end k``: a lexicon word of length k ends at t;
- ``middle k`` (k >= 3): t lies strictly inside a lexicon word of length k.

The feature vector of a position is ``[start 2..K, end 2..K, middle 3..K]``,
``3K - 4`` values in {0, 1} (K = ``max_len``). :class:`StackedLexiconFeatures`
puts the features of several lexicons side by side (e.g. the train split's
words and an outside dictionary, so a model can learn how far to trust each).
Words are matched on ids: a word
with a character outside the vocabulary never matches (its id would be the
unknown id), and neither does one of another length. Matching hashes every
window of k ids to 64 bits (polynomial hash modulo 2^64) and looks the hashes
up in a sorted table per length, vectorised over the whole batch; a false
match needs two distinct windows of at most K ids with equal 64-bit hashes,
which is practically impossible.
"""
import numpy

from framework import backend

from nlp.data.text import check_unique_lines, full_to_half, read_utf8_lines
from nlp.data.vocab import Vocab, _write_lines

__all__ = ["DEFAULT_MAX_LEN", "load_lexicon", "save_lexicon", "LexiconFeatures", "StackedLexiconFeatures"]

DEFAULT_MAX_LEN = 6                     # K: the longest word length with features by default

_MULTIPLIER = 0x9E3779B97F4A7C15        # odd, so multiplication modulo 2^64 loses no information


def save_lexicon(words, path):
    """Write ``words`` (a sequence of distinct non-empty str) to ``path``, one per line, atomically."""
    words = list(words)
    bad = next((w for w in words if not isinstance(w, str) or not w), None)
    if bad is not None:
        raise ValueError(f"save_lexicon: words must be non-empty strings, got {bad!r}")
    if len(set(words)) != len(words):
        raise ValueError(f"save_lexicon: {len(words) - len(set(words))} word(s) are given twice")
    _write_lines(path, words)


def load_lexicon(path):
    """The words (list of str, file order) of the lexicon file ``path``; a bad line raises TextFormatError."""
    return check_unique_lines(path, read_utf8_lines(path), "word")


def _window_hashes(ids, length):
    """(N, T) uint64 hashes of the windows ids[:, t:t+length] (zeros stand past the end of each row)."""
    xp = backend.get_array_module(ids)
    n, steps = ids.shape
    padded = xp.zeros((n, steps + length - 1), dtype=xp.uint64)
    padded[:, :steps] = ids
    h = padded[:, :steps].copy()
    for offset in range(1, length):
        h = h * xp.uint64(_MULTIPLIER) + padded[:, offset:offset + steps]
    return h


class LexiconFeatures:
    """Per-position lexicon features of character-id rows (see the module docstring).

    Args:
        words: the lexicon (str); they are normalised with :func:`~nlp.data.text.full_to_half`
            as the character vocabulary is. Words shorter than 2 or longer than ``max_len``
            characters give no feature.
        vocab: the character :class:`~nlp.data.vocab.Vocab` whose ids are matched.
        max_len: K, the longest word length with features (>= 2).

    Attributes: ``num_features`` (3K - 4) and ``num_words`` (the words that can match).
    """

    def __init__(self, words, vocab, max_len=DEFAULT_MAX_LEN):
        if not isinstance(vocab, Vocab):
            raise TypeError(f"LexiconFeatures: vocab must be a Vocab, got {type(vocab).__name__}")
        if max_len < 2:
            raise ValueError(f"LexiconFeatures: max_len must be >= 2, got {max_len}")
        self.max_len = int(max_len)
        self.num_features = 3 * self.max_len - 4
        words = list(words)
        lengths = numpy.fromiter(map(len, words), dtype=numpy.int64, count=len(words))       # (W,)
        all_ids = vocab.encode(full_to_half("".join(words)))              # every word's ids, end to end
        starts = numpy.cumsum(lengths) - lengths                          # (W,) where each word begins
        self._tables, self.num_words = {}, 0
        for k in range(2, self.max_len + 1):
            ids = all_ids[starts[lengths == k][:, None] + numpy.arange(k)]               # (W_k, k)
            ids = ids[(ids > Vocab.UNK_ID).all(axis=1)]                                  # words fully known
            self.num_words += len(ids)
            self._tables[k] = numpy.unique(_window_hashes(ids, k)[:, 0]) if len(ids) else \
                numpy.zeros(0, dtype=numpy.uint64)

    def __call__(self, ids):
        """Features (N, T, 3K - 4) float32 of ``ids`` (N, T) integer character ids (NumPy or CuPy, 0 = padding).

        Columns: start flags for lengths 2..K, end flags for 2..K, middle flags for 3..K.
        """
        if ids.ndim != 2:
            raise ValueError(f"LexiconFeatures: ids must be (N, T), got shape {tuple(ids.shape)}")
        xp = backend.get_array_module(ids)
        starts, ends, middles = [], [], []
        for k, table in self._tables.items():
            found = _starts_of(ids, k, backend.to_device(table, backend.device_of(ids)))   # (N, T)
            starts.append(found)
            ends.append(_shifted(found, k - 1))
            if k >= 3:
                middle = _shifted(found, 1)
                for offset in range(2, k - 1):
                    middle |= _shifted(found, offset)
                middles.append(middle)
        return xp.stack(starts + ends + middles, axis=-1).astype(xp.float32)


class StackedLexiconFeatures:
    """Several lexicons' features side by side: ``[features of lexicon 0, features of lexicon 1, ...]``.

    Args:
        blocks: :class:`LexiconFeatures` (or anything with ``num_features`` and the same call), in order.

    Attributes: ``blocks`` and ``num_features`` (their sum).
    """

    def __init__(self, blocks):
        self.blocks = list(blocks)
        if not self.blocks:
            raise ValueError("StackedLexiconFeatures: needs at least one lexicon")
        self.num_features = sum(block.num_features for block in self.blocks)

    def __call__(self, ids):
        """Features (N, T, num_features) float32 of ``ids`` (N, T): each block's columns in turn."""
        xp = backend.get_array_module(ids)
        return xp.concatenate([block(ids) for block in self.blocks], axis=-1)


def _starts_of(ids, length, table):
    """(N, T) bool: the window ids[:, t:t+length] hashes to an entry of ``table`` (sorted uint64)."""
    xp = backend.get_array_module(ids)
    if not len(table):
        return xp.zeros(ids.shape, dtype=bool)
    hashes = _window_hashes(ids.astype(xp.uint64), length)
    slots = xp.minimum(xp.searchsorted(table, hashes), len(table) - 1)
    return table[slots] == hashes


def _shifted(flags, offset):
    """(N, T) bool ``flags`` moved ``offset`` positions to the right along T (False enters on the left)."""
    xp = backend.get_array_module(flags)
    out = xp.zeros_like(flags)
    if offset < flags.shape[1]:
        out[:, offset:] = flags[:, :flags.shape[1] - offset]
    return out
