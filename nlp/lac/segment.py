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
"""
import math

from .tables import TextFormatError, read_dict_lines

__all__ = ["CoarseSegmenter"]

_ASCII_ALNUM = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")


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
        prefixes = {}                       # word -> True, proper prefix -> False (LAC: len(word) / None)
        for word in self.words:
            prefixes[word] = True
            for end in range(1, len(word)):
                prefixes.setdefault(word[:end], False)
        self._prefixes = prefixes
        longest = max((len(w) for w in prefixes), default=1)
        # score of a piece of length l: log(l) - logtotal, the same float as LAC's expression
        self._piece_score = [0.0] + [math.log(length) - self.logtotal for length in range(1, longest + 1)]

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

    def cut(self, text):
        """The pieces of ``text`` (str) as a list of str whose concatenation is ``text``."""
        n = len(text)
        if n == 0:
            return []
        prefixes, piece_score = self._prefixes, self._piece_score
        single = piece_score[1]
        route_score = [0.0] * (n + 1)
        route_end = list(range(n))
        for i in range(n - 1, -1, -1):
            best, best_end = single + route_score[i + 1], i
            end = i + 2
            is_word = prefixes.get(text[i])
            while is_word is not None and end <= n:
                is_word = prefixes.get(text[i:end])
                if is_word:
                    score = piece_score[end - i] + route_score[end]
                    if score >= best:
                        best, best_end = score, end - 1
                end += 1
            route_score[i], route_end[i] = best, best_end
        return self._merge_ascii(text, route_end)

    @staticmethod
    def _merge_ascii(text, route_end):
        """Walk the best path from position 0, merging runs of single ASCII letters/digits into one piece."""
        pieces, run_start, i, n = [], None, 0, len(text)
        while i < n:
            end = route_end[i] + 1
            if end == i + 1 and text[i] in _ASCII_ALNUM:
                if run_start is None:
                    run_start = i
            else:
                if run_start is not None:
                    pieces.append(text[run_start:i])
                    run_start = None
                pieces.append(text[i:end])
            i = end
        if run_start is not None:
            pieces.append(text[run_start:])
        return pieces
