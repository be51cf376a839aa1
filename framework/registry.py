"""The one Registry class: names to builders, and ``build(cfg)`` from a ``{type: ...}`` config.

A registry maps a name (the ``type`` key of a config section) to a class or
function. Domain packages register their components; the framework itself
imports no domain package, so a name is known only once the package that
registers it is imported.

Instances (each config section builds through one of them):

- ``MODELS``: networks (``model`` section), e.g. ``{type: bigru_crf, hidden: 128}``.
- ``DATASETS``: datasets (``data.train``/``data.val``/``data.test``).
- ``METRICS``: metrics (the ``metrics`` list).
- ``TASKS``: tasks coupling preprocessing, a model and postprocessing.
- ``TRANSFORMS``: per-sample transforms, dict in and dict out (``data.*.transforms``).
- ``OPTIMIZERS``: optimizers (``optimizer`` section).
- ``SCHEDULERS``: learning-rate schedules (``lr`` section).
"""
import contextlib
import difflib
import inspect

from .config import ConfigError, check_keys, check_type, signature_keys
from .ranges import COMMON, check_range

__all__ = ["Registry", "RegistryError", "OpTable", "MODELS", "DATASETS", "METRICS", "TASKS", "TRANSFORMS",
           "OPTIMIZERS", "SCHEDULERS"]

_CHECKED_TYPES = (bool, int, float, str)


class RegistryError(ConfigError, KeyError):
    """A name is unknown to a registry or registered twice; the message lists what is known."""

    def __str__(self):
        return str(self.args[0]) if self.args else ""


class Registry:
    """A named table of builders (classes or functions), looked up by the config key ``type``."""

    def __init__(self, name):
        self.name = name
        self._entries = {}

    def register(self, obj=None, name=None):
        """Register ``obj`` under ``name`` (default: ``obj.__name__``) and return it.

        Usable as ``@R.register``, ``@R.register()``, ``@R.register("name")`` or
        ``R.register(obj, name="name")``. A name already taken is an error.
        """
        if isinstance(obj, str):
            obj, name = None, obj
        if obj is None:
            return lambda target: self.register(target, name)
        key = name or obj.__name__
        if key in self._entries:
            taken = self._entries[key]
            raise RegistryError(f"{self.name}: '{key}' is already registered "
                                f"(by {taken.__module__}.{taken.__qualname__})")
        self._entries[key] = obj
        return obj

    def get(self, name, where=None):
        """The builder registered as ``name``; an unknown name raises RegistryError listing the known ones."""
        if name in self._entries:
            return self._entries[name]
        place = f" in {where}" if where else ""
        close = difflib.get_close_matches(str(name), self._entries, n=3, cutoff=0.6)
        hint = f"; did you mean {', '.join(repr(c) for c in close)}?" if close else ""
        known = ", ".join(self.names()) or "none (is the package that registers them imported?)"
        raise RegistryError(f"unknown {self.name} type '{name}'{place}{hint} (known types: {known})")

    def names(self):
        """The registered names, sorted."""
        return sorted(self._entries)

    def __contains__(self, name):
        return name in self._entries

    def __len__(self):
        return len(self._entries)

    def __repr__(self):
        return f"Registry({self.name!r}, {len(self)} entries)"

    def build(self, cfg, where=None, **defaults):
        """Build ``cfg["type"]`` with the other keys of ``cfg`` as keyword arguments.

        ``defaults`` fill in keys that ``cfg`` lacks. The keys are checked against
        the builder's signature (unknown key: an error naming the key, the type,
        ``where`` and the closest valid key), values against its annotations
        and numeric/bool/str defaults (see :func:`framework.config.check_type`)
        and numbers against their setting's range (:data:`framework.ranges.COMMON`).
        ``where`` describes the config's place (e.g. ``config.location(cfg, "model")``).
        """
        place = where or f"a {self.name} config"
        if not isinstance(cfg, dict) or "type" not in cfg:
            raise ConfigError(f"{place}: a {self.name} config must be a mapping with a 'type' key, got {cfg!r}")
        args = dict(cfg)
        type_name = args.pop("type")
        builder = self.get(type_name, where)
        place = f"{place} (type '{type_name}')"
        allowed = signature_keys(builder)
        if allowed is not None:
            check_keys(args, allowed, place)
        for key, expected in _expected_types(builder).items():
            if key in args:
                check_type(args[key], expected, key, place)
        for key, value in args.items():
            if key in COMMON:
                check_range(value, COMMON[key], f"'{key}'", place)
        return builder(**{**defaults, **args})


class OpTable(dict):
    """A table keyed by op class (a :class:`framework.Function` subclass): ONNX converters, pruning rules,
    multiply-add counts, int8 sites. A class registered twice is a :class:`RegistryError` naming both
    entries, so no registration silently wins; an entry is never replaced or removed."""

    def __init__(self, name, entries=None):
        super().__init__()
        self.name = name
        for cls, entry in (entries or {}).items():
            self[cls] = entry

    def __setitem__(self, cls, entry):
        if cls in self:
            raise RegistryError(f"{self.name}: op {cls.__module__}.{cls.__qualname__} is already registered "
                                f"(as {_describe(self[cls])}); one entry per op class")
        super().__setitem__(cls, entry)

    def register(self, *classes):
        """Decorator: the decorated object becomes the entry of each op class in ``classes``."""
        def add(entry):
            for cls in classes:
                self[cls] = entry
            return entry
        return add

    def update(self, *args, **kwargs):
        for cls, entry in dict(*args, **kwargs).items():
            self[cls] = entry

    @contextlib.contextmanager
    def override(self, cls, entry):
        """Within the block, ``entry`` stands for ``cls``'s registered one (a test's wrong converter); the
        registered entry comes back after it."""
        if cls not in self:
            raise RegistryError(f"{self.name}: op {cls.__module__}.{cls.__qualname__} has no entry to override")
        registered = dict.__getitem__(self, cls)
        dict.__setitem__(self, cls, entry)
        try:
            yield entry
        finally:
            dict.__setitem__(self, cls, registered)

    def setdefault(self, cls, entry=None):
        raise TypeError(f"{self.name}: entries are added with register() or table[cls] = entry")

    def __delitem__(self, cls):
        raise TypeError(f"{self.name}: entries are never removed")

    def pop(self, *args):
        raise TypeError(f"{self.name}: entries are never removed")

    def __repr__(self):
        return f"OpTable({self.name!r}, {len(self)} ops)"


def _describe(entry):
    return f"{getattr(entry, '__module__', '')}.{getattr(entry, '__qualname__', repr(entry))}".lstrip(".")


def _expected_types(builder):
    """``{parameter: type or types}`` for the parameters whose annotation or default is a bool, int, float or
    str; a parameter whose default is None also takes None (``-o model.pretrained=null``)."""
    try:
        params = inspect.signature(builder).parameters.values()
    except (TypeError, ValueError):
        return {}
    expected = {}
    for p in params:
        if p.annotation in _CHECKED_TYPES:
            expected[p.name] = (p.annotation, type(None)) if p.default is None else p.annotation
        elif isinstance(p.default, _CHECKED_TYPES):
            default_type = type(p.default)
            expected[p.name] = float if default_type is int else default_type
    return expected


MODELS = Registry("MODELS")
DATASETS = Registry("DATASETS")
METRICS = Registry("METRICS")
TASKS = Registry("TASKS")
TRANSFORMS = Registry("TRANSFORMS")
OPTIMIZERS = Registry("OPTIMIZERS")
SCHEDULERS = Registry("SCHEDULERS")
