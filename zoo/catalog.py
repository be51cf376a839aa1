"""The zoo catalog: one model card per named model, read from ``zoo/catalog.yaml``.

A card says what a model is and where every number came from:

- ``name``, ``task`` (the task it serves), ``description``;
- its kind (:data:`CARD_KINDS`, :func:`card_kind`), told by the one key it has of
  ``config``, ``base_config`` and ``loader``: a **trained** card has ``config`` (a
  YAML config under ``configs/``) plus ``weights`` (``{path, sha256}`` of a file
  shipped in the repo); a **compressed** card ``base_config`` (the config of the
  model it was made from), ``compressed_from`` and compressed ``weights``; an
  **official** card ``loader``, the name of one of the zoo's loaders, a fixed
  table in its code (:data:`zoo.cards.LOADERS`: ``official_lac`` builds Baidu's
  official LAC from its fetched files) — a card, like an export manifest, names
  a loader but never a module (:mod:`zoo.cards` builds every kind);
- ``overrides`` (optional, with ``config``): ``key=value`` config overrides
  applied when the model is loaded, e.g. ``task.vocab=zoo/weights/…`` (a
  value naming a repository file is read from the repository root);
- ``source``: how the weights were made (the ``oar reproduce`` command, or the
  official release they were converted from);
- ``metrics``: ``{split: ..., name: value, ...}`` measured by ``reproduce``, and ``date``.
"""
import difflib
import os

import yaml
from framework.errors import UserError
from framework.serialization import atomic_write
from framework.yamlload import BoundedLoader

__all__ = ["CatalogError", "ROOT", "CATALOG_PATH", "CARD_KINDS", "card_kind", "cards", "card", "write_card"]

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CATALOG_PATH = os.path.join(ROOT, "zoo", "catalog.yaml")
# card kind -> the key that marks it and the keys such a card needs besides
CARD_KINDS = {"trained": ("config", ("weights",)), "compressed": ("base_config", ("weights", "compressed_from")),
              "official": ("loader", ())}


class CatalogError(UserError, KeyError):
    """An unknown model name (the message lists close names) or a malformed card."""

    def __str__(self):
        return str(self.args[0]) if self.args else ""


# libyaml's parser where PyYAML was built with it (its wheels are): the catalog is read on every load, 10x faster
_LOADER = BoundedLoader


def _entries(path):
    with open(path, encoding="utf-8") as f:
        return yaml.load(f, Loader=_LOADER) or []


def cards(path=CATALOG_PATH):
    """All cards, in catalog order, as a dict name -> card (plain dicts)."""
    entries = _entries(path)
    table = {}
    for i, entry in enumerate(entries):
        if not isinstance(entry, dict) or "name" not in entry or "task" not in entry:
            raise CatalogError(f"{path}: entry {i} needs at least 'name' and 'task'")
        kind = card_kind(entry, path)
        missing = [key for key in CARD_KINDS[kind][1] if key not in entry]
        if missing:
            raise CatalogError(f"{path}: {kind} card {entry['name']!r} needs {', '.join(map(repr, missing))}")
        if not isinstance(entry[CARD_KINDS[kind][0]], str):
            raise CatalogError(f"{path}: card {entry['name']!r}: {CARD_KINDS[kind][0]!r} must be a string")
        table[entry["name"]] = entry
    return table


def card_kind(entry, path=CATALOG_PATH):
    """``"trained"``, ``"compressed"`` or ``"official"``: the kind of a card, from the one marking key it
    has (``config``, ``base_config``, ``loader``); a card with none or several is refused."""
    kinds = [kind for kind, (key, _) in CARD_KINDS.items() if key in entry]
    if len(kinds) != 1:
        marks = " or ".join(repr(key) for key, _ in CARD_KINDS.values())
        raise CatalogError(f"{path}: card {entry.get('name')!r} needs exactly one of {marks}")
    return kinds[0]


def card(name, path=CATALOG_PATH):
    """The card of ``name``; an unknown name lists the close ones."""
    table = cards(path)
    if name in table:
        return table[name]
    close = difflib.get_close_matches(name, table, n=3, cutoff=0.5)
    hint = f"; did you mean {', '.join(close)}?" if close else ""
    raise CatalogError(f"unknown model {name!r}{hint} (known: {', '.join(table)})")


def write_card(updated, path=CATALOG_PATH):
    """Replace the card of the same name in the catalog file (atomic write)."""
    entries = _entries(path)
    names = [e["name"] for e in entries]
    if updated["name"] in names:
        entries[names.index(updated["name"])] = updated
    else:
        entries.append(updated)
    with atomic_write(path) as f:
        f.write("# The zoo's model cards (see zoo/catalog.py). `oar reproduce NAME` rewrites metrics, weights and date.\n")
        yaml.safe_dump(entries, f, sort_keys=False, allow_unicode=True, width=100)

