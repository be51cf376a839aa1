"""YAML configs as plain dicts: ``_base_`` inheritance, ``a.b=value`` overrides, key checks.

A config file is a YAML mapping of sections (``model``, ``data``, ``optimizer``,
``lr``, ``train``, ``metrics``, …). ``_base_`` (a path or a list of paths,
relative to the file) names configs to load first; they are deep-merged in
order and the file itself is merged on top:

- dicts merge key by key, recursively; lists and scalars replace;
- ``_delete_: true`` inside a dict replaces the inherited dict outright.

A string value that is exactly ``"${section.key}"`` is a reference: after the
overrides it is replaced by the value at that dotted key path (so a file named
once, e.g. ``data.train.path``, can feed the task too, and one ``-o`` changes
both). Quote references in YAML flow mappings (``{corpus: "${data.train.path}"}``).

:func:`load_config` returns a plain dict; ``cfg["_source_"]`` holds the path of
the top file (as given), for error messages. Every error is a
:class:`ConfigError` whose message is one line saying what is wrong and where.

YAML is read within bounds (:mod:`framework.yamlload`: size, alias expansion),
so a document built to exhaust memory is one ``ConfigError``.

YAML note: PyYAML reads ``1e-4`` (no dot) as the *string* ``'1e-4'``; write
``1.0e-4``. :func:`check_type` catches the mistake with that advice.
"""
import copy
import difflib
import inspect
import math
import os
import re

import yaml
from .errors import UserError
from .serialization import atomic_write
from .yamlload import safe_load

__all__ = ["ConfigError", "SOURCE_KEY", "load_config", "merge", "parse_overrides", "apply_overrides",
           "resolve_references", "dump_config", "check_keys", "check_type", "signature_keys", "location"]

SOURCE_KEY = "_source_"
_FLOAT_WITHOUT_DOT = re.compile(r"^[-+]?\d+[eE][-+]?\d+$")
_REFERENCE = re.compile(r"^\$\{\s*([^${}\s]+)\s*\}$")
_TYPE_WORDS = {bool: "true or false", int: "an integer", float: "a number", str: "a string",
               list: "a list", dict: "a mapping", type(None): "null"}


class ConfigError(UserError, ValueError):
    """A config cannot be loaded or does not fit what reads it; the message says what and where."""


def load_config(path, overrides=None, bases=True):
    """Load the YAML config at ``path`` with its ``_base_`` chain, then apply ``overrides``.

    ``overrides`` is a list of ``"dotted.key=value"`` strings (see :func:`parse_overrides`);
    ``"${a.b}"`` references are resolved after them (:func:`resolve_references`).
    ``bases=False`` reads a resolved config (a run directory's or an export's ``config.yaml``, data that may
    come from elsewhere): a ``_base_`` in it is refused rather than followed to another file.
    Returns a plain dict with ``"_source_"`` set to ``path``.
    """
    cfg = _load_file(os.fspath(path), chain=(), referrer=None, bases=bases)
    if overrides:
        cfg = apply_overrides(cfg, overrides)
    cfg = resolve_references(cfg, os.fspath(path))
    cfg[SOURCE_KEY] = os.fspath(path)
    return cfg


def _load_file(path, chain, referrer, bases=True):
    real = os.path.realpath(path)
    if real in chain:
        cycle = " -> ".join(os.path.basename(p) for p in chain + (real,))
        raise ConfigError(f"config inheritance cycle: {cycle} (via _base_ of {referrer})")
    data = _read_yaml(path, referrer)
    if not bases and "_base_" in data:
        raise ConfigError(f"{path}: a run's resolved config cannot name a _base_ (it holds every section "
                          f"itself); refusing to read other files through it")
    bases = data.pop("_base_", [])
    if isinstance(bases, str):
        bases = [bases]
    if not isinstance(bases, list) or not all(isinstance(b, str) for b in bases):
        raise ConfigError(f"{path}: _base_ must be a path or a list of paths, got {bases!r}")
    cfg = {}
    for base in bases:
        base_path = os.path.join(os.path.dirname(path), base)
        cfg = merge(cfg, _load_file(base_path, chain + (real,), referrer=path))
    return merge(cfg, data)


def _read_yaml(path, referrer):
    try:
        with open(path, encoding="utf-8") as f:
            data = safe_load(f)
    except FileNotFoundError:
        listed = f" (listed in _base_ of {referrer})" if referrer else ""
        raise ConfigError(f"config file not found: {path}{listed}") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"bad YAML in {path}{_yaml_position(exc)}: {_yaml_problem(exc)}") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"config file {path} is not UTF-8 text (byte {exc.start})") from None
    except OSError as exc:
        raise ConfigError(f"cannot read config file {path}: {exc.strerror}") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: a config file must hold a mapping of sections at the top level, "
                          f"got {_TYPE_WORDS.get(type(data), type(data).__name__)}")
    return data


def _yaml_position(exc):
    mark = getattr(exc, "problem_mark", None)
    return f", line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""


def _yaml_problem(exc):
    problem = getattr(exc, "problem", None)
    return problem if problem else str(exc).splitlines()[0]


def merge(base, override):
    """Deep-merge dict ``override`` into a copy of dict ``base`` and return it.

    Dicts merge recursively; anything else in ``override`` replaces what ``base``
    has. A dict in ``override`` holding ``_delete_: true`` replaces the base dict
    outright. Neither argument is modified.
    """
    override = dict(override)
    out = {} if override.pop("_delete_", False) else copy.deepcopy(base)
    for key, value in override.items():
        if isinstance(value, dict):
            inherited = out.get(key)
            out[key] = merge(inherited if isinstance(inherited, dict) else {}, value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def parse_overrides(overrides):
    """Turn ``["train.epochs=3", "data.sizes=[1,2]"]`` into a nested dict.

    Values are parsed as YAML (``3`` is an int, ``[1,2]`` a list, ``abc`` a
    string); a number in exponent form without a dot (``1e-4``) is read as a
    float. Dotted keys create nested dicts: ``a.b=1`` gives ``{"a": {"b": 1}}``.
    """
    nested = {}
    for item in overrides:
        key, value = _split_override(item)
        node = nested
        *parents, leaf = key.split(".")
        for part in parents:
            node = node.setdefault(part, {})
            if not isinstance(node, dict):
                raise ConfigError(f"override '{item}': '{part}' was already given a value")
        node[leaf] = value
    return nested


def _split_override(item):
    key, sep, text = str(item).partition("=")
    key = key.strip()
    if not sep or not key or any(not part for part in key.split(".")):
        raise ConfigError(f"override '{item}' must look like section.key=value")
    try:
        value = safe_load(text) if text.strip() else None
    except yaml.YAMLError as exc:
        raise ConfigError(f"override '{item}': bad YAML value: {_yaml_problem(exc)}") from None
    if isinstance(value, str) and _FLOAT_WITHOUT_DOT.match(value):
        value = float(value)
    return key, value


def apply_overrides(cfg, overrides):
    """Return ``cfg`` with the ``"a.b=value"`` strings in ``overrides`` applied.

    Missing keys are created; a mapping value merges into what is there, as a
    config file's would; a key path that runs through a non-dict value is an
    error naming the override.
    """
    for item in overrides:
        key, _ = _split_override(item)
        node = cfg
        *parents, _ = key.split(".")
        for depth, part in enumerate(parents):
            node = node.get(part)
            if node is None:
                break
            if not isinstance(node, dict):
                path = ".".join(parents[:depth + 1])
                raise ConfigError(f"override '{item}': '{path}' holds {node!r}, not a mapping of keys")
    return merge(cfg, parse_overrides(overrides))


def resolve_references(cfg, source="<config>"):
    """A copy of ``cfg`` with every string value ``"${a.b.c}"`` replaced by the value at key path ``a.b.c``.

    References may point at dicts, lists or other references; a reference to a
    missing key or a cycle of references is a ConfigError naming the key that
    holds it and ``source`` (the config file).
    """
    def lookup(target, holder, chain):
        if target in chain:
            raise ConfigError(f"{source}: references form a cycle: {' -> '.join(chain + (target,))}")
        node = cfg
        for depth, part in enumerate(target.split(".")):
            if not isinstance(node, dict) or part not in node:
                raise ConfigError(f"{source}: '{holder}' refers to '${{{target}}}', but the config has no "
                                  f"'{'.'.join(target.split('.')[:depth + 1])}'")
            node = node[part]
        return resolve(node, target, chain + (target,))

    def resolve(value, where, chain):
        if isinstance(value, dict):
            return {k: resolve(v, f"{where}.{k}" if where else str(k), chain) for k, v in value.items()}
        if isinstance(value, list):
            return [resolve(v, f"{where}[{i}]", chain) for i, v in enumerate(value)]
        match = _REFERENCE.match(value) if isinstance(value, str) else None
        return copy.deepcopy(lookup(match.group(1), where, chain)) if match else value

    return resolve(cfg, "", ())


def dump_config(cfg, path):
    """Write ``cfg`` (without ``_source_``) as YAML to ``path``; the write is atomic."""
    data = {k: v for k, v in cfg.items() if k != SOURCE_KEY}
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    with atomic_write(path) as f:
        yaml.safe_dump(data, f, sort_keys=False, allow_unicode=True)


def location(cfg, section):
    """A place description for messages: ``"<top file>, section 'model'"``."""
    return f"{cfg.get(SOURCE_KEY, '<config>')}, section '{section}'"


def check_keys(section, allowed, where):
    """Raise ConfigError unless every key of dict ``section`` is in ``allowed``.

    The message names the unknown key, ``where`` it is (file and section) and
    the closest valid key ("did you mean 'hidden_size'?").
    """
    if not isinstance(section, dict):
        raise ConfigError(f"{where} must be a mapping of keys, got {section!r}")
    allowed = sorted(allowed)
    for key in section:
        if key not in allowed:
            raise ConfigError(f"unknown key '{key}' in {where}{_suggestion(key, allowed)}")


def _suggestion(key, allowed):
    close = difflib.get_close_matches(str(key), allowed, n=1, cutoff=0.6)
    hint = f"; did you mean '{close[0]}'?" if close else ""
    return f"{hint} (valid keys: {', '.join(allowed) or 'none'})"


def check_type(value, expected, key, where):
    """Return ``value`` if it is an instance of ``expected`` (a type or tuple of types), else raise.

    ``float`` also accepts ints, and takes only finite numbers (``.nan``, ``.inf`` are refused naming the key);
    ``bool`` is never taken for a number. A string
    that reads as a number where a number is expected gets the advice to write
    it with a dot (``1.0e-4``), since YAML reads ``1e-4`` as a string.
    """
    types = expected if isinstance(expected, tuple) else (expected,)
    if float in types:
        types = types + (int,)
    if isinstance(value, types) and not (isinstance(value, bool) and bool not in types):
        if isinstance(value, float) and not math.isfinite(value) and float in types:
            raise ConfigError(f"'{key}' in {where} must be a finite number, got {value!r}")
        return value
    wanted = " or ".join(_TYPE_WORDS.get(t, t.__name__) for t in types if not (t is int and float in types))
    message = f"'{key}' in {where} must be {wanted}, got {value!r}"
    if isinstance(value, str) and _reads_as_number(value) and (int in types or float in types):
        message += f"; YAML reads this as a string: write {_with_dot(value)}"
    raise ConfigError(message)


def _reads_as_number(text):
    try:
        float(text)
    except ValueError:
        return False
    return True


def _with_dot(text):
    mantissa, sep, exponent = text.lower().partition("e")
    if sep and "." not in mantissa:
        mantissa += ".0"
    return mantissa + sep + exponent


def signature_keys(fn):
    """Names of the parameters ``fn`` (a function, or a class: its constructor) takes by keyword.

    Returns a list of names, or None when ``fn`` takes ``**kwargs`` (any key) or
    has no inspectable signature.
    """
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return None
    if any(p.kind is p.VAR_KEYWORD for p in params):
        return None
    return [p.name for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
