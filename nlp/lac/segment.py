"""LAC's dictionary-based coarse segmentation (``LAC/segment.py``, ``Segment.fast_cut``), reproduced exactly.

The official LAC model reads a sentence as a mix of word and character ids:
the text is first cut into pieces by a maximum-probability path over a word
DAG built from ``conf/small_seg.dic`` (lines ``word count``), then each piece
that is in the model's vocabulary becomes one id. Quirks kept on purpose,
because the official output depends on them:

- The dictionary stores each word's *length* as its value (``TriedTree.add_word``),
  not its count; the counts are used only for ``logtotal = log(sum(counts))``.
  So a piece of length l scores ``log(l) - logtotal`` (single characters,
  words or not, score ``0 - logtotal``), and the best path is the one with the
  highest sum: mostly the fewest pieces.
- ``route[i] = max((score(i..j) + route[j+1], j) for j in dag[i])`` from right to
  left with Python floats, so score ties go to the larger j (tuple comparison).
- Afterwards, consecutive single-character pieces that are ASCII letters or
  digits (``[a-zA-Z0-9]``) are merged into one piece.

The DAG needs only to know where a dictionary word of each length k >= 2 starts: LAC's loop at i tries the
pieces ``text[i:i + k]`` for k = 2, 3 ... while they are dictionary prefixes, and a word's prefixes are all
prefixes, so the pieces it scores are exactly the words starting at i (a single character is always a
candidate, scored as one whether a word or not). :meth:`CoarseSegmenter.piece_lengths` finds those starts
for a whole batch at once: words of up to three characters as one int64 key per n-gram of code points (21
bits each, so no two n-grams share a key) searched in a sorted table, longer ones (no LAC dictionary has
any) by set membership; only the right-to-left route, with the same Python floats and tie rule, is a loop.
"""
import math

import numpy

from nlp.data.text import code_points

from .tables import TextFormatError, read_dict_lines

__all__ = ["CoarseSegmenter", "key_words", "ALNUM_CODES"]

_ASCII_ALNUM = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
_CODE_BITS, _KEYED_MAX = 21, 3          # every code point fits 21 bits; three of them fit an int64 key
ALNUM_CODES = numpy.zeros(128, dtype=bool)
ALNUM_CODES[[ord(c) for c in _ASCII_ALNUM]] = True


def key_words(keys, k):
    """The words of ``k`` characters whose n-gram keys are ``keys`` (int64 (W,)), as a list of str."""
    mask = (1 << _CODE_BITS) - 1
    return ["".join(chr((key >> (_CODE_BITS * (k - 1 - i))) & mask) for i in range(k)) for key in keys.tolist()]


def _ngram_keys(codes, k):
    """The int64 key of each n-gram of ``k`` (<= 3) code points of ``codes`` (n,): (n - k + 1,)."""
    keys = codes[:len(codes) - k + 1].copy()
    for offset in range(1, k):
        keys <<= _CODE_BITS
        keys |= codes[offset:len(codes) - k + 1 + offset]
    return keys


class CoarseSegmenter:
    """Cuts text into pieces along LAC's best dictionary path (see the module docstring).

    Args:
        words: the dictionary words (an iterable of non-empty str), kept as ``self.words``.
        total_count: the sum of the dictionary's counts (only its log is used).
    """

    def __init__(self, words, total_count):
        if total_count <= 0:
            raise ValueError(f"CoarseSegmenter: total_count must be positive, got {total_count}")
        self.words, self.total_count = list(words), int(total_count)
        self.logtotal = math.log(total_count)
        self.longest = max(map(len, self.words), default=1)
        # score of a piece of length l: log(l) - logtotal, the same float as LAC's expression
        self.piece_scores = [0.0] + [math.log(length) - self.logtotal for length in range(1, self.longest + 1)]
        self._tables = None                 # {k: sorted int64 keys (k <= 3) or a set of str (k > 3)}, on first use

    @classmethod
    def from_file(cls, path):
        """Read ``small_seg.dic`` (UTF-8 lines ``word count``); a malformed line raises TextFormatError naming it."""
        words, total = [], 0
        for number, line in read_dict_lines(path):
            fields = line.strip().split(" ")
            try:
                word, count = fields
                total += int(count)
            except ValueError:
                raise TextFormatError(f"{path}:{number}: expected 'word count', got {line!r}") from None
            words.append(word)
        return cls(words, total)

    def word_tables(self):
        """``{k: table}`` of the dictionary words of each length k >= 2: sorted n-gram keys up to three
        characters, a set of str beyond."""
        if self._tables is None:
            by_length = {}
            for word in self.words:
                if len(word) > 1:
                    by_length.setdefault(len(word), set()).add(word)
            self._tables = {k: numpy.unique(_ngram_keys(code_points("".join(words)), k)[::k])
                            if k <= _KEYED_MAX else words for k, words in sorted(by_length.items())}
        return self._tables

    def _word_starts(self, joined, codes, stops):
        """``[(k, score, starts)]`` for each word length k >= 2: ``starts`` (list of bool, one per character of
        ``joined``) is True where a dictionary word of k characters begins and ends by ``stops`` (the end of
        the character's text)."""
        found, n = [], len(codes)
        for k, table in self.word_tables().items():
            starts = numpy.zeros(n, dtype=bool)
            if n >= k:
                if k <= _KEYED_MAX:
                    keys = _ngram_keys(codes, k)
                    at = numpy.searchsorted(table, keys)
                    hit = table[numpy.minimum(at, len(table) - 1)] == keys
                else:
                    hit = numpy.fromiter((joined[i:i + k] in table for i in range(n - k + 1)), dtype=bool,
                                         count=n - k + 1)
                starts[:n - k + 1] = hit & (numpy.arange(k, n + 1) <= stops[:n - k + 1])
            if starts.any():
                found.append((k, self.piece_scores[k], starts.tolist()))
        return found

    def piece_lengths(self, texts):
        """The pieces of every text of ``texts`` (list of str) as characters per piece, end to end: int64 (P,),
        and the number of pieces of each text, int64 (n,)."""
        joined = "".join(texts)
        codes = code_points(joined)
        sizes = numpy.fromiter(map(len, texts), dtype=numpy.int64, count=len(texts))
        stops = numpy.repeat(numpy.cumsum(sizes), sizes)                    # each character's text end
        words = self._word_starts(joined, codes, stops)
        alnum = numpy.zeros(len(codes), dtype=bool)
        ascii_codes = codes < 128
        alnum[ascii_codes] = ALNUM_CODES[codes[ascii_codes]]
        alnum = alnum.tolist()
        lengths, counts, first = [], [], 0
        for size in sizes.tolist():
            before = len(lengths)
            self._route(first, first + size, words, alnum, lengths)
            counts.append(len(lengths) - before)
            first += size
        return numpy.array(lengths, dtype=numpy.int64), numpy.array(counts, dtype=numpy.int64)

    def _route(self, first, stop, words, alnum, lengths):
        """Append to ``lengths`` the pieces of characters [first, stop) of the batch: LAC's best route from the
        right (a tie goes to the longer piece), then runs of single ASCII letters/digits merged."""
        single = self.piece_scores[1]
        score = [0.0] * (stop - first + 1)
        step = [1] * (stop - first)
        for i in range(stop - 1, first - 1, -1):
            at = i - first
            best, best_k = single + score[at + 1], 1
            for k, piece, starts in words:
                if starts[i]:
                    value = piece + score[at + k]
                    if value >= best:
                        best, best_k = value, k
            score[at], step[at] = best, best_k
        at, run = 0, 0
        while at < stop - first:
            k = step[at]
            if k == 1 and alnum[first + at]:
                run += 1
            else:
                if run:
                    lengths.append(run)
                    run = 0
                lengths.append(k)
            at += k
        if run:
            lengths.append(run)

    def cut(self, text):
        """The pieces of ``text`` (str) as a list of str whose concatenation is ``text``."""
        pieces, at = [], 0
        for length in self.piece_lengths([text])[0].tolist():
            pieces.append(text[at:at + length])
            at += length
        return pieces
