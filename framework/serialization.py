"""``save`` / ``load`` of nested dicts and lists of arrays and scalars, without pickle.

Two formats, chosen by the file name:

* ``.safetensors``: the safetensors layout (8-byte little-endian header length,
  a JSON header ``{name: {"dtype", "shape", "data_offsets"}, "__metadata__": {...}}``,
  then the raw little-endian bytes). Array names are the '.'-joined paths.
* anything else: a NumPy ``.npz`` archive whose members are named by the
  '/'-joined paths.

Both carry a JSON manifest (in ``__metadata__``, or as the uint8 member
``__oar_manifest__``) that records the nesting, dict key order, list
positions and the scalar values (int, float, bool, str, None), so ``load``
rebuilds the same structure. A file without a manifest (a plain ``.npz`` or
a safetensors file written by another tool) loads as a flat dict
``name -> array``. Tensors are saved as their NumPy arrays; tuples come
back as lists; NumPy scalars come back as Python scalars.

Loading never unpickles (``numpy.load(..., allow_pickle=False)``), and a file
is written under a temporary name in the same directory, flushed to disk and
renamed, so a crash never leaves half a file behind.

That write is public, for every file the project writes: :func:`atomic_write`
(a file object) and :func:`atomic_path` (a temporary name, for writers that open
files themselves). :func:`remove_stale_temporaries` removes what writes that were
killed midway left behind, and never a temporary that a live process is writing.
"""
import contextlib
import json
import os
import re
import stat
import struct
import tempfile
import time
import zipfile

try:
    import fcntl
except ImportError:        # Windows: there, stale temporaries are recognised by their age
    fcntl = None

import numpy

from .tensor import Tensor
from . import backend
from .errors import UserError

__all__ = ["save", "load", "SerializationError", "atomic_write", "atomic_path", "remove_stale_temporaries"]

MANIFEST_KEY = "__oar_manifest__"
FORMAT_VERSION = 1

_SAFETENSORS_DTYPES = {"BOOL": numpy.bool_, "U8": numpy.uint8, "I8": numpy.int8, "U16": numpy.uint16,
                       "I16": numpy.int16, "U32": numpy.uint32, "I32": numpy.int32, "U64": numpy.uint64,
                       "I64": numpy.int64, "F16": numpy.float16, "F32": numpy.float32, "F64": numpy.float64}
_SAFETENSORS_CODES = {numpy.dtype(v): k for k, v in _SAFETENSORS_DTYPES.items()}


class SerializationError(UserError, ValueError):
    """A file cannot be read as a checkpoint, or an object cannot be saved; the message names the path or key."""


# ---- structure <-> manifest ----------------------------------------------------
def _as_array(value):
    """A NumPy array for Tensors, NumPy and CuPy arrays; None for anything else."""
    if isinstance(value, Tensor):
        return value.numpy()
    if isinstance(value, numpy.ndarray):
        return value
    if hasattr(value, "__cuda_array_interface__"):
        return backend.to_device(value, "cpu")
    return None


def _flatten(obj, path, arrays, separator):
    """The manifest node of ``obj``; arrays go into ``arrays`` under a unique name
    (the path joined by ``separator``), which the node records."""
    array = _as_array(obj)
    if array is not None:
        if array.dtype.hasobject:
            raise SerializationError(f"save: {_show(path)} is an object array, which cannot be saved "
                                     "without pickle; convert it to a numeric array")
        name = _unique_name(separator.join(path) or "_", arrays)
        arrays[name] = array
        return {"array": name}
    if isinstance(obj, dict):
        items = []
        for key, value in obj.items():
            if not isinstance(key, (str, int)) or isinstance(key, bool):
                raise SerializationError(f"save: dict key {key!r} at {_show(path)} must be a str or int")
            items.append([key, _flatten(value, path + (str(key),), arrays, separator)])
        return {"dict": items}
    if isinstance(obj, (list, tuple)):
        return {"list": [_flatten(v, path + (str(i),), arrays, separator) for i, v in enumerate(obj)]}
    if isinstance(obj, numpy.generic):
        obj = obj.item()
    if obj is None or isinstance(obj, (bool, int, float, str)):
        return {"value": obj}
    raise SerializationError(f"save: {_show(path)} is a {type(obj).__name__}; only dicts, lists, arrays, "
                             "Tensors, numbers, strings, bools and None can be saved")


def _unique_name(base, taken):
    """``base``, or ``base#k`` when it collides with a taken or reserved name (a key
    containing the separator can make two paths join to the same name)."""
    name, k = base, 1
    while name in taken or name in (MANIFEST_KEY, "__metadata__"):
        name, k = f"{base}#{k}", k + 1
    return name


def _show(path):
    return "'" + "/".join(path) + "'" if path else "the top-level object"


def _rebuild(node, arrays):
    """The object described by manifest ``node``; ``arrays`` maps names to arrays."""
    if "array" in node:
        return arrays[node["array"]]
    if "dict" in node:
        return {key: _rebuild(value, arrays) for key, value in node["dict"]}
    if "list" in node:
        return [_rebuild(value, arrays) for value in node["list"]]
    return node["value"]


# ---- writing -------------------------------------------------------------------
def save(obj, path):
    """Write ``obj`` (nested dicts/lists of Tensors, arrays and scalars) to ``path``.

    ``path`` ending in ``.safetensors`` selects safetensors, anything else
    ``.npz``; the path is used exactly as given. The file is replaced
    atomically: readers see the old file or the complete new one.
    """
    path = os.fspath(path)
    safetensors = _is_safetensors(path)
    arrays = {}
    tree = _flatten(obj, (), arrays, "." if safetensors else "/")
    manifest = json.dumps({"format": "oar", "version": FORMAT_VERSION, "tree": tree})
    writer = _write_safetensors if safetensors else _write_npz
    with atomic_write(path, "wb") as f:
        writer(f, arrays, manifest)


def _is_safetensors(path):
    return path.lower().endswith(".safetensors")


# ---- atomic files ----------------------------------------------------------------
# A temporary file is ``.<name>.<8 random characters>.tmp`` beside its target. Its writer holds an
# exclusive flock on it until the rename, so a temporary that nobody holds was left by a killed writer.
_TEMPORARY = re.compile(r"^\.(?P<name>.+)\.[a-z0-9_]{8}\.tmp$")
_UNLOCKED_AGE = 3600.0           # without fcntl: a temporary older than this (seconds) counts as stale


def _umask():
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o077)       # the brief change is restrictive, never permissive
    os.umask(mask)
    return mask


def _new_temporary(path):
    """(fd, name) of a new temporary file beside ``path``, flocked through ``fd``, with the mode
    ``open(path, "w")`` would give it (the old file's, else ``0o666`` less the umask)."""
    directory = os.path.dirname(os.path.abspath(path))
    while True:
        fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(path)}.", suffix=".tmp", dir=directory)
        if fcntl is None:
            break
        fcntl.flock(fd, fcntl.LOCK_EX)
        if os.fstat(fd).st_nlink:
            break
        os.close(fd)             # a cleaner took it for stale between mkstemp and the lock: take another name
    try:
        try:
            mode = stat.S_IMODE(os.stat(path).st_mode)
        except OSError:
            mode = 0o666 & ~_umask()
        os.chmod(tmp, mode)
    except BaseException:
        _discard(fd, tmp)
        raise
    return fd, tmp


def _discard(fd, tmp):
    """Remove the temporary ``tmp`` (still locked through ``fd``), then close ``fd``."""
    try:
        if os.path.exists(tmp):
            os.remove(tmp)
    finally:
        os.close(fd)


@contextlib.contextmanager
def atomic_write(path, mode="w", encoding="utf-8", newline=None, durable=True):
    """Write ``path`` all at once: a context manager giving a file object on a temporary file beside it.

    On a clean exit the file is flushed, fsynced (``durable``) and renamed over
    ``path`` (``os.replace``), so readers see the old file or the complete new one,
    never half a file; on an exception the temporary is removed and ``path`` is
    untouched. ``mode`` is ``"w"`` (text, ``encoding`` and ``newline`` as in
    ``open``) or ``"wb"``. The new file gets the permissions ``open`` would give
    it. A write killed midway leaves only a temporary ``.<name>.<random>.tmp``,
    which :func:`remove_stale_temporaries` recognises.

    ``with atomic_write("out/vocab.txt") as f: f.write(text)``
    """
    if mode not in ("w", "wb"):
        raise ValueError(f"atomic_write: mode must be 'w' or 'wb', got {mode!r}")
    options = {} if mode == "wb" else {"encoding": encoding, "newline": newline}
    with atomic_path(path, durable) as tmp, open(tmp, mode, **options) as f:
        yield f


@contextlib.contextmanager
def atomic_path(path, durable=True):
    """:func:`atomic_write` for writers that open a file by name (a video muxer, an external tool):
    yields the name of an empty temporary file beside ``path`` to write to, renamed over ``path``
    on a clean exit and removed on an exception."""
    path = os.fspath(path)
    fd, tmp = _new_temporary(path)
    try:
        yield tmp
        if durable:
            with open(tmp, "rb") as f:
                os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        _discard(fd, tmp)
        raise
    os.close(fd)
    if durable:
        _fsync_directory(os.path.dirname(os.path.abspath(path)))


def _fsync_directory(directory):
    """Make the rename durable where the platform allows opening a directory."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def remove_stale_temporaries(directory, name=None):
    """Remove the temporaries of :func:`atomic_write` / :func:`atomic_path` in ``directory`` (those of
    the file ``name`` only, when given) that no live process is writing: left by a killed write.
    A temporary being written is never touched. Returns the removed paths, sorted."""
    try:
        entries = os.listdir(directory)
    except OSError:
        return []
    removed = []
    for entry in sorted(entries):
        match = _TEMPORARY.match(entry)
        if match is None or (name is not None and match.group("name") != name):
            continue
        candidate = os.path.join(directory, entry)
        if _remove_if_unlocked(candidate):
            removed.append(candidate)
    return removed


def _remove_if_unlocked(candidate):
    try:
        fd = os.open(candidate, os.O_RDONLY)
    except OSError:
        return False
    try:
        if fcntl is None:
            if time.time() - os.fstat(fd).st_mtime < _UNLOCKED_AGE:
                return False
        else:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                return False     # its writer is alive
        held, now = os.fstat(fd), os.stat(candidate)
        if (held.st_ino, held.st_dev) != (now.st_ino, now.st_dev) or not stat.S_ISREG(now.st_mode):
            return False
        os.unlink(candidate)
        return True
    except OSError:
        return False             # renamed into place or removed meanwhile
    finally:
        os.close(fd)


def _write_npz(f, arrays, manifest):
    """An uncompressed ``.npz`` (as ``numpy.savez``) with the manifest as a uint8 member."""
    members = dict(arrays)
    members[MANIFEST_KEY] = numpy.frombuffer(manifest.encode("utf-8"), dtype=numpy.uint8)
    with zipfile.ZipFile(f, "w", compression=zipfile.ZIP_STORED, allowZip64=True) as archive:
        for name, array in members.items():
            with archive.open(name + ".npy", "w", force_zip64=True) as member:
                numpy.lib.format.write_array(member, numpy.asarray(array), allow_pickle=False)


def _write_safetensors(f, arrays, manifest):
    header, offset, blobs = {}, 0, []
    for name, array in arrays.items():
        code = _SAFETENSORS_CODES.get(array.dtype.newbyteorder("="))
        if code is None:
            raise SerializationError(f"save: array {name!r} has dtype {array.dtype}, which safetensors "
                                     f"cannot hold (supported: {', '.join(sorted(_SAFETENSORS_DTYPES))})")
        blob = numpy.ascontiguousarray(array, dtype=array.dtype.newbyteorder("<")).tobytes()
        header[name] = {"dtype": code, "shape": list(array.shape), "data_offsets": [offset, offset + len(blob)]}
        blobs.append(blob)
        offset += len(blob)
    header["__metadata__"] = {MANIFEST_KEY: manifest}
    text = json.dumps(header).encode("utf-8")
    text += b" " * (-len(text) % 8)  # the data starts 8-byte aligned
    f.write(struct.pack("<Q", len(text)))
    f.write(text)
    for blob in blobs:
        f.write(blob)


# ---- reading -------------------------------------------------------------------
def load(path, return_numpy=True):
    """Read a file written by :func:`save` (or a plain ``.npz``/safetensors file).

    Returns the saved structure with NumPy arrays (``return_numpy=False``:
    Tensors on the current device) and the scalars restored. A file that is
    truncated, corrupt, pickled or not a checkpoint raises SerializationError
    naming the path; nothing in the file is ever executed.
    """
    path = os.fspath(path)
    with open(path, "rb") as f:
        magic = f.read(4)
    if magic.startswith(b"PK"):
        arrays, manifest = _read_npz(path)
    elif _is_safetensors(path):
        arrays, manifest = _read_safetensors(path)
    else:
        raise SerializationError(f"load: {path} is not a checkpoint: expected an .npz archive or a "
                                 ".safetensors file (pickled files are never loaded)")
    if not return_numpy:
        arrays = {k: Tensor(backend.array_module().asarray(a)) for k, a in arrays.items()}
    if manifest is None:
        return arrays
    try:
        return _rebuild(manifest["tree"], arrays)
    except (KeyError, TypeError, ValueError) as err:
        raise SerializationError(f"load: {path} has a damaged manifest ({err!r})") from None


def _parse_manifest(text, path):
    try:
        manifest = json.loads(text)
    except (ValueError, RecursionError) as err:        # deep nesting recurses
        raise SerializationError(f"load: {path} has a damaged manifest ({err})") from None
    if not isinstance(manifest, dict) or manifest.get("format") != "oar" or "tree" not in manifest:
        raise SerializationError(f"load: {path} has a manifest that oar did not write")
    if manifest.get("version", 0) > FORMAT_VERSION:
        raise SerializationError(f"load: {path} was written by a newer version (format "
                                 f"{manifest['version']} > {FORMAT_VERSION})")
    return manifest


def _read_npz(path):
    arrays, manifest, key = {}, None, None
    try:
        with numpy.load(path, allow_pickle=False) as archive:
            for key in archive.files:
                value = archive[key]
                if key == MANIFEST_KEY:
                    manifest = _parse_manifest(value.tobytes().decode("utf-8"), path)
                else:
                    arrays[key] = value
    except SerializationError:
        raise
    except ValueError as err:
        if "allow_pickle" in str(err) or "pickle" in str(err).lower():
            raise SerializationError(f"load: {path}: member {key!r} is an object array, which would need "
                                     "unpickling; refusing to load it") from None
        raise SerializationError(f"load: {path} is corrupt or truncated ({err})") from None
    except (zipfile.BadZipFile, OSError, EOFError, KeyError, UnicodeDecodeError) as err:
        raise SerializationError(f"load: {path} is corrupt or truncated ({err})") from None
    return arrays, manifest


def _read_safetensors(path):
    with open(path, "rb") as f:
        raw = f.read()
    if len(raw) < 8:
        raise SerializationError(f"load: {path} is truncated (no safetensors header)")
    (length,) = struct.unpack("<Q", raw[:8])
    if 8 + length > len(raw):
        raise SerializationError(f"load: {path} is truncated: the header says {length} bytes, "
                                 f"the file has {len(raw) - 8} after the length")
    try:
        header = json.loads(raw[8:8 + length].decode("utf-8"))
    except (ValueError, UnicodeDecodeError, RecursionError) as err:
        raise SerializationError(f"load: {path} has a corrupt safetensors header ({err})") from None
    if not isinstance(header, dict):
        raise SerializationError(f"load: {path} has a corrupt safetensors header (not a JSON object)")
    metadata = header.pop("__metadata__", None) or {}
    data = memoryview(raw)[8 + length:]
    arrays = {name: _safetensors_array(name, entry, data, path) for name, entry in header.items()}
    manifest = _parse_manifest(metadata[MANIFEST_KEY], path) if MANIFEST_KEY in metadata else None
    return arrays, manifest


def _safetensors_array(name, entry, data, path):
    """One tensor of a safetensors file, checked against the header and copied out."""
    try:
        dtype = numpy.dtype(_SAFETENSORS_DTYPES[entry["dtype"]]).newbyteorder("<")
        shape = tuple(int(n) for n in entry["shape"])
        begin, end = (int(n) for n in entry["data_offsets"])
    except KeyError as err:
        raise SerializationError(f"load: {path}: tensor {name!r} has an unsupported or missing field "
                                 f"{err} in its header entry {entry!r}") from None
    except (TypeError, ValueError):
        raise SerializationError(f"load: {path}: tensor {name!r} has a malformed header entry {entry!r}") from None
    expected = int(numpy.prod(shape)) * dtype.itemsize
    if not 0 <= begin <= end <= len(data) or end - begin != expected:
        raise SerializationError(f"load: {path} is truncated or corrupt: tensor {name!r} {shape} "
                                 f"{entry['dtype']} needs bytes [{begin}, {begin + expected}) of a "
                                 f"{len(data)}-byte buffer (header says [{begin}, {end}))")
    return numpy.frombuffer(data[begin:end], dtype=dtype).reshape(shape).astype(dtype.newbyteorder("="))
