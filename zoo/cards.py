"""The one card loader: a model card (:mod:`zoo.catalog`) -> its config, its checked weights, its task.

A card is of one kind (:data:`zoo.catalog.CARD_KINDS`):

- ``trained``: ``config`` + ``weights``, built by :func:`framework.engine.runner.build_task`
  and loaded with :func:`framework.engine.runner.load_weights`;
- ``compressed``: ``base_config`` (the model it was made from) + compressed
  ``weights``, loaded with :func:`framework.slim.load_compressed` (pruned layers
  resized, int8 layers converted);
- ``official``: ``loader``, a key of :data:`LOADERS` (a fixed table in this code,
  so no file chooses code to run), which builds the task from files fetched
  elsewhere (Baidu's official LAC).

Every file a card lists with a sha256 (weights, a vocabulary, a feature
backbone) is checked before it is read (:func:`checked_weights`). ``zoo.load``,
``zoo.export``, ``oar compress`` and ``oar reproduce`` all resolve cards here.
"""
import dataclasses
import os

from framework.config import load_config
from framework.engine import runner
from framework.fetch import FetchError, sha256_of

from .catalog import ROOT, CatalogError, card_kind
from .registration import register_everything

__all__ = ["WeightsError", "BuiltCard", "LOADERS", "build_card", "card_config", "weighted_task", "checked_weights",
           "card_overrides", "resolve_repo_files"]


class WeightsError(FetchError):
    """Shipped weights are missing or do not match their card's sha256."""


def _checked_file(entry, relative, sha256):
    path = os.path.join(ROOT, relative or "")
    if not relative or not os.path.isfile(path):
        raise WeightsError(f"model {entry['name']!r}: file {path} is missing; "
                           f"recreate it with `oar reproduce {entry['name']}`")
    if sha256 and sha256_of(path) != sha256:
        raise WeightsError(f"model {entry['name']!r}: {path} has sha256 {sha256_of(path)}, the card says "
                           f"{sha256}; refusing to load it")
    return path


def checked_weights(entry):
    """The path of the card's weights file; it and every companion file the card lists as ``<name>`` with a
    ``<name>_sha256`` (a vocabulary, a feature backbone) must exist and match."""
    weights = entry.get("weights") or {}
    for key, value in weights.items():
        if key.endswith("_sha256") and key[:-len("_sha256")] in weights:
            _checked_file(entry, weights[key[:-len("_sha256")]], value)
    return _checked_file(entry, weights.get("path"), weights.get("sha256"))


def _repo_path(value):
    """``value`` made absolute when it is a relative path of an existing repository file, else unchanged."""
    if isinstance(value, str) and not os.path.isabs(value) and os.path.exists(os.path.join(ROOT, value)):
        return os.path.join(ROOT, value)
    return value


def resolve_repo_files(section):
    """Make the relative ``*_file`` paths (one path or a list) of a config section that exist under the
    repository absolute.

    Shipped configs name shipped files relative to the repository root (e.g.
    ``task.vocab_file: zoo/weights/lac_pku.vocab.txt``), so ``load`` works from any directory.
    """
    for key, value in section.items():
        if key.endswith("_file"):
            section[key] = [_repo_path(v) for v in value] if isinstance(value, list) else _repo_path(value)


def card_overrides(entry):
    """The card's ``overrides`` (``key=value`` config overrides), a value naming a repository file made absolute."""
    resolved = []
    for item in entry.get("overrides", []):
        key, _, value = item.partition("=")
        resolved.append(f"{key}={_repo_path(value)}" if value else item)
    return resolved


def card_config(entry, overrides=()):
    """The resolved config of a trained or compressed card: its ``config`` (``base_config``) with the card's
    overrides, then ``overrides``; the task's repository files made absolute."""
    kind = card_kind(entry)
    if kind == "official":
        raise CatalogError(f"model {entry['name']!r} is built by the loader {entry['loader']!r}, not from a config")
    cfg = load_config(os.path.join(ROOT, entry["config" if kind == "trained" else "base_config"]),
                      card_overrides(entry) + list(overrides))
    resolve_repo_files(cfg.get("task") or {})
    return cfg


def weighted_task(cfg, weights, kind="trained"):
    """The eager task of ``cfg`` (eval mode) with ``weights`` loaded: plain weights for a ``trained`` model,
    a compressed file (:func:`framework.slim.save_compressed`) for a ``compressed`` one."""
    register_everything()
    resolve_repo_files(cfg.get("task") or {})
    task = runner.build_task(cfg)
    if kind == "compressed":
        from framework.slim import load_compressed
        load_compressed(task.model, weights, cfg.get("model"))
    else:
        runner.load_weights(task.model, weights, task=task, cfg=cfg)
    task.model.eval()
    return task


def _official_lac(entry):
    """Baidu's official LAC, built from its fetched files (the ``official_lac`` loader)."""
    from nlp.lac.task import load_official_task
    return load_official_task()


# What an ``official`` card's ``loader`` may name: a fixed table, so that no file can choose code to import or run.
LOADERS = {"official_lac": _official_lac}


@dataclasses.dataclass
class BuiltCard:
    """A card's eager task (eval mode), with the ``cfg`` and ``weights`` path it was built from (None for an
    ``official`` card) and its ``kind``."""
    task: object
    cfg: dict
    weights: str
    kind: str


def build_card(entry):
    """The :class:`BuiltCard` of a card: from its config and checked weights, or by its official loader."""
    register_everything()
    kind = card_kind(entry)
    if kind == "official":
        if entry["loader"] not in LOADERS:
            raise CatalogError(f"model {entry['name']!r}: unknown loader {entry['loader']!r} (the zoo's loaders: "
                               f"{', '.join(LOADERS)})")
        task = LOADERS[entry["loader"]](entry)
        task.model.eval()
        return BuiltCard(task, None, None, kind)
    cfg, weights = card_config(entry), checked_weights(entry)
    return BuiltCard(weighted_task(cfg, weights, kind), cfg, weights, kind)
