"""Text-matching pair and triple files: :class:`MatchPair`, :class:`Triple`, reading and writing them.

**Files** are UTF-8 TSV without a header: pairs ``text_a<TAB>text_b<TAB>label``
with an optional fourth column ``neg_type`` (``pos`` for positives), triples
``query<TAB>pos<TAB>neg``. :func:`read_pair_file` also takes a user's own pairs
and skips a header line ``text_a<TAB>text_b<TAB>label``; a malformed line raises
:class:`~nlp.data.text.TextFormatError` with its line number.
"""
import collections
import os

from framework.errors import MissingFileError
from framework.io.remote import is_url
from framework.serialization import atomic_write

from nlp.data.text import TextFormatError, read_utf8_lines

__all__ = ["POSITIVE", "NEG_TYPES", "MatchPair", "Triple", "read_pair_file", "read_triple_file", "write_pair_file",
           "write_triple_file", "triples_from_pairs"]

POSITIVE = "pos"                                      # the neg_type column of a positive pair
NEG_TYPES = ("swap", "exchange", "ending", "overlap")  # the builder's kinds of negative pair
MatchPair = collections.namedtuple("MatchPair", ["text_a", "text_b", "label", "neg_type"])
MatchPair.__doc__ = """A matching pair: two str, ``label`` 1 (same meaning) or 0, and ``neg_type`` ("pos",
one of :data:`NEG_TYPES`, or "" when a user's file does not say)."""
Triple = collections.namedtuple("Triple", ["query", "pos", "neg"])
Triple.__doc__ = """A pairwise training triple: ``pos`` matches ``query`` and ``neg`` does not (three str)."""


def _fields(path, number, line, count):
    fields = line.split("\t")
    if len(fields) not in count:
        raise TextFormatError(f"{path}:{number}: expected {' or '.join(map(str, count))} tab-separated fields, "
                              f"found {len(fields)} in {line[:60]!r}")
    return fields


def read_pair_file(path):
    """The pairs of a TSV file ``text_a<TAB>text_b<TAB>label[<TAB>neg_type]``: a list of :class:`MatchPair`.

    ``label`` must be 0 or 1; blank lines and a first line
    ``text_a<TAB>text_b<TAB>label`` are skipped; ``neg_type`` is "" when absent.
    A malformed line raises TextFormatError naming the file and line.
    """
    if not is_url(path) and not os.path.isfile(path):
        raise MissingFileError(f"pair file not found: {path}")
    pairs = []
    for number, line in enumerate(read_utf8_lines(path), start=1):
        if not line.strip() or (number == 1 and line.split("\t")[:3] == ["text_a", "text_b", "label"]):
            continue
        fields = _fields(path, number, line, (3, 4))
        if fields[2].strip() not in ("0", "1"):
            raise TextFormatError(f"{path}:{number}: the label (third field) must be 0 or 1, got {fields[2]!r}")
        pairs.append(MatchPair(fields[0], fields[1], int(fields[2]), fields[3].strip() if len(fields) == 4 else ""))
    return pairs


def read_triple_file(path):
    """The triples of a TSV file ``query<TAB>pos<TAB>neg``: a list of :class:`Triple` (blank lines skipped)."""
    if not is_url(path) and not os.path.isfile(path):
        raise MissingFileError(f"triple file not found: {path}")
    return [Triple(*_fields(path, number, line, (3,)))
            for number, line in enumerate(read_utf8_lines(path), start=1) if line.strip()]


def _write_rows(path, rows):
    bad = next((v for row in rows for v in row if isinstance(v, str) and ("\t" in v or "\n" in v)), None)
    if bad is not None:
        raise ValueError(f"cannot write {bad[:40]!r} to {path}: a text holds a tab or line break")
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    with atomic_write(path, newline="\n") as f:
        f.writelines("\t".join(map(str, row)) + "\n" for row in rows)


def write_pair_file(path, pairs):
    """Write :class:`MatchPair` rows to ``path`` as ``text_a<TAB>text_b<TAB>label<TAB>neg_type`` (atomically)."""
    _write_rows(path, pairs)


def write_triple_file(path, triples):
    """Write :class:`Triple` rows to ``path`` as ``query<TAB>pos<TAB>neg`` (atomically)."""
    _write_rows(path, triples)


def triples_from_pairs(pairs, max_per_query=4):
    """Triples from labelled pairs: for each ``text_a`` with positives P and negatives N, up to
    ``max_per_query`` of the combinations (P[i], N[j]), those with small max(i, j) first (file order)."""
    groups = collections.defaultdict(lambda: ([], []))
    for pair in pairs:
        groups[pair.text_a][1 - pair.label].append(pair.text_b)
    triples = []
    for query, (positives, negatives) in groups.items():
        combos = sorted(((i, j) for i in range(len(positives)) for j in range(len(negatives))),
                        key=lambda ij: max(ij))[:max_per_query]
        triples.extend(Triple(query, positives[i], negatives[j]) for i, j in combos)
    return triples
