"""Read PaddlePaddle's persisted parameter files with NumPy only (no paddle import).

A persisted ``LoDTensor`` (what ``fluid.io.save_params`` /
``save_inference_model`` write, one file per parameter, or all of them
concatenated in a combined ``__params__`` file) is, little-endian:

====================  ===============================  ===========================
field                 type                             note
====================  ===============================  ===========================
LoDTensor version     uint32                           must be 0
lod_level             uint64
per level             uint64 nbytes, uint64[nbytes/8]  the level's offsets
Tensor version        uint32                           must be 0
desc_size             int32
TensorDesc            protobuf, desc_size bytes        field 1 dtype (varint),
                                                       field 2 dims (repeated int64)
data                  prod(dims) * itemsize bytes      C order
====================  ===============================  ===========================

The data types are Paddle's ``VarType`` enum (:data:`PADDLE_DTYPES`). NumPy
has no bfloat16, so BF16 data comes back widened to float32 (exactly).
Every failure raises :class:`PaddleFormatError` naming the file.
"""
import os
import struct

import numpy

from .serialization import SerializationError

__all__ = ["PaddleFormatError", "PADDLE_DTYPES", "parse_tensor_desc", "read_paddle_tensor", "read_paddle_tensors",
           "load_paddle_params", "load_combined_params"]

#: Paddle ``VarType`` code -> NumPy dtype (BF16 is read as uint16 bits, then widened to float32).
PADDLE_DTYPES = {0: numpy.dtype(numpy.bool_), 1: numpy.dtype("<i2"), 2: numpy.dtype("<i4"),
                 3: numpy.dtype("<i8"), 4: numpy.dtype("<f2"), 5: numpy.dtype("<f4"), 6: numpy.dtype("<f8"),
                 19: numpy.dtype("<u8"), 20: numpy.dtype(numpy.uint8), 21: numpy.dtype(numpy.int8),
                 22: numpy.dtype("<u2"), 23: numpy.dtype("<c8"), 24: numpy.dtype("<c16")}
_BF16 = 22
_MAX_DESC = 1 << 16


class PaddleFormatError(SerializationError):
    """A file is not a valid persisted Paddle tensor; the message names the file and what is wrong."""


class _Reader:
    """Sequential reads from a binary file object; a short read raises PaddleFormatError naming ``name``."""

    def __init__(self, stream, name):
        self.stream, self.name = stream, name

    def read(self, size, what):
        data = self.stream.read(size)
        if len(data) != size:
            raise PaddleFormatError(f"{self.name}: truncated while reading {what} "
                                    f"(needed {size} bytes, got {len(data)})")
        return data

    def unpack(self, fmt, what):
        return struct.unpack(fmt, self.read(struct.calcsize(fmt), what))[0]

    def remaining(self):
        """Bytes left in a seekable stream; None when the stream cannot tell."""
        try:
            position = self.stream.tell()
            end = self.stream.seek(0, os.SEEK_END)
            self.stream.seek(position)
        except (OSError, AttributeError, ValueError):
            return None
        return end - position

    def at_end(self):
        """True when no byte is left."""
        return not self.stream.read(1)


def _varint(desc, pos, name):
    """(value, next position) of the protobuf varint at ``desc[pos]``, as a signed int64."""
    value, shift = 0, 0
    while True:
        if pos >= len(desc) or shift > 63:
            raise PaddleFormatError(f"{name}: malformed TensorDesc (bad varint at byte {pos})")
        byte = desc[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            break
    if value >= 1 << 63:
        value -= 1 << 64
    return value, pos


def parse_tensor_desc(desc, name="<TensorDesc>"):
    """(dtype code, dims list) from the bytes of a serialised ``VarType.TensorDesc``.

    Field 1 is the data type (varint); field 2 the dims, unpacked (one varint
    per dim) or packed (one length-delimited run). Other fields are skipped.
    """
    dtype, dims, pos = None, [], 0
    while pos < len(desc):
        key, pos = _varint(desc, pos, name)
        field, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = _varint(desc, pos, name)
            if field == 1:
                dtype = value
            elif field == 2:
                dims.append(value)
        elif wire == 2:
            size, pos = _varint(desc, pos, name)
            if size < 0 or pos + size > len(desc):
                raise PaddleFormatError(f"{name}: malformed TensorDesc (field {field} runs past the end)")
            if field == 2:
                end, pos_in = pos + size, pos
                while pos_in < end:
                    value, pos_in = _varint(desc, pos_in, name)
                    dims.append(value)
            pos += size
        elif wire in (1, 5):
            pos += 8 if wire == 1 else 4
        else:
            raise PaddleFormatError(f"{name}: malformed TensorDesc (unsupported wire type {wire})")
    if pos != len(desc):
        raise PaddleFormatError(f"{name}: malformed TensorDesc (runs past its {len(desc)} bytes)")
    if dtype is None:
        raise PaddleFormatError(f"{name}: TensorDesc has no data type")
    return dtype, dims


def _read_record(reader, with_lod):
    """One persisted LoDTensor from ``reader``: the array, or (array, lod) when ``with_lod``."""
    name = reader.name
    version = reader.unpack("<I", "the LoDTensor version")
    if version != 0:
        raise PaddleFormatError(f"{name}: unsupported LoDTensor version {version} (expected 0)")
    lod_level = reader.unpack("<Q", "the LoD level")
    if lod_level > 64:
        raise PaddleFormatError(f"{name}: implausible LoD level {lod_level}; not a Paddle tensor file")
    lod = []
    for level in range(lod_level):
        nbytes = reader.unpack("<Q", f"the size of LoD level {level}")
        if nbytes % 8:
            raise PaddleFormatError(f"{name}: LoD level {level} has {nbytes} bytes, not a multiple of 8")
        lod.append(numpy.frombuffer(reader.read(nbytes, f"LoD level {level}"), dtype="<u8").tolist())
    version = reader.unpack("<I", "the Tensor version")
    if version != 0:
        raise PaddleFormatError(f"{name}: unsupported Tensor version {version} (expected 0)")
    desc_size = reader.unpack("<i", "the TensorDesc size")
    if not 0 < desc_size <= _MAX_DESC:
        raise PaddleFormatError(f"{name}: implausible TensorDesc size {desc_size}; not a Paddle tensor file")
    code, dims = parse_tensor_desc(reader.read(desc_size, "the TensorDesc"), name)
    if code not in PADDLE_DTYPES:
        raise PaddleFormatError(f"{name}: unknown Paddle data type {code} "
                                f"(known: {', '.join(str(c) for c in sorted(PADDLE_DTYPES))})")
    if any(d < 0 for d in dims):
        raise PaddleFormatError(f"{name}: negative dimension in shape {dims}")
    dtype = PADDLE_DTYPES[code]
    count = int(numpy.prod(dims, dtype=numpy.int64)) if dims else 1
    nbytes = count * dtype.itemsize
    remaining = reader.remaining()
    data = reader.stream.read(nbytes) if remaining is None or remaining >= nbytes else b""
    if len(data) != nbytes:
        held = len(data) if remaining is None else remaining
        raise PaddleFormatError(f"{name}: truncated data: shape {tuple(dims)} of data type {code} needs "
                                f"{nbytes} bytes, the file holds {held}")
    array = numpy.frombuffer(data, dtype=dtype).reshape(dims).copy()
    if code == _BF16:
        array = (array.astype(numpy.uint32) << 16).view(numpy.float32)
    array = array.astype(array.dtype.newbyteorder("="), copy=False)
    return (array, lod) if with_lod else array


def _open(source):
    """(binary stream, display name, whether to close it) for a path or a binary file object."""
    if isinstance(source, (str, os.PathLike)):
        try:
            return open(source, "rb"), os.fspath(source), True
        except OSError as err:
            raise PaddleFormatError(f"cannot open Paddle tensor file {os.fspath(source)}: {err}") from None
    if not hasattr(source, "read"):
        raise TypeError(f"read_paddle_tensor: expected a path or a binary file object, got {type(source).__name__}")
    return source, getattr(source, "name", "<stream>"), False


def read_paddle_tensor(source, with_lod=False):
    """The array stored in one persisted Paddle tensor file.

    Args:
        source: a path or a binary file object positioned at a record.
        with_lod: also return the LoD (a list of levels, each a list of int offsets).

    Returns:
        A NumPy array of the stored shape and dtype (see :data:`PADDLE_DTYPES`),
        or ``(array, lod)``. A path must hold exactly one record (trailing bytes
        are an error); a stream is left just after the record.
    """
    stream, name, owned = _open(source)
    try:
        reader = _Reader(stream, name)
        result = _read_record(reader, with_lod)
        if owned and not reader.at_end():
            raise PaddleFormatError(f"{name}: unexpected bytes after the tensor data; "
                                    "is this a combined __params__ file? (use load_combined_params)")
        return result
    finally:
        if owned:
            stream.close()


def read_paddle_tensors(source, count):
    """The ``count`` records stored one after another in ``source`` (a path or binary stream), as a list."""
    stream, name, owned = _open(source)
    try:
        reader = _Reader(stream, name)
        arrays = [_read_record(reader, False) for _ in range(count)]
        if owned and not reader.at_end():
            raise PaddleFormatError(f"{name}: unexpected bytes after {count} records")
        return arrays
    finally:
        if owned:
            stream.close()


def load_paddle_params(model_dir, names=None):
    """``{name: array}`` from a folder holding one persisted tensor file per parameter.

    ``names`` selects the files (missing ones are an error naming them);
    by default every regular file in the folder except ``__model__`` and
    ``__params__`` and hidden files is read.
    """
    if not os.path.isdir(model_dir):
        raise PaddleFormatError(f"{model_dir}: not a folder of Paddle parameter files")
    if names is None:
        names = sorted(f for f in os.listdir(model_dir) if not f.startswith((".", "__"))
                       and os.path.isfile(os.path.join(model_dir, f)))
    missing = [n for n in names if not os.path.isfile(os.path.join(model_dir, n))]
    if missing:
        raise PaddleFormatError(f"{model_dir}: missing parameter file(s) {', '.join(missing)}")
    return {n: read_paddle_tensor(os.path.join(model_dir, n)) for n in names}


def load_combined_params(path, names):
    """``{name: array}`` from a combined ``__params__`` file.

    The file holds no names: it is the records of the parameters in sorted-name
    order (as ``save_inference_model(params_filename=...)`` writes them), so
    the caller gives the parameter ``names`` (any order).
    """
    ordered = sorted(names)
    return dict(zip(ordered, read_paddle_tensors(path, len(ordered))))
