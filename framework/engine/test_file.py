"""``data.test`` from a labelled file of the user's: what ``oar eval --test_file F`` evaluates on.

A dataset class that can read a whole labelled file in its training format says how in a class attribute
``TEST_FILE``, a dict with the keys:

- ``file_keys``: the constructor keys that name the file (or folder); the first one the template section sets
  takes the user's file, else the first of them;
- ``whole``: the settings that make it read every example of the file, past any ``i % 10`` split rule
  (``{"split": "all"}``; ``{"root": None}``: paths relative to the list file's folder);
- ``from_run``: ``{dataset key: run config key}``, what the run trained with and the file must be read
  with (its vocabulary, tag set, class names): a label outside the run's label set is then an error
  naming the file and line;
- ``type``: the registered type that reads a user's file, when not the class itself (the fixed corpus
  ``SentimentReviews`` -> ``SentimentFile``).

The template is ``data.eval`` (its transforms and frame sampler are the eval split's), else ``data.test``,
else ``data.train`` (a note on stderr says so: its transforms may be random); its keys the reading type
takes are kept.
"""
import sys

from ..config import ConfigError, location, signature_keys
from ..registry import DATASETS

__all__ = ["with_test_file"]

_TEMPLATES = ("eval", "test", "train")


def with_test_file(cfg, path=None, given=None):
    """``cfg`` with a ``data.test`` section that reads every example of the user's file ``path``.

    ``given``: the ``data.test`` keys the user named (``-o data.test.path=F``); one of the file keys
    there names the file as ``path`` does, and the other given keys are set on the section. Without a
    file, ``cfg`` itself comes back, unless its ``data.test`` is a section without a ``type`` (keys from
    ``-o`` alone), which is a ConfigError pointing at ``--test_file``; with one, a new dict.
    """
    given = dict(given or {})
    data = cfg.get("data") or {}
    name, template = _template(cfg, data)
    spec = getattr(DATASETS.get(template["type"], location(cfg, f"data.{name}")), "TEST_FILE", None) \
        if template else None
    named = [k for k in (spec or {}).get("file_keys", ()) if k in given]
    if path is None and not named:
        test = data.get("test")
        if isinstance(test, dict) and "type" not in test:
            keys = ", ".join(f"data.test.{k}" for k in test)
            hint = f"-o data.test.{spec['file_keys'][0]}=F" if spec else "a test section with a type"
            raise ConfigError(f"{location(cfg, 'data.test')}: {keys} names no file a dataset reads; give your "
                              f"labelled test file with --test_file F (or {hint})")
        return cfg
    if spec is None:
        readers = sorted(n for n in DATASETS.names() if getattr(DATASETS.get(n), "TEST_FILE", None))
        what = f"data.{name} (type '{template['type']}')" if template else "no data section"
        raise ConfigError(f"{location(cfg, 'data')}: a test file of yours needs the dataset type the run trained "
                          f"with to read files; {what} does not (types that do: {', '.join(readers)})")
    if path is not None and named:
        raise ConfigError(f"the test file is given twice: --test_file {path} and data.test.{named[0]}; give it once")
    path = path if path is not None else given[named[0]]
    if name == "train":
        print(f"note: {location(cfg, 'data')} has no data.eval; your test file is read with the settings of "
              f"data.train (its transforms)", file=sys.stderr)
    return {**cfg, "data": {**data, "test": _section(cfg, template, spec, path, given)}}


def _template(cfg, data):
    """``(split name, section)`` of the first dataset section among data.eval, data.test, data.train."""
    for name in _TEMPLATES:
        section = data.get(name)
        if isinstance(section, dict) and "type" in section:
            return name, section
    return None, None


def _section(cfg, template, spec, path, given):
    """The data.test section of type ``spec``'s (default the template's) that reads all of ``path``."""
    kind = spec.get("type", template["type"])
    taken = signature_keys(DATASETS.get(kind))
    file_keys = spec["file_keys"]
    key = next((k for k in file_keys if template.get(k) is not None), file_keys[0])
    section = {k: v for k, v in template.items()
               if k != "type" and k not in file_keys and (taken is None or k in taken)}
    section.update({"type": kind, key: path, **spec.get("whole", {})})
    for dataset_key, run_key in spec.get("from_run", {}).items():
        value = _lookup(cfg, run_key)
        if value is not None:
            section[dataset_key] = value
    section.update({k: v for k, v in given.items() if k not in file_keys})
    return section


def _lookup(cfg, dotted):
    """The value at ``dotted`` (``task.tag_file``) in ``cfg``, None when absent."""
    node = cfg
    for part in dotted.split("."):
        if not isinstance(node, dict):
            return None
        node = node.get(part)
    return node
