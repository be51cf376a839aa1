"""Text helpers shared by the NLP corpora: UTF-8 line reading, full-width → half-width, cutting long sequences.

- :func:`read_utf8` / :func:`read_utf8_lines` read a text file strictly as UTF-8
  (as one str / as lines); a bad byte is a :class:`TextFormatError` naming the file and line.
- :func:`full_to_half` maps the full-width ASCII block (U+FF01–U+FF5E) to
  ASCII (U+0021–U+007E) and the ideographic space U+3000 to ``' '``: one
  character in, one character out, so positions never move;
  :func:`full_to_half_codes` does the same on the code points of
  :func:`code_points` (a whole batch of text at NumPy speed).
- :func:`split_points` / :func:`split_long` cut a long character sequence into
  chunks of at most ``max_len``, preferably right after sentence-ending
  punctuation, so that training never sees a sequence longer than configured.
"""
import numpy
from framework.errors import UserError
from framework.io.remote import read_bytes, safe_url

__all__ = ["TextFormatError", "read_utf8", "read_utf8_lines", "check_unique_lines", "full_to_half", "code_points",
           "full_to_half_codes", "SENTENCE_ENDS", "CLOSING_MARKS", "split_points", "split_long"]

SENTENCE_ENDS = "。！？；…!?;"            # a cut may follow these (full- and half-width forms)
CLOSING_MARKS = "”’」』）》】)]\"'"          # closing marks that stay with the sentence they end

_FULL_TO_HALF = {0xFF01 + i: 0x21 + i for i in range(0x5E)}
_FULL_TO_HALF[0x3000] = 0x20


class TextFormatError(UserError, ValueError):
    """A text file (corpus, vocabulary, tag set) is malformed; the message names the file and line."""


def read_utf8(path, keep_bom=False):
    """The text of the UTF-8 file ``path`` (str; a local path or a URL that fsspec reads, see
    :mod:`framework.io.remote`); a leading byte-order mark is dropped unless ``keep_bom``.

    Invalid UTF-8 raises :class:`TextFormatError` naming the file and line.
    """
    data = read_bytes(path)
    path = safe_url(path)
    try:
        return data.decode("utf-8" if keep_bom else "utf-8-sig")
    except UnicodeDecodeError as err:
        line = data.count(b"\n", 0, err.start) + 1
        raise TextFormatError(f"{path}:{line}: invalid UTF-8 (byte {data[err.start]:#04x} at offset "
                              f"{err.start}: {err.reason})") from None


def read_utf8_lines(path):
    """The lines of the UTF-8 text file ``path`` as a list of str, without their line ends.

    Lines are split on ``\\n``; a trailing ``\\r`` (Windows line end) and a
    leading byte-order mark are dropped; a final newline does not make an extra
    empty line. Invalid UTF-8 raises :class:`TextFormatError` naming the file and line.
    """
    text = read_utf8(path)
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    if "\r" not in text:
        return lines
    return [line[:-1] if line.endswith("\r") else line for line in lines]


def check_unique_lines(path, lines, item="word"):
    """Raise :class:`TextFormatError` naming ``path`` and the line when one of ``lines`` (one ``item`` each,
    as read from the file) is empty or repeats an earlier line; returns ``lines``."""
    if len(set(lines)) == len(lines) and all(lines):         # the common case, checked at C speed
        return lines
    seen = {}
    for number, line in enumerate(lines, start=1):
        if not line:
            raise TextFormatError(f"{path}:{number}: empty line (each line must hold one {item})")
        if line in seen:
            raise TextFormatError(f"{path}:{number}: {item} {line!r} repeats line {seen[line]}")
        seen[line] = number
    return lines


def full_to_half(text):
    """``text`` (str) with full-width ASCII forms and the ideographic space replaced by their ASCII forms.

    U+FF01–U+FF5E → U+0021–U+007E (``１２Ａ，`` → ``12A,``) and U+3000 → U+0020;
    every other character is kept. The result has the same length as ``text``.
    """
    if not isinstance(text, str):
        raise TypeError(f"full_to_half: expected a str, got {type(text).__name__}")
    return text.translate(_FULL_TO_HALF)


def code_points(chars):
    """Code points of a str (lone surrogates included) or of a sequence of one-character strings (-1 for an
    entry of another length), as an int64 array (n,)."""
    if isinstance(chars, str):
        return numpy.frombuffer(chars.encode("utf-32-le", "surrogatepass"), dtype=numpy.uint32).astype(numpy.int64)
    return numpy.fromiter((ord(c) if len(c) == 1 else -1 for c in chars), dtype=numpy.int64, count=len(chars))


def full_to_half_codes(codes):
    """:func:`full_to_half` on code points: ``codes`` (n,) int64 -> a new (n,) int64 array."""
    full = (codes >= 0xFF01) & (codes <= 0xFF5E)
    half = numpy.where(full, codes - (0xFF01 - 0x21), codes)
    half[codes == 0x3000] = 0x20
    return half


def _ends_after(codes):
    """Bool (n + 1,): entry ``e`` is True when a sentence ends right before position ``e``.

    A sentence end is a run of :data:`SENTENCE_ENDS` characters followed by
    closing marks (``。”`` ends after the quote; ``……`` after its last dot).
    """
    ends = numpy.isin(codes, [ord(c) for c in SENTENCE_ENDS])
    closing = numpy.isin(codes, [ord(c) for c in CLOSING_MARKS])
    tail = ends.copy()
    for _ in range(2):                                     # up to two closing marks after the punctuation
        tail[1:] |= closing[1:] & tail[:-1]
    after = numpy.zeros(len(codes) + 1, dtype=bool)
    after[1:-1] = tail[:-1] & ~tail[1:]                     # the end of a run, not inside it
    after[-1] = bool(tail[-1]) if len(codes) else False
    return after


def split_points(chars, max_len, allowed=None):
    """Cut ``chars`` into consecutive chunks of at most ``max_len``; returns ``[(start, end), ...]``.

    ``chars``: a str or a sequence of one-character strings, length n.
    ``allowed``: optional bool array (n,); ``allowed[i]`` says whether a cut
    before position ``i`` is acceptable (e.g. ``i`` starts a word). Each chunk
    ends at the last sentence end (see :data:`SENTENCE_ENDS`) within reach where
    a cut is allowed; failing that, at the last allowed position; failing that,
    after exactly ``max_len`` characters. ``max_len`` 0 or None: one chunk.
    The chunks cover ``0..n`` without gaps; an empty input gives ``[]``.
    """
    n = len(chars)
    if n == 0:
        return []
    if not max_len or n <= max_len:
        return [(0, n)]
    if max_len < 1:
        raise ValueError(f"split_points: max_len must be positive, got {max_len}")
    ok = numpy.ones(n + 1, dtype=bool)
    if allowed is not None:
        allowed = numpy.asarray(allowed, dtype=bool)
        if allowed.shape != (n,):
            raise ValueError(f"split_points: allowed has shape {allowed.shape}, expected ({n},)")
        ok[:n] = allowed
    ok[0] = False
    sentence_cuts = numpy.flatnonzero(_ends_after(code_points(chars)) & ok)
    other_cuts = numpy.flatnonzero(ok)
    bounds, start = [], 0
    while n - start > max_len:
        reach = start + max_len
        end = start + max_len
        for cuts in (sentence_cuts, other_cuts):
            i = numpy.searchsorted(cuts, reach, side="right") - 1
            if i >= 0 and cuts[i] > start:
                end = int(cuts[i])
                break
        bounds.append((start, end))
        start = end
    bounds.append((start, n))
    return bounds


def split_long(chars, max_len, allowed=None):
    """``chars`` cut into chunks of at most ``max_len`` (a list of slices of ``chars``); see :func:`split_points`."""
    return [chars[start:end] for start, end in split_points(chars, max_len, allowed)]
