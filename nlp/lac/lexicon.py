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
unknown id), and neither does one of another length. Matching hashes
windows of ids to 64 bits (the polynomial hash h = (...(a_1 M + a_2) M + ...)
M + a_k modulo 2^64) and looks the hashes up in a sorted table per length,
vectorised over the whole batch and over all stacked lexicons at once; the
window at a position grows from 2 ids only while it is the beginning of some
longer lexicon word, so most positions need one or two lookups. A false match
needs two distinct windows of at most K ids with equal 64-bit hashes, which is
practically impossible.
"""
import numpy

from framework import backend

from nlp.data.text import check_unique_lines, full_to_half, read_utf8_lines
from nlp.data.vocab import Vocab, write_lines

__all__ = ["DEFAULT_MAX_LEN", "load_lexicon", "save_lexicon", "LexiconFeatures", "StackedLexiconFeatures"]

DEFAULT_MAX_LEN = 6                     # K: the longest word length with features by default

_MULTIPLIER = 0x9E3779B97F4A7C15        # odd, so multiplication modulo 2^64 loses no information
_LAST = 2 ** 64 - 1                     # the largest 64-bit hash


def save_lexicon(words, path):
    """Write ``words`` (a sequence of distinct non-empty str) to ``path``, one per line, atomically."""
    words = list(words)
    bad = next((w for w in words if not isinstance(w, str) or not w), None)
    if bad is not None:
        raise ValueError(f"save_lexicon: words must be non-empty strings, got {bad!r}")
    if len(set(words)) != len(words):
        raise ValueError(f"save_lexicon: {len(words) - len(set(words))} word(s) are given twice")
    write_lines(path, words)


def load_lexicon(path):
    """The words (list of str, file order) of the lexicon file ``path``; a bad line raises TextFormatError."""
    return check_unique_lines(path, read_utf8_lines(path), "word")


def _row_hashes(ids):
    """(W,) uint64 polynomial hashes (module docstring) of the rows of ``ids`` (W, k) integer ids."""
    ids = ids.astype(numpy.uint64)
    hashes = ids[:, 0].copy()
    for column in range(1, ids.shape[1]):
        hashes = hashes * numpy.uint64(_MULTIPLIER) + ids[:, column]
    return hashes


class LexiconFeatures:
    """Per-position lexicon features of character-id rows (see the module docstring).

    Args:
        words: the lexicon (str); they are normalised with :func:`~nlp.data.text.full_to_half`
            as the character vocabulary is. Words shorter than 2 or longer than ``max_len``
            characters give no feature.
        vocab: the character :class:`~nlp.data.vocab.Vocab` whose ids are matched.
        max_len: K, the longest word length with features (>= 2).

    Attributes: ``num_features`` (3K - 4), ``num_words`` (the words that can match) and ``word_ids``
    (``{k: (W_k, k) int64 ids}`` of those words, k = 2..K).
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
        self.word_ids = {}
        for k in range(2, self.max_len + 1):
            ids = all_ids[starts[lengths == k][:, None] + numpy.arange(k)]               # (W_k, k)
            self.word_ids[k] = ids[(ids > Vocab.UNK_ID).all(axis=1)]                     # words fully known
        self.num_words = sum(map(len, self.word_ids.values()))
        self._matcher = None                 # built on the first call (a stack builds its own over all blocks)

    def __call__(self, ids):
        """Features (N, T, 3K - 4) float32 of ``ids`` (N, T) integer character ids (NumPy or CuPy, 0 = padding).

        Columns: start flags for lengths 2..K, end flags for 2..K, middle flags for 3..K.
        """
        if self._matcher is None:
            self._matcher = _Matcher([self])
        return self._matcher(ids)


class StackedLexiconFeatures:
    """Several lexicons' features side by side: ``[features of lexicon 0, features of lexicon 1, ...]``.

    All lexicons are matched together, with one table lookup per window for all of them.

    Args:
        blocks: :class:`LexiconFeatures`, in order.

    Attributes: ``blocks`` and ``num_features`` (their sum).
    """

    def __init__(self, blocks):
        self.blocks = list(blocks)
        if not self.blocks:
            raise ValueError("StackedLexiconFeatures: needs at least one lexicon")
        self.num_features = sum(block.num_features for block in self.blocks)
        self._matcher = _Matcher(self.blocks)

    def __call__(self, ids):
        """Features (N, T, num_features) float32 of ``ids`` (N, T): each block's columns in turn."""
        return self._matcher(ids)


class _Matcher:
    """The features of the lexicons ``blocks`` (:class:`LexiconFeatures`) in rows of ids, all blocks at once.

    Start flags are bits of one uint64 per position: bit ``(k - 2) B + b`` says
    that a word of block b (of B) and length k starts there. They are found
    with one sorted table per length k holding the hashes of the blocks' words
    of length k and of the first k characters of their longer words, each with
    flags: bit b (block b has a word of length k with this hash) and bit B (a
    longer word begins with it); the largest hash ends every table (with no
    flags unless a word has it), so a search never runs past the end. The windows starting at every position are
    looked up at length 2, and a window grows by one id only where it is the
    beginning of a longer word, so most positions need one or two lookups.
    End and middle flags are the start flags moved right along the row.
    """

    def __init__(self, blocks):
        num_blocks = len(blocks)
        self.max_len = max(block.max_len for block in blocks)
        if num_blocks * (self.max_len - 1) > 64:
            raise ValueError(f"LexiconFeatures: {num_blocks} lexicons with words up to {self.max_len} characters "
                             f"need more than 64 start flags per position")
        self._num_blocks = num_blocks
        tables = []                                      # per length k = 2..K: (sorted hashes, flags), uint64
        for k in range(2, self.max_len + 1):
            hashes, flags = [], []
            for b, block in enumerate(blocks):
                for length, ids in block.word_ids.items():
                    if length >= k:
                        hashes.append(_row_hashes(ids[:, :k]))
                        flags.append(numpy.full(len(ids), 1 << (b if length == k else num_blocks), numpy.uint64))
            hashes.append(numpy.full(1, _LAST, dtype=numpy.uint64))      # the largest hash, so every search lands
            flags.append(numpy.zeros(1, dtype=numpy.uint64))             # inside the table
            table, owner = numpy.unique(numpy.concatenate(hashes), return_inverse=True)
            merged = numpy.zeros(len(table), dtype=numpy.uint64)
            numpy.bitwise_or.at(merged, owner.reshape(-1), numpy.concatenate(flags))
            tables.append((table, merged))
        source, shift = [], []                           # each output column: start/end/middle (0/1/2) and its bit
        for b, block in enumerate(blocks):
            for kind, first in ((0, 2), (1, 2), (2, 3)):
                for k in range(first, block.max_len + 1):
                    source.append(kind)
                    shift.append((k - 2) * num_blocks + b)
        self._code = numpy.min_scalar_type((1 << (num_blocks * (self.max_len - 1))) - 1)   # holds the flags
        block_bits = (1 << num_blocks) - 1
        self._ends = [self._code.type(block_bits << ((offset - 1) * num_blocks)) for offset in range(1, self.max_len)]
        self._inside = [self._code.type((1 << ((self.max_len - 1) * num_blocks)) - (1 << (offset * num_blocks)))
                        for offset in range(1, self.max_len)]
        self._arrays = {"cpu": (tables, numpy.array(source, dtype=numpy.intp), numpy.array(shift, dtype=self._code))}

    def _on(self, device):
        """(tables, column sources, column shifts) on ``device``, copied there once."""
        if device not in self._arrays:
            tables, source, shift = self._arrays["cpu"]
            move = lambda array: backend.to_device(array, device)          # noqa: E731
            self._arrays[device] = ([(move(t), move(f)) for t, f in tables], move(source), move(shift))
        return self._arrays[device]

    def _starts(self, ids, tables):
        """(N, T) uint64 start flags (class docstring) of ``ids`` (N, T); ids past each row's end read as 0."""
        xp = backend.get_array_module(ids)
        n, steps = ids.shape
        width = steps + self.max_len - 1
        padded = xp.zeros((n, width), dtype=xp.uint64)
        padded[:, :steps] = ids
        padded = padded.reshape(-1)
        starts = xp.zeros(n * width, dtype=xp.uint64)
        at = (xp.arange(n)[:, None] * width + xp.arange(steps)).reshape(-1)      # the windows still growing
        hashes = padded[at]
        block_bits = xp.uint64((1 << self._num_blocks) - 1)
        for k, (table, flags) in enumerate(tables, start=2):
            if not len(at):
                break
            hashes = hashes * xp.uint64(_MULTIPLIER) + padded[at + (k - 1)]      # windows of length k
            slots = xp.searchsorted(table, hashes)
            found = xp.where(table[slots] == hashes, flags[slots], xp.uint64(0))
            starts[at] |= (found & block_bits) << xp.uint64((k - 2) * self._num_blocks)
            longer = (found >> xp.uint64(self._num_blocks)).astype(bool)
            at, hashes = at[longer], hashes[longer]
        return starts.reshape(n, width)[:, :steps]

    def __call__(self, ids):
        """Features (N, T, F) float32 of ``ids`` (N, T) integer ids: each block's start, end and middle columns."""
        if ids.ndim != 2:
            raise ValueError(f"LexiconFeatures: ids must be (N, T), got shape {tuple(ids.shape)}")
        xp = backend.get_array_module(ids)
        tables, source, shift = self._on(backend.device_of(ids))
        codes = xp.zeros(ids.shape + (3,), dtype=self._code)                     # (N, T, 3): start, end, middle
        starts, ends, middles = codes[..., 0], codes[..., 1], codes[..., 2]
        starts[...] = self._starts(ids, tables)
        for offset in range(1, min(self.max_len, ids.shape[1])):             # a word begun offset places before
            earlier = starts[:, :-offset]
            ends[:, offset:] |= earlier & self._ends[offset - 1]
            middles[:, offset:] |= earlier & self._inside[offset - 1]
        bits = codes[..., source]                                                # (N, T, F)
        bits >>= shift
        bits &= self._code.type(1)
        return bits.astype(xp.float32)
