"""framework.save / framework.load: round trips in both formats, the safetensors layout,
no unpickling, atomic writes and clear errors for damaged files."""
import json
import os
import pickle
import struct
import zipfile

import numpy
import pytest

import framework
from framework import nn, serialization
from framework.serialization import SerializationError

FORMATS = ["ckpt.npz", "ckpt.safetensors"]


def sample():
    rng = numpy.random.default_rng(0)
    return {
        "model": {"layer1.0.conv1.weight": rng.standard_normal((2, 3, 3, 3)).astype("float32"),
                  "half": rng.standard_normal(5).astype("float16"),
                  "double": rng.standard_normal((2, 2)),
                  "ids": numpy.arange(6, dtype="int64").reshape(2, 3),
                  "small": numpy.array([-3, 4], dtype="int8"),
                  "bytes": numpy.array([0, 255], dtype="uint8"),
                  "i32": numpy.array(7, dtype="int32"),
                  "mask": numpy.array([True, False, True]),
                  "tensor": framework.to_tensor([[1.0, 2.0]]),
                  "a/b": numpy.zeros((0, 3), "float32")},
        "optimizer": {"step": 12, "lr": 1e-3, "groups": [{"lr": 0.1, "momentum": None}, {"nesterov": True}],
                      0: numpy.ones(2, "float32")},
        "epoch": 3, "name": "bigru_crf", "best": float("inf"), "numpy_scalar": numpy.float32(0.5),
        "shape": (4, 5),
        "__metadata__": numpy.ones(1, "float32"), "x": {"y": numpy.zeros(1)}, "x.y": numpy.ones(1),
    }


def assert_same(loaded, original):
    if isinstance(original, dict):
        assert list(loaded) == list(original)
        for key in original:
            assert_same(loaded[key], original[key])
    elif isinstance(original, (list, tuple)):
        assert isinstance(loaded, list) and len(loaded) == len(original)
        for a, b in zip(loaded, original):
            assert_same(a, b)
    elif isinstance(original, (numpy.ndarray, framework.Tensor)):
        expected = original.numpy() if isinstance(original, framework.Tensor) else original
        assert isinstance(loaded, numpy.ndarray)
        assert loaded.dtype == expected.dtype and loaded.shape == expected.shape
        numpy.testing.assert_array_equal(loaded, expected)
    else:
        expected = original.item() if isinstance(original, numpy.generic) else original
        assert type(loaded) is type(expected) and loaded == expected


@pytest.mark.parametrize("name", FORMATS)
def test_round_trip(tmp_path, name):
    path = tmp_path / name
    framework.save(sample(), path)
    assert_same(framework.load(path), sample())
    assert os.listdir(tmp_path) == [name]


@pytest.mark.parametrize("name", FORMATS)
def test_return_tensors(tmp_path, name):
    framework.save({"w": numpy.ones((2, 2), "float32"), "n": 1}, tmp_path / name)
    loaded = framework.load(str(tmp_path / name), return_numpy=False)
    assert isinstance(loaded["w"], framework.Tensor) and loaded["w"].shape == (2, 2) and loaded["n"] == 1


@pytest.mark.parametrize("name", FORMATS)
def test_model_state_dict_round_trip(tmp_path, name):
    def model():
        return nn.Sequential(nn.Linear(4, 3), nn.Linear(3, 2))

    framework.seed(0)
    source = model()
    framework.save(source.state_dict(), tmp_path / name)
    framework.seed(1)
    target = model()
    target.set_state_dict(framework.load(tmp_path / name))
    x = framework.to_tensor(numpy.ones((2, 4), "float32"))
    numpy.testing.assert_array_equal(target(x).numpy(), source(x).numpy())


def test_safetensors_layout(tmp_path):
    path = tmp_path / "w.safetensors"
    weight = numpy.arange(6, dtype="float32").reshape(2, 3)
    framework.save({"enc": {"w": weight, "b": numpy.array([1, 2], "int64")}, "step": 5}, path)
    raw = path.read_bytes()
    (length,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + length])
    assert (8 + length) % 8 == 0
    assert header["enc.w"] == {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 24]}
    assert header["enc.b"] == {"dtype": "I64", "shape": [2], "data_offsets": [24, 40]}
    assert isinstance(header["__metadata__"][serialization.MANIFEST_KEY], str)
    data = raw[8 + length:]
    assert len(data) == 40
    numpy.testing.assert_array_equal(numpy.frombuffer(data[:24], "<f4").reshape(2, 3), weight)


def test_foreign_files_load_flat(tmp_path):
    header = json.dumps({"x.y": {"dtype": "F64", "shape": [2], "data_offsets": [0, 16]}}).encode()
    path = tmp_path / "hub.safetensors"
    path.write_bytes(struct.pack("<Q", len(header)) + header + numpy.array([1.0, 2.0]).tobytes())
    loaded = framework.load(path)
    assert list(loaded) == ["x.y"]
    numpy.testing.assert_array_equal(loaded["x.y"], [1.0, 2.0])
    numpy.savez(tmp_path / "plain.npz", emb=numpy.ones(3, "float32"))
    assert list(framework.load(tmp_path / "plain.npz")) == ["emb"]


class Exploit:
    """Unpickling this would create a marker file."""

    marker = None

    def __reduce__(self):
        return (open, (str(self.marker), "w"))


def test_object_array_in_npz_is_refused_not_unpickled(tmp_path):
    Exploit.marker = tmp_path / "executed"
    payload = numpy.empty(1, dtype=object)
    payload[0] = Exploit()
    path = tmp_path / "evil.npz"
    numpy.savez(path, weight=numpy.ones(2), payload=payload)
    with pytest.raises(SerializationError, match=r"evil\.npz.*'payload'.*object array"):
        framework.load(path)
    assert not Exploit.marker.exists()


def test_pickle_file_is_refused_not_unpickled(tmp_path):
    Exploit.marker = tmp_path / "executed"
    for name in ("model.npz", "model.pdparams", "model.safetensors"):
        path = tmp_path / name
        path.write_bytes(pickle.dumps({"w": Exploit()}))
        with pytest.raises(SerializationError, match=name.replace(".", r"\.")):
            framework.load(path)
    assert not Exploit.marker.exists()


@pytest.mark.parametrize("name", FORMATS)
def test_save_refuses_object_arrays_and_unknown_types(tmp_path, name):
    with pytest.raises(SerializationError, match="'model/names'.*object array"):
        framework.save({"model": {"names": numpy.array(["a", None], dtype=object)}}, tmp_path / name)
    with pytest.raises(SerializationError, match="'extra/0'.*set"):
        framework.save({"extra": [{1, 2}]}, tmp_path / name)
    assert os.listdir(tmp_path) == []


def test_safetensors_refuses_unsupported_dtypes(tmp_path):
    with pytest.raises(SerializationError, match="'z'.*complex128"):
        framework.save({"z": numpy.ones(2, complex)}, tmp_path / "c.safetensors")
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize("name", FORMATS)
@pytest.mark.parametrize("crash_in", ["write", "fsync", "rename"])
def test_a_failed_write_keeps_the_old_file(tmp_path, monkeypatch, name, crash_in):
    path = tmp_path / name
    framework.save({"w": numpy.ones(4, "float32"), "epoch": 1}, path)
    before = path.read_bytes()

    def crash(*args, **kwargs):
        raise OSError("simulated crash")

    if crash_in == "write":
        writer = "_write_safetensors" if name.endswith("safetensors") else "_write_npz"
        real = getattr(serialization, writer)

        def partial_then_crash(f, arrays, manifest):
            real(f, arrays, manifest)
            f.truncate(f.tell() // 2)
            crash()
        monkeypatch.setattr(serialization, writer, partial_then_crash)
    else:
        monkeypatch.setattr(serialization.os, "fsync" if crash_in == "fsync" else "replace", crash)
    with pytest.raises(OSError, match="simulated crash"):
        framework.save({"w": numpy.zeros(1000, "float32"), "epoch": 2}, path)
    monkeypatch.undo()
    assert os.listdir(tmp_path) == [name]
    assert path.read_bytes() == before
    assert framework.load(path)["epoch"] == 1


@pytest.mark.parametrize("name", FORMATS)
def test_truncated_file_is_a_clear_error(tmp_path, name):
    path = tmp_path / name
    framework.save(sample(), path)
    raw = path.read_bytes()
    for size in (len(raw) // 2, len(raw) - 3, 10, 0):
        path.write_bytes(raw[:size])
        with pytest.raises(SerializationError, match=f"{name.replace('.', '[.]')}.*"):
            framework.load(path)


def test_corrupt_npz_member_is_a_clear_error(tmp_path):
    path = tmp_path / "bad.npz"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("w.npy", b"\x93NUMPY garbage")
    with pytest.raises(SerializationError, match=r"bad\.npz"):
        framework.load(path)


def test_non_checkpoint_files(tmp_path):
    path = tmp_path / "notes.txt"
    path.write_text("hello")
    with pytest.raises(SerializationError, match=r"notes\.txt is not a checkpoint"):
        framework.load(path)
    header = b'{"w": {"dtype": "F32", "shape": [4], "data_offsets": [0, 8]}}'
    path = tmp_path / "short.safetensors"
    path.write_bytes(struct.pack("<Q", len(header)) + header + bytes(8))
    with pytest.raises(SerializationError, match=r"short\.safetensors.*'w'"):
        framework.load(path)
