"""Text -> model input ids for lexical analysis: LAC's official mixed word/character ids, or plain characters.

A preprocessor (a :class:`Preprocessor`) has two methods:

- ``encode(text) -> (ids, word_lengths)``: ``ids`` a list of int token ids and
  ``word_lengths`` a list of the same length saying how many characters of
  ``text`` each id covers (they sum to ``len(text)``);
- ``encode_batch(texts) -> (ids, sizes, word_lengths)``: the same for a list
  of texts, as int64 arrays: the ids of all texts end to end (M,), the number
  of ids of each text (n,) and the characters each id covers (M,).

The tagger predicts one tag per id; the task expands each to its characters.
"""
import itertools

import numpy

from framework.kernels import cpu
from nlp.data.text import code_points, full_to_half_codes

from .segment import ALNUM_CODES, key_words

__all__ = ["Preprocessor", "OfficialPreprocessor", "CharPreprocessor", "TableCharPreprocessor"]

_PLANE0 = 0x10000


class Preprocessor:
    """The preprocessor interface (module docstring); :meth:`encode_batch` defaults to :meth:`encode` per text."""

    def encode(self, text):
        """(ids, word_lengths) of ``text`` (str), as two lists of int."""
        raise NotImplementedError

    def encode_batch(self, texts):
        """(ids (M,), sizes (n,), word_lengths (M,)) int64 of ``texts`` (list of n str), ids end to end."""
        encoded = [self.encode(text) for text in texts]
        sizes = numpy.fromiter(map(len, (ids for ids, _ in encoded)), dtype=numpy.int64, count=len(encoded))
        total = int(sizes.sum())
        ids = numpy.fromiter(itertools.chain.from_iterable(ids for ids, _ in encoded), dtype=numpy.int64, count=total)
        lengths = numpy.fromiter(itertools.chain.from_iterable(lengths for _, lengths in encoded), dtype=numpy.int64,
                                 count=total)
        return ids, sizes, lengths


class OfficialPreprocessor(Preprocessor):
    """LAC's ``texts2tensor``: coarse segmentation, then ``Dataset.text_to_ids``, for a whole batch at once.

    Each piece of the coarse segmentation (:meth:`CoarseSegmenter.piece_lengths`) that is a key of ``word2id``
    (the raw piece, before q2b) becomes one id, ``word2id.get(q2b.get(piece, piece), oov_id)``, covering
    ``len(piece)`` characters; any other piece becomes one id per character, ``word2id.get(q2b.get(c, c),
    oov_id)``. A one-character piece gets that character's id either way, so only the longer pieces are looked
    up as words; the characters go through a per-code-point table (:class:`TableCharPreprocessor`).

    Args:
        word2id: ``{token: id}`` (``conf/word.dic``).
        q2b: ``{character or token: replacement}`` (``conf/q2b.dic``: full-width ->
            half-width, traditional -> simplified).
        segmenter: a :class:`~nlp.lac.segment.CoarseSegmenter`.
        oov_id: the id of unknown tokens (``word2id["OOV"]`` in the official model).
    """

    def __init__(self, word2id, q2b, segmenter, oov_id):
        self.word2id, self.q2b, self.segmenter, self.oov_id = word2id, q2b, segmenter, int(oov_id)
        self._chars = TableCharPreprocessor(word2id, q2b, oov_id)
        self._tables = None                  # the compiled kernels' tables, built on first use

    def encode(self, text):
        """(ids, word_lengths) of ``text`` (str), as two lists of int."""
        ids, _, lengths = self.encode_batch([text])
        return ids.tolist(), lengths.tolist()

    def _word_id(self, piece):
        """The one id of a piece that is a key of ``word2id``, else -1 (one id per character)."""
        return self.word2id.get(self.q2b.get(piece, piece), self.oov_id) if piece in self.word2id else -1

    def _compiled_tables(self):
        """The tables of :func:`nlp.lac.compiled.pieces_and_ids`, or None where the compiled kernels are off or
        the dictionary has a word of more than three characters."""
        if not cpu.enabled() or self.segmenter.longest > 3:
            return None
        if self._tables is None:
            words = self.segmenter.word_tables()
            empty = numpy.zeros(0, dtype=numpy.int64)
            keys2, keys3 = words.get(2, empty), words.get(3, empty)
            ids2, ids3 = (numpy.fromiter((self._word_id(word) for word in key_words(keys, k)), dtype=numpy.int64,
                                         count=len(keys)) for keys, k in ((keys2, 2), (keys3, 3)))
            scores = numpy.array((self.segmenter.piece_scores + [0.0] * 4)[:4], dtype=numpy.float64)
            self._tables = keys2, ids2, keys3, ids3, scores, ALNUM_CODES
        return self._tables

    def encode_batch(self, texts):
        """(ids (M,), sizes (n,), word_lengths (M,)) int64 of ``texts`` (list of n str), ids end to end."""
        joined = "".join(texts)
        codes = code_points(joined)
        char_ids = self._chars.code_ids(codes)
        tables = self._compiled_tables()
        if tables is not None:
            from . import compiled
            sizes = numpy.fromiter(map(len, texts), dtype=numpy.int64, count=len(texts))
            return compiled.pieces_and_ids(codes, sizes, tables, char_ids,
                                           lambda first, n: self._word_id(joined[first:first + n]))
        pieces, counts = self.segmenter.piece_lengths(texts)                  # (P,), (n,)
        firsts = numpy.cumsum(pieces) - pieces
        longer = numpy.flatnonzero(pieces > 1)
        found = numpy.fromiter((self._word_id(joined[a:a + n]) for a, n in zip(firsts[longer].tolist(),
                                                                                pieces[longer].tolist())),
                               dtype=numpy.int64, count=len(longer))
        whole = numpy.ones(len(pieces), dtype=bool)                           # a piece that is one id
        whole[longer[found < 0]] = False
        per_piece = numpy.where(whole, 1, pieces)                             # ids of each piece
        piece_of = numpy.repeat(numpy.arange(len(pieces)), per_piece)        # (M,) each id's piece
        starts = numpy.cumsum(per_piece) - per_piece
        ids = char_ids[firsts[piece_of] + numpy.arange(len(piece_of)) - starts[piece_of]]
        kept = longer[found >= 0]
        ids[starts[kept]] = found[found >= 0]
        lengths = numpy.where(whole, pieces, 1)[piece_of]
        ends = numpy.concatenate([[0], numpy.cumsum(per_piece)])[numpy.cumsum(counts)]   # after each text's ids
        return ids, numpy.diff(ends, prepend=0), lengths


class CharPreprocessor(Preprocessor):
    """One id per character: :func:`~nlp.data.text.full_to_half`, then ``vocab`` (unknown characters get its unk id).

    Args:
        vocab: a :class:`~nlp.data.vocab.Vocab` of characters (its ``char_ids`` maps code points to ids).
    """

    def __init__(self, vocab):
        self.vocab = vocab

    def encode(self, text):
        """(ids, word_lengths) of ``text`` (str): one id per character, every length 1."""
        ids, _, lengths = self.encode_batch([text])
        return ids.tolist(), lengths.tolist()

    def encode_batch(self, texts):
        """(ids (M,), sizes (n,), word_lengths (M,)) int64 of ``texts`` (list of n str): one id per character,
        all texts converted together."""
        sizes = numpy.fromiter(map(len, texts), dtype=numpy.int64, count=len(texts))
        ids = self.vocab.char_ids(full_to_half_codes(code_points("".join(texts))))
        return ids, sizes, numpy.ones(len(ids), dtype=numpy.int64)


class TableCharPreprocessor(Preprocessor):
    """One id per character through LAC's tables: ``word2id.get(q2b.get(c, c), oov_id)`` (LAC's
    ``Dataset.word_to_ids`` on a text, as its ``seg`` model reads it and as the 2019 PaddleNLP LAC reader did).

    Args:
        word2id: ``{token: id}`` (a ``word.dic``).
        q2b: ``{character: replacement}`` (LAC's ``q2b.dic``: full-width -> half-width, traditional -> simplified).
        oov_id: the id of characters outside ``word2id``.
    """

    def __init__(self, word2id, q2b, oov_id):
        self.word2id, self.q2b, self.oov_id = word2id, q2b, int(oov_id)
        self._ids = {}                       # code point -> id, memoised
        self._plane0 = None                  # the ids of the code points below 0x10000, built on first use

    def _code_id(self, code):
        found = self._ids.get(code)
        if found is None:
            char = chr(code)
            found = self._ids[code] = self.word2id.get(self.q2b.get(char, char), self.oov_id)
        return found

    def encode(self, text):
        """(ids, word_lengths) of ``text`` (str): one id per character, every length 1."""
        ids, _, lengths = self.encode_batch([text])
        return ids.tolist(), lengths.tolist()

    def code_ids(self, codes):
        """The id of each code point of ``codes`` (n,) int64, as int64 (n,): from a table of the Basic
        Multilingual Plane when every code point lies in it, else looked up per distinct code point."""
        if not len(codes) or codes.max() < _PLANE0:
            if self._plane0 is None:
                word2id, q2b, oov = self.word2id, self.q2b, self.oov_id
                self._plane0 = numpy.fromiter((word2id.get(q2b.get(c, c), oov) for c in map(chr, range(_PLANE0))),
                                              dtype=numpy.int64, count=_PLANE0)
            return self._plane0[codes]
        unique, where = numpy.unique(codes, return_inverse=True)
        table = numpy.fromiter((self._code_id(code) for code in unique.tolist()), dtype=numpy.int64,
                               count=len(unique))
        return table[where.reshape(-1)]

    def encode_batch(self, texts):
        """(ids (M,), sizes (n,), word_lengths (M,)) int64 of ``texts`` (list of n str): one id per character,
        all texts looked up together."""
        sizes = numpy.fromiter(map(len, texts), dtype=numpy.int64, count=len(texts))
        return self.code_ids(code_points("".join(texts))), sizes, numpy.ones(int(sizes.sum()), dtype=numpy.int64)
