"""User dictionaries for lexical analysis, with the semantics of the official LAC package (``LAC/custom.py``).

Each dictionary line is a phrase written as one or more items separated by
whitespace (or by ``sep``); an item is ``text`` or ``text/TAG``. The phrase is
the concatenation of the items' texts:

- ``春天/SEASON``: 春天 comes out as one word tagged ``SEASON``;
- ``花开``: 花开 comes out as one word and keeps the model's tag;
- ``花/n 开/v``: 花开 comes out as the two words 花/n and 开/v.

The dictionary works on the model's output: after the per-character tags are
known, phrases are found in the raw text by LAC's left-to-right longest match
(for each start position, each dictionary phrase starting there that ends
further right than the last match is taken, so matches may overlap and are
applied in order), and their characters' tags are overridden: an item with a
tag gives all its characters ``TAG-I``, an item without one turns each
character's tag into its ``-I`` form; then the phrase's first character and
the character after each item become ``-B`` forms (starting a new word).

As in LAC, a one-character phrase without a tag is ignored, a blank line is
skipped, an item whose ``/`` is its first character (``/n``) is plain text, and
a later line for the same phrase replaces the earlier one. An item that ends
in ``/`` (a tag left empty) is an error naming the file and line.
"""
import os

from .tables import TextFormatError, read_dict_lines

__all__ = ["Customization", "load_customization", "CustomizationError"]


class CustomizationError(TextFormatError):
    """A user dictionary line is malformed; the message names the file (or list) and line."""


class Customization:
    """A user dictionary: phrases with optional per-item tags, applied to per-character tags.

    ``add_word(line, sep=None, where=None)`` adds one line; ``apply(text, char_tags)``
    overrides tags in place. ``len()`` is the number of phrases.
    """

    def __init__(self):
        self._items = {}          # phrase -> (tags per item, end offset of each item in the phrase)
        self._prefixes = {}       # phrase -> its length; proper prefix -> None (LAC's TriedTree)

    def __len__(self):
        return len(self._items)

    def __contains__(self, phrase):
        return phrase in self._items

    def add_word(self, line, sep=None, where="<word>"):
        """Add one dictionary line (str). ``where`` names it in errors (``"file:line"``).

        Returns the phrase added, or None when the line adds nothing (blank, or
        one character without a tag).
        """
        if not isinstance(line, str):
            raise TypeError(f"{where}: a dictionary line must be a str, got {type(line).__name__}")
        if sep is not None and not isinstance(sep, str):
            raise TypeError(f"add_word: sep must be a str or None, got {type(sep).__name__}")
        items = line.strip().split(sep)
        if not items:
            return None
        phrase, tags, offsets = "", [], []
        for item in items:
            slash = item.rfind("/")
            if slash < 1:
                phrase += item
                tags.append("")
            else:
                if slash == len(item) - 1:
                    raise CustomizationError(f"{where}: item {item!r} has an empty tag after '/' "
                                             f"(write {item[:-1]!r} to keep the model's tag)")
                phrase += item[:slash]
                tags.append(item[slash + 1:])
            offsets.append(len(phrase))
        if len(phrase) < 2 and tags[0] == "":
            return None
        self._items[phrase] = (tags, offsets)
        self._prefixes[phrase] = len(phrase)
        for end in range(1, len(phrase)):
            self._prefixes.setdefault(phrase[:end], None)
        return phrase

    def matches(self, text):
        """``[(begin, end), ...]``: the phrases found in ``text`` (str), in LAC's order (module docstring)."""
        found, prefixes, n = [], self._prefixes, len(text)
        for begin in range(n):
            for end in range(begin + 1, n + 1):
                length = prefixes.get(text[begin:end], -1)
                if length == -1:
                    break
                if length and (not found or end > found[-1][1]):
                    found.append((begin, end))
        return found

    def apply(self, text, char_tags):
        """Override ``char_tags`` (a list of one IOB tag per character of ``text``, e.g. ``"n-B"``) in place.

        Returns ``char_tags``.
        """
        if len(char_tags) != len(text):
            raise ValueError(f"Customization.apply: {len(char_tags)} tags for a text of {len(text)} characters")
        for begin, end in self.matches(text):
            tags, offsets = self._items[text[begin:end]]
            index = begin
            for tag, offset in zip(tags, offsets):
                while index < begin + offset:
                    char_tags[index] = tag + "-I" if tag else char_tags[index][:-1] + "I"
                    index += 1
            char_tags[begin] = char_tags[begin][:-1] + "B"
            for offset in offsets:
                if begin + offset < len(char_tags):
                    char_tags[begin + offset] = char_tags[begin + offset][:-1] + "B"
        return char_tags


def load_customization(source, sep=None):
    """A :class:`Customization` from a UTF-8 file (path) or a list of lines (str).

    ``sep`` separates the items of a line (default: any whitespace). A
    malformed line raises :class:`CustomizationError` naming the file and line;
    invalid UTF-8 in a file raises :class:`~nlp.data.text.TextFormatError`;
    a list entry that is not a str raises TypeError naming its index.
    """
    custom = Customization()
    if isinstance(source, (str, os.PathLike)):
        path = os.fspath(source)
        for number, line in read_dict_lines(path):
            custom.add_word(line, sep, where=f"{path}:{number}")
    elif isinstance(source, (list, tuple)):
        for index, line in enumerate(source):
            if not isinstance(line, str):
                raise TypeError(f"load_customization: entry {index} is a {type(line).__name__}, expected a str")
            custom.add_word(line, sep, where=f"<list>[{index}]")
    else:
        raise TypeError(f"load_customization: expected a path or a list of lines, got {type(source).__name__}")
    return custom
