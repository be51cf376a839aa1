"""The one model card type: what a model is, where its files lie and where its numbers came from.

A :class:`Card` is frozen and typed; every model oar loads has one, whatever it
came from (:func:`zoo.resolver.resolve`): a zoo name (a card of
``zoo/catalog.yaml``), the run directory of ``oar train`` or
``tools/finetune.py``, the output of ``oar compress``, or an export directory.
Its ``folder`` is where the relative paths it names (``config``, ``weights``,
``program``, ``onnx``) lie: the repository for a zoo card, the directory for the
others.

A card is of one kind (:data:`CARD_KINDS`), told in ``catalog.yaml`` by the one
key it has of ``config``, ``base_config`` and ``loader``:

- ``trained``: ``config`` + ``weights`` (a plain checkpoint);
- ``compressed``: ``config`` (the model it was made from; ``base_config`` in
  the catalog) + compressed ``weights`` (:func:`framework.slim.save_compressed`)
  and ``compressed_from``;
- ``official``: ``loader``, a key of the zoo's fixed table of loaders
  (:data:`zoo.build.LOADERS`), which builds the task from files fetched elsewhere.

A card names no code: its loader and its reproduce procedure (:class:`Recipe`)
are keys of tables in the zoo's code.
"""
import dataclasses
from types import MappingProxyType
from typing import Mapping, Optional

from framework.errors import UserError

__all__ = ["CardError", "CARD_KINDS", "ORIGINS", "Weights", "Recipe", "Card"]

# card kind -> the catalog key that marks it and the keys such a card needs besides
CARD_KINDS = {"trained": ("config", ("weights",)), "compressed": ("base_config", ("weights", "compressed_from")),
              "official": ("loader", ())}
# where a card came from: the catalog, a run directory (oar train / finetune / compress), an export directory
ORIGINS = ("zoo", "run", "export")


class CardError(UserError, KeyError):
    """An unknown model, a malformed card or a folder that holds no model; the message says what would do."""

    def __str__(self):
        return str(self.args[0]) if self.args else ""


def _frozen(mapping):
    return MappingProxyType(dict(mapping or {}))


def _typed(where, key, value, kind, nullable=True):
    if value is None and nullable:
        return None
    if not isinstance(value, kind):
        names = " or ".join(k.__name__ for k in (kind if isinstance(kind, tuple) else (kind,)))
        raise CardError(f"{where}: {key!r} must be {names}, got {value!r:.80}")
    return value


@dataclasses.dataclass(frozen=True)
class Weights:
    """A weights file and its companion files (a vocabulary, lexicons, a feature backbone), each a path
    relative to the card's folder with its sha256 where one is recorded (None: not checked)."""
    path: str
    sha256: Optional[str] = None
    companions: Mapping[str, str] = dataclasses.field(default_factory=dict)
    companion_sha256: Mapping[str, str] = dataclasses.field(default_factory=dict)

    def __post_init__(self):
        object.__setattr__(self, "companions", _frozen(self.companions))
        object.__setattr__(self, "companion_sha256", _frozen(self.companion_sha256))

    @classmethod
    def from_mapping(cls, value, where):
        """From the catalog's ``{path, sha256, <name>: path, <name>_sha256: digest, …}``."""
        _typed(where, "weights", value, dict, nullable=False)
        path = _typed(where, "weights.path", value.get("path"), str, nullable=False)
        companions = {k: _typed(where, f"weights.{k}", v, str) for k, v in value.items()
                      if k not in ("path", "sha256") and not k.endswith("_sha256")}
        digests = {k[:-len("_sha256")]: _typed(where, f"weights.{k}", v, str) for k, v in value.items()
                   if k.endswith("_sha256") and k != "sha256"}
        return cls(path, _typed(where, "weights.sha256", value.get("sha256"), str), companions, digests)

    def replace(self, **changes):
        """A copy with ``changes`` (:func:`dataclasses.replace`)."""
        return dataclasses.replace(self, **changes)

    def to_mapping(self):
        """The catalog's form (:meth:`from_mapping`)."""
        out = {"path": self.path}
        for name, path in self.companions.items():
            out[name] = path
        if self.sha256:
            out["sha256"] = self.sha256
        out.update({f"{name}_sha256": digest for name, digest in self.companion_sha256.items()})
        return out


@dataclasses.dataclass(frozen=True)
class Recipe:
    """How ``oar reproduce`` remakes a card: ``procedure``, a key of :data:`zoo.reproduce.PROCEDURES`, and
    its options (``overrides`` of the config, the ``split`` it measures on, the ``models`` one run trains,
    ``label_cleaning`` settings, ``nproc``: the data-parallel processes the training runs on, as ``oar train
    --nproc``)."""
    procedure: str
    overrides: tuple = ()
    split: str = "test"
    models: tuple = ()
    label_cleaning: Optional[Mapping] = None
    nproc: int = 1

    @classmethod
    def from_mapping(cls, value, where):
        """From the catalog's ``reproduce: {procedure, overrides, split, models, label_cleaning, nproc}``."""
        _typed(where, "reproduce", value, dict, nullable=False)
        unknown = sorted(set(value) - {f.name for f in dataclasses.fields(cls)})
        if unknown:
            raise CardError(f"{where}: unknown reproduce keys {', '.join(unknown)} (known: procedure, overrides, "
                            f"split, models, label_cleaning, nproc)")
        nproc = _typed(where, "reproduce.nproc", value.get("nproc", 1), int, nullable=False)
        if isinstance(nproc, bool) or nproc < 1:
            raise CardError(f"{where}: reproduce.nproc must be a positive integer, got {nproc!r}")
        return cls(_typed(where, "reproduce.procedure", value.get("procedure"), str, nullable=False),
                   tuple(_typed(where, "reproduce.overrides", value.get("overrides"), list) or ()),
                   _typed(where, "reproduce.split", value.get("split", "test"), str, nullable=False),
                   tuple(_typed(where, "reproduce.models", value.get("models"), list) or ()),
                   _typed(where, "reproduce.label_cleaning", value.get("label_cleaning"), dict), nproc)

    def to_mapping(self):
        """The catalog's form: the procedure and the options that differ from their defaults."""
        out = {"procedure": self.procedure}
        if self.overrides:
            out["overrides"] = list(self.overrides)
        if self.split != "test":
            out["split"] = self.split
        if self.models:
            out["models"] = list(self.models)
        if self.label_cleaning is not None:
            out["label_cleaning"] = dict(self.label_cleaning)
        if self.nproc != 1:
            out["nproc"] = self.nproc
        return out


@dataclasses.dataclass(frozen=True)
class Card:
    """One model (module docstring). ``origin``: one of :data:`ORIGINS`; ``program`` and ``onnx``: the saved
    program folder and ONNX model of an export; ``files``: ``{relative path: sha256}`` of every file an
    export vouches for."""
    name: str
    task: str
    kind: str
    folder: str
    origin: str = "zoo"
    description: str = ""
    source: str = ""
    config: Optional[str] = None
    overrides: tuple = ()
    weights: Optional[Weights] = None
    loader: Optional[str] = None
    compressed_from: Optional[str] = None
    slim_config: Optional[str] = None
    from_scratch: bool = False
    reproduce: Optional[Recipe] = None
    metrics: Mapping = dataclasses.field(default_factory=dict)
    date: Optional[str] = None
    reproduce_minutes: Optional[float] = None
    program: Optional[str] = None
    onnx: Optional[str] = None
    files: Mapping[str, str] = dataclasses.field(default_factory=dict)

    def __post_init__(self):
        if self.kind not in CARD_KINDS:
            raise CardError(f"model {self.name!r}: kind must be one of {', '.join(CARD_KINDS)}, got {self.kind!r}")
        if self.origin not in ORIGINS:
            raise CardError(f"model {self.name!r}: origin must be one of {', '.join(ORIGINS)}, got {self.origin!r}")
        object.__setattr__(self, "metrics", _frozen(self.metrics))
        object.__setattr__(self, "files", _frozen(self.files))
        object.__setattr__(self, "overrides", tuple(self.overrides))

    @property
    def version(self):
        """The sha256 of the weights (what a server reports as the model's version); None when unrecorded."""
        return self.weights.sha256 if self.weights else None

    @classmethod
    def from_mapping(cls, entry, folder, where, origin="zoo"):
        """The card of a catalog entry (``catalog.yaml``'s form, module docstring) whose paths lie under
        ``folder``; ``where`` names the entry in errors."""
        _typed(where, "card", entry, dict, nullable=False)
        for key in ("name", "task"):
            _typed(where, key, entry.get(key), str, nullable=False)
        where = f"{where}: card {entry['name']!r}"
        kinds = [kind for kind, (key, _) in CARD_KINDS.items() if key in entry]
        if len(kinds) != 1:
            marks = " or ".join(repr(key) for key, _ in CARD_KINDS.values())
            raise CardError(f"{where} needs exactly one of {marks}")
        kind = kinds[0]
        missing = [key for key in CARD_KINDS[kind][1] if key not in entry]
        if missing:
            raise CardError(f"{where}: a {kind} card needs {', '.join(map(repr, missing))}")
        known = {f.name for f in dataclasses.fields(cls)} - {"kind", "folder", "origin"} | {"base_config"}
        unknown = sorted(set(entry) - known)
        if unknown:
            raise CardError(f"{where}: unknown keys {', '.join(unknown)}")
        text = {key: _typed(where, key, entry.get(key), str) for key in
                ("description", "source", "config", "base_config", "loader", "compressed_from", "slim_config",
                 "date", "program", "onnx")}
        return cls(
            name=entry["name"], task=entry["task"], kind=kind, folder=folder, origin=origin,
            description=text["description"] or "", source=text["source"] or "",
            config=text["config"] or text["base_config"],
            overrides=tuple(_typed(where, "overrides", entry.get("overrides"), list) or ()),
            weights=Weights.from_mapping(entry["weights"], where) if "weights" in entry else None,
            loader=text["loader"], compressed_from=text["compressed_from"], slim_config=text["slim_config"],
            from_scratch=bool(_typed(where, "from_scratch", entry.get("from_scratch"), bool)),
            reproduce=Recipe.from_mapping(entry["reproduce"], where) if "reproduce" in entry else None,
            metrics=_typed(where, "metrics", entry.get("metrics"), dict) or {}, date=text["date"],
            reproduce_minutes=_typed(where, "reproduce_minutes", entry.get("reproduce_minutes"), (int, float)),
            program=text["program"], onnx=text["onnx"],
            files=_typed(where, "files", entry.get("files"), dict) or {})

    def to_mapping(self):
        """The card in ``catalog.yaml``'s form (no ``folder`` or ``origin``; empty fields left out)."""
        out = {"name": self.name, "task": self.task}
        if self.description:
            out["description"] = self.description
        marker = CARD_KINDS[self.kind][0]
        if self.kind == "official":
            out["loader"] = self.loader
        else:
            out[marker] = self.config
        if self.overrides:
            out["overrides"] = list(self.overrides)
        if self.compressed_from:
            out["compressed_from"] = self.compressed_from
        if self.from_scratch:
            out["from_scratch"] = True
        if self.slim_config:
            out["slim_config"] = self.slim_config
        if self.weights is not None:
            out["weights"] = self.weights.to_mapping()
        if self.source:
            out["source"] = self.source
        if self.reproduce is not None:
            out["reproduce"] = self.reproduce.to_mapping()
        if self.metrics:
            out["metrics"] = _plain(self.metrics)
        for key in ("date", "reproduce_minutes", "program", "onnx"):
            if getattr(self, key) is not None:
                out[key] = getattr(self, key)
        if self.files:
            out["files"] = dict(self.files)
        return out

    def replace(self, **changes):
        """A copy of the card with ``changes`` (:func:`dataclasses.replace`)."""
        return dataclasses.replace(self, **changes)


def _plain(value):
    """``value`` with mapping proxies made dicts, recursively (what YAML and JSON write)."""
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value
