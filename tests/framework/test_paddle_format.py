"""framework.paddle_format: hand-built persisted Paddle tensors read back, clear errors, the real lac_model files."""
import io
import os
import struct

import numpy
import pytest

from framework.paddle_format import (PaddleFormatError, load_combined_params, load_paddle_params,
                                     parse_tensor_desc, read_paddle_tensor, read_paddle_tensors)

CODES = {numpy.dtype(numpy.bool_): 0, numpy.dtype("int16"): 1, numpy.dtype("int32"): 2, numpy.dtype("int64"): 3,
         numpy.dtype("float16"): 4, numpy.dtype("float32"): 5, numpy.dtype("float64"): 6,
         numpy.dtype("uint64"): 19, numpy.dtype("uint8"): 20, numpy.dtype("int8"): 21,
         numpy.dtype("complex64"): 23, numpy.dtype("complex128"): 24}


def varint(value):
    """Protobuf varint bytes of a (possibly negative, two's complement) int64."""
    value &= (1 << 64) - 1
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


def desc_bytes(code, dims, packed=False, extra=b""):
    """A serialised TensorDesc: field 1 dtype, field 2 dims (unpacked or packed)."""
    desc = b"\x08" + varint(code)
    if packed:
        body = b"".join(varint(d) for d in dims)
        desc += b"\x12" + varint(len(body)) + body
    else:
        desc += b"".join(b"\x10" + varint(d) for d in dims)
    return desc + extra


def record(array, lod=(), code=None, packed=False, lod_version=0, tensor_version=0, extra=b""):
    """The bytes Paddle's SerializeToStream writes for ``array`` with LoD levels ``lod``."""
    array = numpy.asarray(array)
    out = struct.pack("<I", lod_version) + struct.pack("<Q", len(lod))
    for level in lod:
        out += struct.pack("<Q", 8 * len(level)) + struct.pack(f"<{len(level)}Q", *level)
    desc = desc_bytes(CODES[array.dtype] if code is None else code, array.shape, packed, extra)
    out += struct.pack("<I", tensor_version) + struct.pack("<i", len(desc)) + desc
    return out + array.astype(array.dtype.newbyteorder("<")).tobytes()


def write(tmp_path, name, data):
    path = tmp_path / name
    path.write_bytes(data)
    return str(path)


@pytest.mark.parametrize("array", [
    numpy.arange(12, dtype="float32").reshape(3, 4) / 7,
    numpy.array([[1.5, -2.25]], dtype="float64"),
    numpy.array([-7, 0, 2 ** 40], dtype="int64"),
    numpy.arange(-3, 3, dtype="int32").reshape(2, 1, 3),
    numpy.array([1, -2], dtype="int16"),
    numpy.array([0.5, -1.0, 65504.0], dtype="float16"),
    numpy.array([True, False, True]),
    numpy.array([0, 255], dtype="uint8"),
    numpy.array([-128, 127], dtype="int8"),
    numpy.array([2 ** 63], dtype="uint64"),
    numpy.array([1 + 2j, -0.5j], dtype="complex64"),
    numpy.array([[3 - 1j]], dtype="complex128"),
    numpy.float32(4.0).reshape(()),
    numpy.zeros((0, 5), dtype="float32"),
])
def test_round_trip_dtypes_and_shapes(tmp_path, array):
    path = write(tmp_path, "p", record(array))
    got = read_paddle_tensor(path)
    assert got.dtype == array.dtype and got.shape == array.shape
    numpy.testing.assert_array_equal(got, array)
    assert got.flags.writeable


def test_lod_levels_and_packed_dims(tmp_path):
    array = numpy.arange(10, dtype="int64").reshape(5, 2)
    lod = [[0, 2, 5], [0, 1, 2, 4, 5]]
    got, got_lod = read_paddle_tensor(write(tmp_path, "lod", record(array, lod, packed=True)), with_lod=True)
    numpy.testing.assert_array_equal(got, array)
    assert got_lod == lod
    assert read_paddle_tensor(write(tmp_path, "nolod", record(array)), with_lod=True)[1] == []


def test_unknown_desc_fields_are_skipped():
    desc = desc_bytes(5, [3, 4], extra=b"\x18\x07" + b"\x22\x02ab" + b"\x2d\x00\x00\x00\x00")
    assert parse_tensor_desc(desc) == (5, [3, 4])


def test_bfloat16_is_widened_to_float32(tmp_path):
    values = numpy.array([1.0, -2.5, 3.140625], dtype="float32")
    bits = (values.view(numpy.uint32) >> 16).astype("<u2")
    got = read_paddle_tensor(write(tmp_path, "bf16", record(bits, code=22)))
    assert got.dtype == numpy.float32
    numpy.testing.assert_array_equal(got, values)


def test_stream_reads_consecutive_records_and_combined_params(tmp_path):
    a, b, c = numpy.ones((2, 2), "float32"), numpy.arange(3, dtype="int64"), numpy.zeros(1, "float64")
    stream = io.BytesIO(record(a) + record(b))
    numpy.testing.assert_array_equal(read_paddle_tensor(stream), a)
    numpy.testing.assert_array_equal(read_paddle_tensor(stream), b)
    assert [x.shape for x in read_paddle_tensors(io.BytesIO(record(a) + record(b)), 2)] == [(2, 2), (3,)]
    # a combined __params__ file holds the records in sorted-name order
    path = write(tmp_path, "__params__", record(c) + record(a) + record(b))
    params = load_combined_params(path, ["w", "b_0", "emb"])
    numpy.testing.assert_array_equal(params["b_0"], c)
    numpy.testing.assert_array_equal(params["emb"], a)
    numpy.testing.assert_array_equal(params["w"], b)
    with pytest.raises(PaddleFormatError, match="unexpected bytes after 2 records"):
        load_combined_params(path, ["x", "y"])


def test_load_paddle_params_folder(tmp_path):
    write(tmp_path, "fc_0.w_0", record(numpy.ones((2, 3), "float32")))
    write(tmp_path, "fc_0.b_0", record(numpy.zeros(3, "float32")))
    write(tmp_path, "__model__", b"not a tensor")
    params = load_paddle_params(str(tmp_path))
    assert sorted(params) == ["fc_0.b_0", "fc_0.w_0"]
    assert params["fc_0.w_0"].shape == (2, 3)
    with pytest.raises(PaddleFormatError, match="missing parameter file.*gru_0.w_0"):
        load_paddle_params(str(tmp_path), ["fc_0.w_0", "gru_0.w_0"])


@pytest.mark.parametrize("data, message", [
    (record(numpy.ones((4, 4), "float32"))[:-3], "truncated data: shape \\(4, 4\\).*needs 64 bytes.*holds 61"),
    (record(numpy.ones(2, "float32"))[:14], "truncated while reading the Tensor version"),
    (record(numpy.ones(2, "float32"), lod=[[0, 2]])[:16], "truncated while reading the size of LoD level 0"),
    (b"", "truncated while reading the LoDTensor version"),
    (record(numpy.ones(2, "float32"), lod_version=1), "unsupported LoDTensor version 1"),
    (record(numpy.ones(2, "float32"), tensor_version=3), "unsupported Tensor version 3"),
    (record(numpy.ones(2, "float32"), code=17), "unknown Paddle data type 17"),
    (record(numpy.ones(2, "float32")) + b"\0", "unexpected bytes after the tensor data"),
    (struct.pack("<IQIi", 0, 0, 0, 2) + b"\x08\x85", "malformed TensorDesc"),
    (struct.pack("<IQIi", 0, 0, 0, 2) + b"\x10\x02", "TensorDesc has no data type"),
    (struct.pack("<IQIi", 0, 0, 0, -5), "implausible TensorDesc size -5"),
    (struct.pack("<IQIi", 0, 0, 0, 9) + desc_bytes(5, [1 << 40]), "needs 4398046511104 bytes, the file holds 0"),
])
def test_damaged_files_raise_errors_naming_the_file(tmp_path, data, message):
    path = write(tmp_path, "damaged_param", data)
    with pytest.raises(PaddleFormatError, match=message) as info:
        read_paddle_tensor(path)
    assert path in str(info.value)


def test_missing_file_and_wrong_source_type(tmp_path):
    with pytest.raises(PaddleFormatError, match="cannot open"):
        read_paddle_tensor(str(tmp_path / "absent"))
    with pytest.raises(TypeError, match="path or a binary file object"):
        read_paddle_tensor(42)


def test_real_lac_model_shapes():
    from nlp.lac.official import official_model_dir
    params = load_paddle_params(os.path.join(official_model_dir(), "model"))
    shapes = {name: array.shape for name, array in params.items()}
    expected = {"word_emb": (58224, 128), "crfw": (51, 49), "fc_4.w_0": (256, 49), "fc_4.b_0": (49,)}
    for k in range(4):
        expected.update({f"fc_{k}.w_0": (128 if k < 2 else 256, 384), f"fc_{k}.b_0": (384,),
                         f"gru_{k}.w_0": (128, 384), f"gru_{k}.b_0": (1, 384)})
    assert shapes == expected
    assert all(a.dtype == numpy.float32 for a in params.values())
    assert sum(a.size for a in params.values()) == 7962356
    # LAC's CRF: a word cannot start inside a noun (start score of n-I far below n-B)
    assert params["crfw"][0, 15] < -10 < params["crfw"][0, 14]
