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
They live in :mod:`framework.atomic` (which imports no Tensor) and are
re-exported here.
"""
import json
import os
import struct
import zipfile

import numpy

from .tensor import Tensor
from . import backend
from .atomic import atomic_path, atomic_write, remove_stale_temporaries
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
