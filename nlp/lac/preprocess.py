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

from nlp.data.text import code_points, full_to_half_codes

__all__ = ["Preprocessor", "OfficialPreprocessor", "CharPreprocessor", "TableCharPreprocessor"]


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
    """LAC's ``texts2tensor`` for one text: coarse segmentation, then ``Dataset.text_to_ids``.

    Each piece of :meth:`CoarseSegmenter.cut` that is a key of ``word2id`` (the
    raw piece, before q2b) becomes one id, ``word2id.get(q2b.get(piece, piece), oov_id)``,
    covering ``len(piece)`` characters; any other piece becomes one id per
    character, ``word2id.get(q2b.get(c, c), oov_id)``.

    Args:
        word2id: ``{token: id}`` (``conf/word.dic``).
        q2b: ``{character or token: replacement}`` (``conf/q2b.dic``: full-width ->
            half-width, traditional -> simplified).
        segmenter: a :class:`~nlp.lac.segment.CoarseSegmenter`.
        oov_id: the id of unknown tokens (``word2id["OOV"]`` in the official model).
    """

    def __init__(self, word2id, q2b, segmenter, oov_id):
        self.word2id, self.q2b, self.segmenter, self.oov_id = word2id, q2b, segmenter, int(oov_id)
        self._char_ids = {}                  # memo of the per-character lookup

    def _char_id(self, char):
        """The id of one character (q2b, then the vocabulary), memoised."""
        found = self._char_ids.get(char)
        if found is None:
            found = self._char_ids[char] = self.word2id.get(self.q2b.get(char, char), self.oov_id)
        return found

    def encode(self, text):
        """(ids, word_lengths) of ``text`` (str), as two lists of int."""
        word2id, q2b, oov, char_ids = self.word2id, self.q2b, self.oov_id, self._char_ids
        ids, lengths = [], []
        for piece in self.segmenter.cut(text):
            if piece in word2id:
                ids.append(word2id.get(q2b.get(piece, piece), oov))
                lengths.append(len(piece))
            else:
                for char in piece:
                    found = char_ids.get(char)
                    ids.append(self._char_id(char) if found is None else found)
                lengths.extend([1] * len(piece))
        return ids, lengths


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

    def encode_batch(self, texts):
        """(ids (M,), sizes (n,), word_lengths (M,)) int64 of ``texts`` (list of n str): one id per character,
        all texts looked up together."""
        sizes = numpy.fromiter(map(len, texts), dtype=numpy.int64, count=len(texts))
        codes, where = numpy.unique(code_points("".join(texts)), return_inverse=True)
        table = numpy.fromiter((self._code_id(code) for code in codes.tolist()), dtype=numpy.int64, count=len(codes))
        return table[where.reshape(-1)], sizes, numpy.ones(int(sizes.sum()), dtype=numpy.int64)
