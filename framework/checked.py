"""Reading files that arrive as data (an export directory, a run directory, a cache entry): the checks every
reader shares.

- :func:`read_json` reads a JSON file; whatever is wrong with it (unreadable, not UTF-8, truncated, not
  JSON, nested too deep, not the expected kind of value) is one :class:`~framework.errors.FileFormatError`
  naming the file.
- :func:`check_sha256` refuses a file whose sha256 is not the one recorded for it
  (:class:`~framework.errors.ChecksumError`), or that is missing.
- :func:`path_inside` turns a relative path read from a file into a path inside its directory, refusing an
  absolute path or one that leaves the directory (``..``, a symbolic link pointing out).

The docs' trust rules (``docs/ARCHITECTURE.md``) say where they are used.
"""
import json
import os

from .errors import ChecksumError, FileFormatError, MissingFileError
from .fetch import sha256_of

__all__ = ["read_json", "check_sha256", "path_inside", "is_sha256"]


def read_json(path, kind=dict, what="JSON"):
    """The JSON value in the file at ``path``, which must be of ``kind`` (default: an object).

    ``what`` names the file's role in messages (``"an export manifest"``). A missing file raises
    MissingFileError; any other problem FileFormatError naming the file.
    """
    try:
        with open(path, encoding="utf-8") as f:
            value = json.load(f)
    except FileNotFoundError:
        raise MissingFileError(f"{path} is missing") from None
    except OSError as err:
        raise FileFormatError(f"cannot read {path}: {err.strerror or err}") from None
    except UnicodeDecodeError:
        raise FileFormatError(f"{path} is not {what}: not UTF-8 text") from None
    except (ValueError, RecursionError) as err:
        raise FileFormatError(f"{path} is not {what}: {_first_line(err)} (truncated or damaged?)") from None
    if not isinstance(value, kind):
        raise FileFormatError(f"{path} is not {what}: expected a JSON {_json_kind(kind)}, got "
                              f"{_json_kind(type(value))}")
    return value


def _first_line(err):
    text = str(err).splitlines()[0] if str(err) else type(err).__name__
    return text[:200]


def _json_kind(kind):
    return {dict: "object", list: "list", str: "string", int: "number", float: "number", bool: "boolean",
            type(None): "null"}.get(kind, getattr(kind, "__name__", str(kind)))


def is_sha256(value):
    """True when ``value`` is a sha256 as oar records it: 64 lowercase hex digits."""
    return isinstance(value, str) and len(value) == 64 and all(c in "0123456789abcdef" for c in value)


def check_sha256(path, expected, record):
    """Raise unless the file at ``path`` has the sha256 ``expected``, which ``record`` (the file that holds
    it, e.g. ``exp/manifest.json``) records: MissingFileError when absent, ChecksumError when it differs."""
    if not os.path.isfile(path):
        raise MissingFileError(f"{path} is missing ({record} lists it)")
    got = sha256_of(path)
    if got != expected:
        raise ChecksumError(f"{path} has sha256 {got[:12]}…, but {record} records {str(expected)[:12]}…: the "
                            f"file was changed or damaged after it was written; refusing to use it")


def path_inside(directory, relative, record):
    """``directory/relative`` for a path ``relative`` read from ``record``; a value that is not a relative
    path staying inside ``directory`` (symbolic links resolved) raises FileFormatError."""
    if not isinstance(relative, str) or not relative or "\x00" in relative or os.path.isabs(relative):
        raise FileFormatError(f"{record} names {relative!r}, which is not a file name inside {directory}")
    path = os.path.join(directory, relative)
    root = os.path.realpath(directory)
    if os.path.commonpath([os.path.realpath(path), root]) != root:
        raise FileFormatError(f"{record} names {relative!r}, which lies outside {directory}")
    return path
