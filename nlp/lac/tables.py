"""Readers for the text tables of the official LAC model folder (``conf/*.dic``), with LAC's own semantics.

LAC opens each table with ``io.open(path, encoding="utf8")`` (universal
newlines) and splits key-value lines with ``line.strip("\\n").split("\\t")``;
lines with other than two fields are skipped and a later line wins over an
earlier one with the same key (``reader.load_kv_dict``). These readers do the
same, except that invalid UTF-8 raises :class:`~nlp.data.text.TextFormatError`
naming the file and line instead of a bare ``UnicodeDecodeError``.
"""
import io

from nlp.data.text import TextFormatError, read_utf8

__all__ = ["TextFormatError", "read_dict_lines", "read_kv_pairs", "load_kv_dict"]


def read_dict_lines(path):
    """``(line number, line)`` pairs of the UTF-8 file ``path``, line ends removed (universal newlines)."""
    text = read_utf8(path, keep_bom=True)                 # LAC reads a byte-order mark as a character
    return [(number, line[:-1] if line.endswith("\n") else line)
            for number, line in enumerate(io.StringIO(text, newline=None), start=1)]


def read_kv_pairs(path):
    """``(line number, first, second)`` of each line of a tab-separated table with exactly 2 fields, in file order."""
    pairs = []
    for number, line in read_dict_lines(path):
        fields = line.split("\t")
        if len(fields) == 2:
            pairs.append((number, fields[0], fields[1]))
    return pairs


def load_kv_dict(path, reverse=False, value_type=str):
    """LAC's ``load_kv_dict``: ``{key: value_type(value)}`` from ``key\\tvalue`` lines (``reverse``: ``value\\tkey``).

    A value that ``value_type`` cannot convert raises TextFormatError naming the file and line.
    """
    result = {}
    for number, first, second in read_kv_pairs(path):
        key, value = (second, first) if reverse else (first, second)
        try:
            result[key] = value_type(value)
        except ValueError:
            raise TextFormatError(f"{path}:{number}: value {value!r} of key {key!r} is not a valid "
                                  f"{value_type.__name__}") from None
    return result
