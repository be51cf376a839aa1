"""Vocabularies saved as plain text: :class:`Vocab` (tokens ↔ ids) and :class:`TagSet` (character labels ↔ ids).

A :class:`Vocab` file is UTF-8 text with one token per line in id order: line
1 is the padding token (id 0), line 2 the unknown token (id 1), then the
regular tokens. A :class:`TagSet` file holds one label name per line in id
order. Files are read as text only (never unpickled); a malformed file raises
:class:`~nlp.data.text.TextFormatError` naming the file and line.
"""
import collections
import itertools
import os
from collections.abc import Mapping

import numpy

from framework.serialization import atomic_write
from .text import TextFormatError, check_unique_lines, code_points, read_utf8_lines

__all__ = ["Vocab", "TagSet"]

_LINE_BREAKS = ("\n", "\r")


class Vocab:
    """A fixed token ↔ id table: id 0 = ``pad``, id 1 = ``unk``, ids 2.. = ``tokens`` in the given order.

    ``tokens``: distinct non-empty strings, neither equal to ``pad`` nor ``unk``.
    Use :meth:`build` to make one from token counts.
    """

    PAD_ID = 0
    UNK_ID = 1

    def __init__(self, tokens, unk="<unk>", pad="<pad>"):
        if not isinstance(unk, str) or not isinstance(pad, str) or not unk or not pad or unk == pad:
            raise ValueError(f"Vocab: unk and pad must be two different non-empty strings, got {unk!r}, {pad!r}")
        self.pad, self.unk = pad, unk
        self._tokens = [pad, unk]
        self._index = {pad: self.PAD_ID, unk: self.UNK_ID}
        self._char_table = None              # code point -> id, built by char_ids
        for token in tokens:
            if not isinstance(token, str) or not token:
                raise ValueError(f"Vocab: tokens must be non-empty strings, got {token!r}")
            if token in self._index:
                raise ValueError(f"Vocab: token {token!r} is given twice (or equals pad/unk)")
            self._index[token] = len(self._tokens)
            self._tokens.append(token)

    @classmethod
    def build(cls, counts, min_freq=1, max_size=None, unk="<unk>", pad="<pad>"):
        """A vocabulary of the tokens counted in ``counts``.

        ``counts``: a mapping token → count (e.g. ``collections.Counter``) or an
        iterable of tokens, which is counted. Tokens seen fewer than ``min_freq``
        times are left out; the rest are ordered by count (descending), ties by
        the token's code points, so the result does not depend on input order.
        ``max_size`` caps the size including ``pad`` and ``unk``.
        """
        if not isinstance(counts, Mapping):
            counts = collections.Counter(counts)
        if min_freq < 1:
            raise ValueError(f"Vocab.build: min_freq must be >= 1, got {min_freq}")
        kept = sorted((t for t, c in counts.items() if c >= min_freq and t not in (pad, unk)),
                      key=lambda t: (-counts[t], t))
        if max_size is not None:
            if max_size < 2:
                raise ValueError(f"Vocab.build: max_size must leave room for pad and unk, got {max_size}")
            kept = kept[:max_size - 2]
        return cls(kept, unk=unk, pad=pad)

    def __len__(self):
        return len(self._tokens)

    def __contains__(self, token):
        return token in self._index

    def __iter__(self):
        return iter(self._tokens)

    def __eq__(self, other):
        return isinstance(other, Vocab) and self._tokens == other._tokens

    def __repr__(self):
        return f"Vocab({len(self)} tokens, pad={self.pad!r}, unk={self.unk!r})"

    @property
    def tokens(self):
        """All tokens in id order, ``pad`` and ``unk`` first (a new list)."""
        return list(self._tokens)

    def id_of(self, token):
        """The id of ``token`` (``UNK_ID`` when it is not in the vocabulary)."""
        return self._index.get(token, self.UNK_ID)

    def encode(self, tokens):
        """Ids of ``tokens`` (a sequence of str, or a str read as its characters): int64 array (n,).

        Unknown tokens get ``UNK_ID``.
        """
        if isinstance(tokens, str):
            return self.char_ids(code_points(tokens))
        tokens = list(tokens)
        bad = next((t for t in tokens if not isinstance(t, str)), None)
        if bad is not None:
            raise TypeError(f"Vocab.encode: tokens must be strings, got {type(bad).__name__} {bad!r}")
        return numpy.fromiter(map(self._index.get, tokens, itertools.repeat(self.UNK_ID)),
                              dtype=numpy.int64, count=len(tokens))

    def char_ids(self, codes):
        """Ids of the characters with code points ``codes`` (n,) int64 (:func:`~nlp.data.text.code_points`):
        int64 array (n,), ``UNK_ID`` for characters that are not tokens.

        A table indexed by code point (one int32 per code point up to the largest one-character token, built
        on the first call) makes this one NumPy lookup.
        """
        if self._char_table is None:
            chars = [(ord(token), i) for i, token in enumerate(self._tokens) if len(token) == 1]
            points = numpy.array([point for point, _ in chars], dtype=numpy.int64)
            self._char_table = numpy.full(int(points.max(initial=-1)) + 2, self.UNK_ID, dtype=numpy.int32)
            self._char_table[points] = [i for _, i in chars]          # the last entry stays UNK_ID
        table = self._char_table
        known = (codes >= 0) & (codes < len(table))
        return table[numpy.where(known, codes, len(table) - 1)].astype(numpy.int64)

    def decode(self, ids):
        """Tokens of ``ids`` (a sequence or integer array (n,)): a list of n str."""
        ids = numpy.asarray(ids).reshape(-1)
        if ids.size and (ids.dtype.kind not in "iu" or ids.min() < 0 or ids.max() >= len(self)):
            raise IndexError(f"Vocab.decode: ids must be integers in [0, {len(self)}), "
                             f"got {ids.dtype} values in [{ids.min()}, {ids.max()}]")
        return [self._tokens[i] for i in ids.tolist()]

    def save(self, path):
        """Write the vocabulary to ``path`` as UTF-8 text, one token per line in id order (atomically)."""
        write_lines(path, self._tokens)

    @classmethod
    def load(cls, path):
        """The vocabulary saved at ``path`` by :meth:`save` (line 1 pad, line 2 unk, then tokens)."""
        lines = read_utf8_lines(path)
        if len(lines) < 2:
            raise TextFormatError(f"{path}: a vocabulary file needs at least 2 lines (pad and unk), "
                                  f"found {len(lines)}")
        check_unique_lines(path, lines, "token")
        return cls(lines[2:], unk=lines[1], pad=lines[0])


class TagSet:
    """Character labels in LAC's scheme ↔ int64 ids: ``X-B`` (first char of an X word), ``X-I`` (the rest), ``O``.

    ``names``: the distinct label names in id order. Derived tables, all
    indexed by label id: :attr:`type_ids` (int64, index into
    :attr:`type_names`: the word types in order of first appearance, then
    ``"O"`` if present) and :attr:`begins` (bool, True for ``X-B``).
    """

    OUTSIDE = "O"

    def __init__(self, names):
        names = list(names)
        if not names:
            raise ValueError("TagSet: needs at least one label name")
        self.names = names
        self._index = {}
        types, type_ids, begins = {}, [], []
        for i, name in enumerate(names):
            if not isinstance(name, str):
                raise ValueError(f"TagSet: label names must be strings, got {name!r}")
            if name in self._index:
                raise ValueError(f"TagSet: label {name!r} is given twice (ids {self._index[name]} and {i})")
            self._index[name] = i
            kind, word_type = _parse_label(name)
            if kind is None:
                raise ValueError(f"TagSet: label {name!r} is neither 'O' nor of the form 'X-B' / 'X-I'")
            type_ids.append(types.setdefault(word_type, len(types)) if word_type != self.OUTSIDE else -1)
            begins.append(kind == "B")
        self.pos_tags = list(types)
        self.type_names = self.pos_tags + ([self.OUTSIDE] if self.OUTSIDE in self._index else [])
        self.type_ids = numpy.asarray([t if t >= 0 else len(self.pos_tags) for t in type_ids], dtype=numpy.int64)
        self.begins = numpy.asarray(begins, dtype=bool)

    @classmethod
    def from_pos(cls, pos_tags, outside=True):
        """The tag set of word types ``pos_tags``: sorted, each as ``X-B`` then ``X-I``; ``O`` last when ``outside``."""
        tags = sorted(set(pos_tags))
        return cls([f"{t}-{k}" for t in tags for k in "BI"] + ([cls.OUTSIDE] if outside else []))

    def __len__(self):
        return len(self.names)

    def __eq__(self, other):
        return isinstance(other, TagSet) and self.names == other.names

    def __repr__(self):
        return f"TagSet({len(self)} labels, {len(self.pos_tags)} word types)"

    def id_of(self, name):
        """The id of label ``name``; an unknown name raises KeyError listing a few known ones."""
        try:
            return self._index[name]
        except KeyError:
            raise KeyError(f"TagSet: unknown label {name!r} (labels look like {', '.join(self.names[:4])})") from None

    def encode(self, labels):
        """Ids of the label names ``labels`` (a sequence of str): int64 array (n,); unknown names raise KeyError."""
        return numpy.fromiter(map(self.id_of, labels), dtype=numpy.int64, count=len(labels))

    def decode(self, ids):
        """Label names of ``ids`` (a sequence or integer array (n,)): a list of n str."""
        ids = numpy.asarray(ids).reshape(-1)
        if ids.size and (ids.dtype.kind not in "iu" or ids.min() < 0 or ids.max() >= len(self)):
            raise IndexError(f"TagSet.decode: ids must be integers in [0, {len(self)}), "
                             f"got {ids.dtype} values in [{ids.min()}, {ids.max()}]")
        return [self.names[i] for i in ids.tolist()]

    def save(self, path):
        """Write the label names to ``path`` as UTF-8 text, one per line in id order (atomically)."""
        write_lines(path, self.names)

    @classmethod
    def load(cls, path):
        """The tag set saved at ``path`` by :meth:`save`; a bad line raises TextFormatError naming it."""
        lines = read_utf8_lines(path)
        if not lines:
            raise TextFormatError(f"{path}: a tag set file needs at least one label, found none")
        seen = {}
        for number, name in enumerate(lines, start=1):
            if _parse_label(name)[0] is None:
                raise TextFormatError(f"{path}:{number}: {name!r} is neither 'O' nor a label 'X-B' / 'X-I'")
            if name in seen:
                raise TextFormatError(f"{path}:{number}: label {name!r} repeats line {seen[name]}")
            seen[name] = number
        return cls(lines)


def _parse_label(name):
    """(kind, word type) of a label name: ``("B"|"I", X)`` for ``X-B``/``X-I``, ``("O", "O")``, or (None, None)."""
    if name == TagSet.OUTSIDE:
        return "O", TagSet.OUTSIDE
    word_type, sep, kind = name.rpartition("-")
    if sep and word_type and kind in ("B", "I") and word_type.strip() == word_type and "\n" not in word_type:
        return kind, word_type
    return None, None


def write_lines(path, lines):
    """Write ``lines`` (str without line breaks) to ``path`` as UTF-8, one per line, via a temporary file."""
    bad = next((line for line in lines if any(b in line for b in _LINE_BREAKS)), None)
    if bad is not None:
        raise ValueError(f"cannot write {bad!r} to {path}: it holds a line break")
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    with atomic_write(path, newline="\n") as f:
        f.write("\n".join(lines) + "\n")
