"""The zoo catalog: one :class:`~zoo.card.Card` per named model, read from ``zoo/catalog.yaml``.

An entry says what a model is and where every number came from: ``name``,
``task`` (the task it serves), ``description``; its kind's marking key
(``config``, ``base_config`` or ``loader``, :data:`zoo.card.CARD_KINDS`) and
``weights`` (``{path, sha256}`` of a file shipped in the repo, with companion
files such as ``vocab`` and their ``vocab_sha256``); ``overrides`` (``key=value``
config overrides applied when the model is loaded; a value naming a repository
file is read from the repository root); ``source`` (how the weights were made);
``reproduce`` (``{procedure: NAME, …}``, a key of :data:`zoo.reproduce.PROCEDURES`);
``metrics`` (``{split: ..., name: value, ...}`` measured by ``reproduce``) and ``date``.
Paths are relative to the repository root (:data:`ROOT`, the cards' ``folder``).
"""
import difflib
import os

import yaml
from framework.serialization import atomic_write
from framework.yamlload import BoundedLoader

from .card import Card, CardError

__all__ = ["CatalogError", "ROOT", "CATALOG_PATH", "cards", "card", "write_card"]

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CATALOG_PATH = os.path.join(ROOT, "zoo", "catalog.yaml")
CatalogError = CardError

# libyaml's parser where PyYAML was built with it (its wheels are): the catalog is read on every load, 10x faster
_LOADER = BoundedLoader


def _entries(path):
    with open(path, encoding="utf-8") as f:
        entries = yaml.load(f, Loader=_LOADER) or []
    if not isinstance(entries, list):
        raise CardError(f"{path}: expected a list of model cards")
    return entries


def cards(path=CATALOG_PATH):
    """All cards, in catalog order, as a dict name -> :class:`~zoo.card.Card`."""
    table = {}
    for i, entry in enumerate(_entries(path)):
        built = Card.from_mapping(entry, ROOT, f"{path}: entry {i}")
        table[built.name] = built
    return table


def card(name, path=CATALOG_PATH):
    """The card of ``name``; an unknown name lists the close ones."""
    table = cards(path)
    if name in table:
        return table[name]
    close = difflib.get_close_matches(name, table, n=3, cutoff=0.5)
    hint = f"; did you mean {', '.join(close)}?" if close else ""
    raise CardError(f"unknown model {name!r}{hint} (known: {', '.join(table)})")


def write_card(updated, path=CATALOG_PATH):
    """Replace the card of the same name in the catalog file (or append it; atomic write)."""
    entries = _entries(path)
    names = [e.get("name") for e in entries]
    if updated.name in names:
        entries[names.index(updated.name)] = updated.to_mapping()
    else:
        entries.append(updated.to_mapping())
    with atomic_write(path) as f:
        f.write("# The zoo's model cards (see zoo/catalog.py). `oar reproduce NAME` rewrites metrics, weights and date.\n")
        yaml.safe_dump(entries, f, sort_keys=False, allow_unicode=True, width=100)
