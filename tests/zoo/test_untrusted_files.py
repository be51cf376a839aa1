"""Files oar did not make itself, read as a user reads them: an export directory someone sent, a damaged
cache entry, a truncated or garbage file behind every third-party reader (JSON, NumPy's npz, ONNX Runtime, onnx,
PyAV, OpenCV), a folder that is not an export. Every refusal is exit status 1 and one ``oar: error:`` line
naming the file; nothing in a file chooses code to run.

Each case runs the installed ``oar`` in a subprocess (``tests/zoo/test_cli.py``)."""
import json
import os
import shutil

import numpy
import pytest

import zoo
from framework.errors import UserError
from framework.fetch import sha256_of
from zoo.card import CardError

from .test_cli import assert_one_error_line, oar

TEXT = "这家酒店的服务太差了"


@pytest.fixture(scope="module")
def export(tmp_path_factory):
    """An intact export of senta_bow with its ONNX model, and its output on TEXT."""
    pytest.importorskip("onnxruntime")
    folder = str(tmp_path_factory.mktemp("export") / "senta")
    code, _, err = oar("export", "senta_bow", "--output", folder, "--format", "onnx")
    assert code == 0, err
    code, out, err = oar("run", folder, "--input_text", TEXT)
    assert code == 0, err
    return folder, out


def _copy(export, tmp_path):
    return shutil.copytree(export[0], str(tmp_path / "copy"))


def _manifest(folder, edit=None):
    path = os.path.join(folder, "manifest.json")
    with open(path, encoding="utf-8") as f:
        manifest = json.load(f)
    if edit:
        edit(manifest)
        with open(path, "w", encoding="utf-8") as f:
            json.dump(manifest, f)
    return manifest


def _replace(folder, name, data, record=True):
    """Write ``data`` over ``folder/name``; with ``record``, the manifest records its new sha256 (as someone
    who damaged the file on purpose would), so the file's own reader is what refuses it."""
    path = os.path.join(folder, name)
    with open(path, "wb") as f:
        f.write(data)
    if record:
        _manifest(folder, lambda m: m["files"].__setitem__(name, sha256_of(path)))
    return path


def _cut(path):
    with open(path, "rb") as f:
        data = f.read()
    return data[:len(data) // 2]


GARBAGE = b"\x00\x9fnot this kind of file\xff" * 40


def test_an_intact_export_runs_on_both_runtimes(export, tmp_path):
    folder = _copy(export, tmp_path)
    assert set(_manifest(folder)["files"]) >= {"weights.npz", "vocab.txt", "program/program.json", "model.onnx"}
    code, out, err = oar("run", folder, "--input_text", TEXT, "--runtime", "onnxruntime")
    assert code == 0, err
    label, score = out.split()
    assert label == export[1].split()[0] and abs(float(score) - float(export[1].split()[1])) < 1e-3


def _as_loader(loader):
    """The manifest edit that turns its trained card into an official one built by ``loader``."""
    def edit(manifest):
        del manifest["card"]["config"]
        manifest["card"]["loader"] = loader
    return edit


@pytest.mark.parametrize("loader", ["faulthandler:dump_traceback", "os:system", "official_lac", ["list"], None])
def test_a_manifest_names_a_loader_of_the_fixed_table_never_code(export, tmp_path, loader):
    folder = _copy(export, tmp_path)
    _manifest(folder, _as_loader(loader))
    code, out, err = oar("run", folder, "--input_text", TEXT)
    assert_one_error_line(code, err, 1, "manifest.json")
    assert out == "" and "Fatal Python error" not in err and "Current thread" not in err


@pytest.mark.parametrize("name", ["assets.json", "config.yaml", "model.onnx", "model.onnx.json",
                                  "program/program.json", "program/weights.npz", "vocab.txt", "weights.npz"])
def test_every_recorded_file_is_checked_against_its_sha256(export, tmp_path, name):
    folder = _copy(export, tmp_path)
    path = os.path.join(folder, name)
    with open(path, "ab") as f:
        f.write(b"\n")
    code, out, err = oar("run", folder, "--input_text", TEXT)
    assert_one_error_line(code, err, 1, path, "sha256")
    assert out == ""


def test_a_reordered_vocabulary_is_refused_even_when_the_manifest_vouches_for_it(export, tmp_path):
    folder = _copy(export, tmp_path)
    with open(os.path.join(folder, "vocab.txt"), encoding="utf-8") as f:
        lines = f.read().splitlines()
    _replace(folder, "vocab.txt", "\n".join(lines[:2] + lines[2:][::-1]).encode() + b"\n")   # same tokens
    code, out, err = oar("run", folder, "--input_text", TEXT)
    assert_one_error_line(code, err, 1, os.path.join(folder, "vocab.txt"), "assets.json")


def test_a_config_in_an_export_cannot_pull_in_other_files_through_base(export, tmp_path):
    """A resolved config holds every section itself: a ``_base_`` in it is refused, not followed (here to a
    file outside the export), even when the manifest vouches for the edited config."""
    folder = _copy(export, tmp_path)
    outside = tmp_path / "outside.yaml"
    outside.write_text("task: {type: Sentiment}\n", encoding="utf-8")
    with open(os.path.join(folder, "config.yaml"), "rb") as f:
        config = f.read()
    _replace(folder, "config.yaml", config + f"\n_base_: [{outside}]\n".encode())
    code, out, err = oar("run", folder, "--input_text", TEXT)
    assert_one_error_line(code, err, 1, os.path.join(folder, "config.yaml"), "_base_")
    assert out == ""


@pytest.mark.parametrize("edit, fragment", [
    (lambda m: m["files"].__setitem__("../outside.txt", "0" * 64), "outside"),
    (lambda m: m["files"].__setitem__("/etc/hostname", "0" * 64), "not a file name inside"),
    (lambda m: m["card"]["weights"].update(path="/etc/hostname"), "records no sha256"),
    (lambda m: m["card"].update(program="../program"), "records no sha256"),
    (lambda m: m.update(files=[]), "'files'"),
    (lambda m: m["files"].__setitem__("weights.npz", "not a sha256"), "sha256"),
    (lambda m: m.update(version=1), "version"),
    (lambda m: m.update(format="something.else"), "not an oar export manifest"),
    (lambda m: m["card"].update(name=None), "'name'"),
])
def test_a_manifest_names_only_files_inside_the_export_that_it_vouches_for(export, tmp_path, edit, fragment):
    folder = _copy(export, tmp_path)
    _manifest(folder, edit)
    code, _, err = oar("run", folder, "--input_text", TEXT)
    assert_one_error_line(code, err, 1, "manifest.json", fragment)


def test_asset_copies_must_lie_inside_the_run_directory(export, tmp_path):
    folder = _copy(export, tmp_path)
    with open(os.path.join(folder, "assets.json"), encoding="utf-8") as f:
        assets = json.load(f)
    assets["task.vocab"]["value"] = "/etc/hostname"
    _replace(folder, "assets.json", json.dumps(assets).encode())
    code, _, err = oar("run", folder, "--input_text", TEXT)
    assert_one_error_line(code, err, 1, "assets.json", "/etc/hostname", "not a file name inside")


# (the file damaged, the runtime that reads it, whether the manifest vouches for the damage): JSON readers,
# NumPy's npz reader and ONNX Runtime, each fed a truncated and a garbage file
READERS = [("manifest.json", "oar", False), ("assets.json", "oar", True), ("program/program.json", "oar", True),
           ("model.onnx.json", "onnxruntime", True), ("weights.npz", "oar", True),
           ("model.onnx", "onnxruntime", True)]


@pytest.mark.parametrize("how", ["truncated", "garbage"])
@pytest.mark.parametrize("name, runtime, record", READERS)
def test_each_reader_refuses_a_truncated_or_garbage_file_in_one_line(export, tmp_path, name, runtime, record, how):
    folder = _copy(export, tmp_path)
    path = os.path.join(folder, name)
    _replace(folder, name, _cut(path) if how == "truncated" else GARBAGE, record)
    code, out, err = oar("run", folder, "--input_text", TEXT, "--runtime", runtime)
    assert_one_error_line(code, err, 1, path)
    assert out == ""


@pytest.mark.parametrize("name, runtime, record", [r for r in READERS if r[0].endswith(".json")])
def test_json_nested_too_deep_is_refused_in_one_line(export, tmp_path, name, runtime, record):
    folder = _copy(export, tmp_path)
    path = _replace(folder, name, b"[" * 200_000 + b"]" * 200_000, record)
    code, _, err = oar("run", folder, "--input_text", TEXT, "--runtime", runtime)
    assert_one_error_line(code, err, 1, path)


@pytest.mark.parametrize("how", ["truncated", "garbage"])
def test_the_onnx_package_reader_refuses_a_truncated_or_garbage_model(export, tmp_path, how):
    onnx = pytest.importorskip("onnx")
    from framework.onnx.errors import OnnxModelError, reading_model
    path = str(tmp_path / "model.onnx")
    with open(path, "wb") as f:
        f.write(_cut(os.path.join(export[0], "model.onnx")) if how == "truncated" else GARBAGE)
    with pytest.raises(OnnxModelError, match="model.onnx"), reading_model(path):
        onnx.checker.check_model(onnx.load(path))


@pytest.fixture(scope="module")
def videos(tmp_path_factory):
    """A truncated and a garbage video file, and frame folders of truncated and of garbage JPEGs."""
    from video.data.encode import write_video
    import cv2
    root = tmp_path_factory.mktemp("videos")
    frames = numpy.random.default_rng(0).integers(0, 256, (12, 48, 48, 3), dtype=numpy.uint8)
    write_video(str(root / "clip.mp4"), frames, fps=8)
    made = {"truncated": str(root / "cut.mp4"), "garbage": str(root / "junk.mp4")}
    for how, path in made.items():
        with open(path, "wb") as f:
            f.write(_cut(str(root / "clip.mp4")) if how == "truncated" else GARBAGE)
    for how in ("truncated", "garbage"):
        folder = root / f"{how}_frames"
        folder.mkdir()
        for i, frame in enumerate(frames):
            data = cv2.imencode(".jpg", frame)[1].tobytes()
            (folder / f"img_{i:03d}.jpg").write_bytes(data[:len(data) // 2] if how == "truncated" else GARBAGE)
        made[f"{how}_frames"] = str(folder)
    return made


@pytest.mark.parametrize("kind", ["truncated", "garbage", "truncated_frames", "garbage_frames"])
def test_pyav_and_opencv_refuse_truncated_or_garbage_videos_in_one_line(videos, kind):
    code, out, err = oar("run", "tsm_synth", "--input_path", videos[kind])
    assert_one_error_line(code, err, 1, videos[kind])
    assert out == ""


@pytest.mark.parametrize("how", ["truncated", "garbage"])
def test_opencv_refuses_a_truncated_or_garbage_png_without_its_own_message(tmp_path, how, capfd):
    import cv2
    from vision.data.folder import ImageDataError, read_image
    data = cv2.imencode(".png", numpy.full((16, 16, 3), 90, numpy.uint8))[1].tobytes()
    path = tmp_path / "image.png"
    path.write_bytes(data[:-20] if how == "truncated" else GARBAGE)
    with pytest.raises(ImageDataError, match="image.png"):
        read_image(str(path))
    assert capfd.readouterr().err == ""            # libpng says nothing of its own


def _cache_entry(home):
    folder = os.path.join(home, "onnx")
    (name,) = [n for n in os.listdir(folder) if n.endswith(".onnx")]
    return os.path.join(folder, name)


def test_a_damaged_onnx_cache_entry_is_rebuilt_once_with_one_warning(tmp_path):
    pytest.importorskip("onnxruntime")
    env = {"OAR_HOME": str(tmp_path / "home")}
    code, first, err = oar("run", "senta_bow", "--runtime", "onnxruntime", "--input_text", TEXT, env=env)
    assert code == 0, err
    model = _cache_entry(env["OAR_HOME"])
    damages = [(model, _cut(model)), (model, GARBAGE), (model + ".json", GARBAGE), (model + ".sha256.json", b"{")]
    for path, data in damages:
        with open(path, "wb") as f:
            f.write(data)
        if path == model and data == GARBAGE:           # the record vouches for it: ONNX Runtime itself refuses
            with open(model + ".sha256.json", encoding="utf-8") as f:
                record = json.load(f)
            record[os.path.basename(model)] = sha256_of(model)
            with open(model + ".sha256.json", "w", encoding="utf-8") as f:
                json.dump(record, f)
        code, out, err = oar("run", "senta_bow", "--runtime", "onnxruntime", "--input_text", TEXT, env=env)
        lines = err.strip().splitlines()
        assert code == 0 and out == first, err
        assert len(lines) == 1 and lines[0].startswith("oar: warning: ") and "exporting it again" in lines[0], err
        assert path in lines[0], err
    code, out, err = oar("run", "senta_bow", "--runtime", "onnxruntime", "--input_text", TEXT, env=env)
    assert code == 0 and out == first and err == "", err          # rebuilt once, then reused


@pytest.mark.parametrize("make", ["empty", "plain", "file", "missing"])
def test_a_folder_that_holds_no_model_says_so(tmp_path, make):
    target = tmp_path / "folder"
    if make in ("empty", "plain"):
        target.mkdir()
        if make == "plain":
            (target / "config.yaml").write_text("model: {type: MLP}\n")
    elif make == "file":
        target.write_text("hello\n")
    fragment = {"empty": "holds no model", "plain": "no task.type", "file": "is a file",
                "missing": "no such directory"}[make]
    code, _, err = oar("run", str(target), "--input_text", TEXT)
    assert_one_error_line(code, err, 1, str(target), fragment)
    assert "unknown model" not in err
    with pytest.raises(CardError, match=fragment):
        zoo.load(str(target))


def test_zoo_load_refuses_a_damaged_export_with_the_same_error(export, tmp_path):
    folder = _copy(export, tmp_path)
    _replace(folder, "weights.npz", GARBAGE)
    with pytest.raises(UserError, match="weights.npz"):
        zoo.load(folder)
