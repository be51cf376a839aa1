"""Run directories: the files that make a training run's directory self-contained.

:func:`train` writes into its output
directory (rank 0), before the first step: ``config.yaml``, the resolved config
(overrides applied, ``${…}`` references resolved) in which the task's files
point at copies inside the directory (paths relative to it), those copies
(every vocabulary, label list, lexicon, tokeniser model or class-names file
the task read or built, :meth:`framework.engine.Task.save_assets`) and
``assets.json``, which records for each config key so rewritten the copy, its
sha256 and the value the config gave (a path written relative to the run
directory). Checkpoints carry the same record.
Every other file or folder the config names by a relative path (data files,
list files, class-name files, pretrained weights: the keys of
:data:`PATH_KEYS`, or ending in ``_file``, ``_path``, ``_dir``, ``_weights``)
is written relative to the run directory and listed in ``paths.json``
(:data:`RUN_PATHS`), so the run resolves it from any working directory and
names no absolute path of the machine.
:func:`run_config` turns the config a user gives ``oar eval|infer`` into the
one to build the task from: the run's ``task`` and ``model`` sections (what
the weights were trained with) with the given data and train sections; every
copy it names must lie inside the directory and still have its recorded sha256.
:func:`load_weights` with the task refuses weights whose recorded files differ
from those the task reads.
"""
import copy
import json
import os
import sys
import tempfile

import yaml

from ..checked import check_sha256, is_sha256, path_inside, read_json
from ..config import ConfigError, SOURCE_KEY, load_config
from ..errors import describe_os_error
from ..fetch import sha256_of
from ..serialization import atomic_write
from .checkpoint import CheckpointError, OutputDirError

__all__ = ["RUN_CONFIG", "RUN_ASSETS", "RUN_PATHS", "PATH_KEYS", "make_output_dir", "save_run", "run_config", "check_assets",
           "best_checkpoint"]

RUN_CONFIG = "config.yaml"      # in a run directory: the resolved config, with the task's files copied beside it
RUN_ASSETS = "assets.json"      # in a run directory: the config keys naming those copies, sha256s, given values
RUN_PATHS = "paths.json"        # in a run directory: the config keys whose paths are written relative to it
# config keys whose values are paths (besides those ending in _file, _path, _dir or _weights)
PATH_KEYS = ("path", "root", "list_file", "class_names", "index", "pretrained", "corpus", "vocab")
_PATH_SUFFIXES = ("_file", "_path", "_dir", "_weights")


def check_assets(task, recorded, path, cfg):
    """Raise CheckpointError when a file the task reads differs from the one recorded in checkpoint ``path``.

    ``recorded``: the checkpoint's ``{config key: {"value", "sha256"}}`` (:func:`save_run`); ``cfg``: the
    config the task was built from (its values are named in the message)."""
    with tempfile.TemporaryDirectory(prefix="oar-assets-") as folder:
        current = _asset_record(task.save_assets(folder) or {}, folder)
    for key, entry in recorded.items():
        if key not in current or _listed(entry.get("sha256")) == _listed(current[key]["sha256"]):
            continue
        trained = ", ".join(os.path.join(os.path.dirname(os.path.abspath(path)), name)
                            for name in _listed(entry.get("value")) if name)
        given = _get_key(cfg, key)
        now = f"{given}" if given is not _MISSING and given is not None else \
            f"one the task built itself ({key} is not set in {cfg.get(SOURCE_KEY, 'the config')})"
        raise CheckpointError(f"the weights of {path} were trained with {trained} ({key}), but the task reads "
                              f"{now}, whose content differs; use the run's own files: give its directory as "
                              f"the output directory, whose {RUN_CONFIG} names them")


def _listed(value):
    return list(value) if isinstance(value, (list, tuple)) else [value]


def _asset_record(overrides, directory):
    """``{key: {"value": file name(s) relative to directory, "sha256": digest(s)}}`` of ``save_assets`` overrides."""
    record = {}
    for key, value in overrides.items():
        if key.partition(".")[0] not in ("task", "model") or not key.partition(".")[2]:
            raise ValueError(f"save_assets: override key {key!r} must name a key of the task or model section")
        files = _listed(value)
        names = [None if f is None else os.path.relpath(f, directory) for f in files]
        digests = [None if f is None else sha256_of(f) for f in files]
        plural = isinstance(value, (list, tuple))
        record[key] = {"value": names if plural else names[0], "sha256": digests if plural else digests[0]}
    return record


_MISSING = object()


def _get_key(cfg, key):
    node = cfg
    for part in key.split("."):
        if not isinstance(node, dict) or part not in node:
            return _MISSING
        node = node[part]
    return node


def _set_key(cfg, key, value):
    *parents, leaf = key.split(".")
    node = cfg
    for part in parents:
        if not isinstance(node.get(part), dict):
            node[part] = {}
        node = node[part]
    node[leaf] = value


def _delete_key(cfg, key):
    *parents, leaf = key.split(".")
    node = cfg
    for part in parents:
        node = node.get(part) if isinstance(node, dict) else None
    if isinstance(node, dict):
        node.pop(leaf, None)


def _plain(value):
    """``value`` with tuples made lists, recursively (what YAML and JSON write and read back)."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def best_checkpoint(run_dir):
    """The checkpoint of a training run to use: ``<run_dir>/best.npz``, else ``last.npz`` when the run ended
    before any evaluation (a step budget); ``best.npz``'s path when neither exists (a missing file that
    the loader then names)."""
    best, last = os.path.join(run_dir, "best.npz"), os.path.join(run_dir, "last.npz")
    return last if not os.path.isfile(best) and os.path.isfile(last) else best


def make_output_dir(output_dir):
    """Create ``output_dir`` (and its parents); an OutputDirError names what is in the way."""
    try:
        os.makedirs(output_dir, exist_ok=True)
    except OSError as err:
        blocker = next((p for p in _ancestors(output_dir) if os.path.exists(p) and not os.path.isdir(p)), None)
        why = f"{blocker} is a file, not a directory" if blocker else describe_os_error(err)
        raise OutputDirError(f"cannot create the output directory {output_dir}: {why}") from None


def _ancestors(path):
    """``path`` and its parents, nearest first (``a/b/c``, ``a/b``, ``a``)."""
    path = os.path.normpath(path)
    while path and path not in (os.sep, "."):
        yield path
        parent = os.path.dirname(path)
        if parent == path:
            break
        path = parent


def _shown_path(path):
    """``path`` as a run's files may name it: relative to the working directory when it lies inside it, else
    its file name (a run directory names no absolute path of the machine it was made on)."""
    if not path or not os.path.isabs(str(path)):
        return path
    inside = os.path.commonpath([os.getcwd(), str(path)]) == os.getcwd()
    return os.path.relpath(path) if inside else os.path.basename(str(path))


def _given_in_run(value, output_dir):
    """A file value of the config as ``assets.json`` records it: each local path in it relative to the run
    directory ``output_dir`` (:func:`_given_resolved` reads it back); URLs and non-strings unchanged."""
    if isinstance(value, list):
        return [_given_in_run(v, output_dir) for v in value]
    if isinstance(value, str) and value and "://" not in value:
        return os.path.relpath(os.path.abspath(value), output_dir)
    return value


def _given_resolved(value, output_dir):
    """A recorded ``given`` value (:func:`_given_in_run`) as a path from the working directory."""
    if isinstance(value, list):
        return [_given_resolved(v, output_dir) for v in value]
    if isinstance(value, str) and value and "://" not in value and not os.path.isabs(value):
        return os.path.normpath(os.path.join(output_dir, value))
    return value


def _same_files(given, recorded):
    """True when the config value ``given`` names the same files as ``recorded`` (paths compared absolute)."""
    if isinstance(given, list) and isinstance(recorded, list):
        return len(given) == len(recorded) and all(_same_files(a, b) for a, b in zip(given, recorded))
    if isinstance(given, str) and isinstance(recorded, str):
        return os.path.abspath(given) == os.path.abspath(recorded)
    return given == recorded


def _is_path_key(key):
    return key in PATH_KEYS or key.endswith(_PATH_SUFFIXES)


def _local_path(value):
    """True for a relative path (no URL) of an existing file or folder, from the working directory."""
    return isinstance(value, str) and value and "://" not in value and not os.path.isabs(value) and \
        os.path.exists(value)


def _relative_paths(node, output_dir, prefix=""):
    """Rewrite, in place, the relative paths of existing files that the path keys of ``node`` (a config
    section) name, relative to ``output_dir``; returns ``{dotted key: value as written}``."""
    written = {}
    for key, value in node.items():
        dotted = f"{prefix}{key}"
        if isinstance(value, dict):
            written.update(_relative_paths(value, output_dir, dotted + "."))
        elif _is_path_key(str(key)) and (_local_path(value) or (
                isinstance(value, list) and value and all(_local_path(v) for v in value))):
            moved = [os.path.relpath(v, output_dir) for v in _listed(value)]
            node[key] = moved if isinstance(value, list) else moved[0]
            written[dotted] = node[key]
    return written


def _run_paths(cfg, output_dir, keys):
    """``cfg`` with each of ``keys`` (written relative to the run ``output_dir``) resolved against it."""
    for key in keys:
        value = _get_key(cfg, key)
        if value is not _MISSING and value is not None:
            resolved = [os.path.normpath(os.path.join(output_dir, v)) for v in _listed(value)]
            _set_key(cfg, key, resolved if isinstance(value, list) else resolved[0])
    return cfg


def save_run(cfg, task, output_dir):
    """Write the run files of ``cfg`` and its built ``task`` into ``output_dir`` (module docstring).

    Returns ``(run config, asset record)``: the config as written to
    ``config.yaml`` (asset paths relative to ``output_dir``) and ``{key:
    {"value", "sha256"}}`` for the checkpoints. An OSError while writing
    becomes an OutputDirError naming the directory.
    """
    make_output_dir(output_dir)
    try:
        overrides = task.save_assets(output_dir) or {}
        assets = _asset_record(overrides, output_dir)
        run_cfg = _plain({k: v for k, v in cfg.items() if k != SOURCE_KEY})
        manifest = {}
        for key, entry in assets.items():
            given = _get_key(cfg, key)
            manifest[key] = {**entry, **({} if given is _MISSING else {"given": _given_in_run(_plain(given), output_dir)})}
            _set_key(run_cfg, key, entry["value"])
        paths = {key: value for key, value in _relative_paths(run_cfg, output_dir).items() if key not in assets}
        source = _shown_path(cfg.get(SOURCE_KEY))
        header = (f"# The resolved config of this training run{f' (from {source})' if source else ''}: overrides "
                  f"applied, references\n# resolved; the task's files are copies in this directory, named "
                  f"relative to it ({RUN_ASSETS} lists them).\n")
        with atomic_write(os.path.join(output_dir, RUN_CONFIG)) as f:
            f.write(header + yaml.safe_dump(run_cfg, sort_keys=False, allow_unicode=True))
        with atomic_write(os.path.join(output_dir, RUN_ASSETS)) as f:
            f.write(json.dumps(manifest, ensure_ascii=False, indent=1) + "\n")
        with atomic_write(os.path.join(output_dir, RUN_PATHS)) as f:
            f.write(json.dumps(paths, ensure_ascii=False, indent=1) + "\n")
    except OSError as err:
        raise OutputDirError(f"cannot write the run files into {output_dir}: {describe_os_error(err)}") from None
    return run_cfg, assets


def run_config(cfg, output_dir):
    """The config to evaluate or predict with the weights of the run in ``output_dir``.

    When ``output_dir/config.yaml`` exists, its ``task`` and ``model`` sections
    (what the weights were trained with) replace those of ``cfg``, their file
    paths (the copies listed in ``assets.json``) made to point into
    ``output_dir``; the other sections (data, train …) and ``cfg``'s source
    stay. The paths ``paths.json`` lists are resolved against ``output_dir``
    (in every section when ``cfg`` is the run's own config). A one-line note on stderr says so when the given task or model
    section differs from the one the run was trained from (copies aside).
    Without ``config.yaml``, ``cfg`` is returned unchanged.
    """
    path = os.path.join(output_dir, RUN_CONFIG)
    if not os.path.isfile(path):
        return cfg
    run = load_config(path, bases=False)
    for section in ("task", "model"):
        if not isinstance(run.get(section), dict):
            raise ConfigError(f"{path}: missing section '{section}' (not a run's config?)")
    manifest = _read_manifest(output_dir)
    sections = {name: copy.deepcopy(run[name]) for name in ("task", "model")}
    trained = copy.deepcopy(sections)                 # the sections as the training config gave them
    for key, entry in manifest.items():
        value = entry.get("value")
        paths = _checked_copies(key, entry, output_dir)
        _set_key(sections, key, paths if isinstance(value, list) else paths[0])
        if "given" in entry:
            recorded, given = _given_resolved(entry["given"], output_dir), _get_key(cfg, key)
            _set_key(trained, key, given if _same_files(_plain(given), recorded) else recorded)
        else:
            _delete_key(trained, key)
    relative = _read_paths(output_dir)
    _run_paths(sections, output_dir, [key for key in relative if key.partition(".")[0] in sections])
    for key in relative:
        resolved, given = _get_key(sections, key), _get_key(cfg, key)
        if resolved is not _MISSING and key.partition(".")[0] in sections:
            same = given is not _MISSING and [os.path.abspath(str(v)) for v in _listed(given)] == \
                [os.path.abspath(v) for v in _listed(resolved)]
            _set_key(trained, key, given if same else resolved)
    given_is_run = os.path.abspath(str(cfg.get(SOURCE_KEY, ""))) == os.path.abspath(path)
    if given_is_run:
        cfg = _run_paths(copy.deepcopy(cfg), output_dir, [key for key in relative if key.partition(".")[0]
                                                          not in sections])
    differences = [] if given_is_run else \
        _differences({name: _plain(cfg.get(name)) for name in ("task", "model")}, trained)
    if differences:
        shown = "; ".join(f"{key}: {theirs!r} in training, {ours!r} here" for key, theirs, ours in differences[:3])
        more = f" and {len(differences) - 3} more" if len(differences) > 3 else ""
        print(f"note: using the task and model sections of {path}, which the weights were trained with; "
              f"{cfg.get(SOURCE_KEY, 'the given config')} differs ({shown}{more})", file=sys.stderr)
    return {**cfg, **sections}


def _checked_copies(key, entry, directory):
    """The paths of the copies ``assets.json`` lists for config ``key`` (None for a key no longer needed),
    each a file inside ``directory`` whose sha256 is the recorded one."""
    record = os.path.join(directory, RUN_ASSETS)
    names, digests = _listed(entry.get("value")), _listed(entry.get("sha256"))
    if len(names) != len(digests):
        raise ConfigError(f"{record}: {key} lists {len(names)} files and {len(digests)} sha256s")
    paths = []
    for name, digest in zip(names, digests):
        if name is None:
            paths.append(None)
            continue
        path = path_inside(directory, name, f"{record} ({key})")
        if not is_sha256(digest):
            raise ConfigError(f"{record}: {key} records {digest!r} as the sha256 of {name}, not a sha256")
        check_sha256(path, digest, record)
        paths.append(path)
    return paths


def _read_paths(output_dir):
    """The config keys ``paths.json`` of a run directory records as relative to it ({} when there is none)."""
    path = os.path.join(output_dir, RUN_PATHS)
    if not os.path.isfile(path):
        return {}
    record = read_json(path, what="a run's path record")
    if not all(isinstance(k, str) and k for k in record):
        raise ConfigError(f"{path}: expected a mapping of config keys to paths")
    return record


def _read_manifest(output_dir):
    """The ``assets.json`` record of a run directory ({} when there is none)."""
    path = os.path.join(output_dir, RUN_ASSETS)
    if not os.path.isfile(path):
        return {}
    manifest = read_json(path, what="a run's asset record")
    if not all(isinstance(v, dict) for v in manifest.values()):
        raise ConfigError(f"{path}: expected a mapping of config keys to file records")
    return manifest


def _differences(given, trained, prefix=""):
    """``[(dotted key, trained value, given value)]`` where the nested dicts ``trained`` and ``given`` differ."""
    if isinstance(given, dict) and isinstance(trained, dict):
        found = []
        for key in list(trained) + [k for k in given if k not in trained]:
            found += _differences(given.get(key), trained.get(key), f"{prefix}{key}.")
        return found
    return [] if given == trained else [(prefix.rstrip("."), trained, given)]
