"""framework.jit.save / load: a program directory replays in a process with no model classes, and an altered
directory is refused with one clear error; nothing is unpickled."""
import json
import subprocess
import sys

import numpy
import pytest

from framework import jit
from framework.registry import MODELS

from ..family_examples import FAMILIES, leaf_feed

# Loads a saved program and runs it on saved inputs; prints the project packages it imported beyond framework.
RUNNER = """
import json, sys
import numpy
from framework import jit
program = jit.load(sys.argv[1])
feeds = numpy.load(sys.argv[2])
outputs = {}
for case in sorted({key.split("__")[0] for key in feeds.files}):
    named = {key.split("__", 1)[1]: feeds[key] for key in feeds.files if key.split("__")[0] == case}
    groups = {}
    for name, array in named.items():
        base, _, index = name.partition(".")
        groups.setdefault(base, {})[int(index) if index else None] = array
    outputs[case] = program(**{b: v[None] if None in v else [v[i] for i in sorted(v)] for b, v in groups.items()})
numpy.savez(sys.argv[3], **outputs)
print(json.dumps(sorted({m.split(".")[0] for m in sys.modules} & {"nlp", "video", "vision", "zoo", "tools"})))
"""


@pytest.mark.parametrize("family", ["BiGRUCRF", "SentaBiLSTM", "SimNetCNN", "TSM", "NeXtVLAD", "resnet18"])
def test_a_saved_program_replays_in_a_fresh_process_without_model_classes(family, tmp_path):
    config, axes, feeds = FAMILIES[family]
    model = MODELS.build(config)
    model.eval()
    feeds = feeds(numpy.random.default_rng(0))
    program = jit.trace(model, feeds[0], axes)
    jit.save(program, tmp_path / "program")
    numpy.savez(tmp_path / "feeds.npz", **{f"{i}__{k}": v for i, feed in enumerate(feeds) for k, v in leaf_feed(feed).items()})
    done = subprocess.run([sys.executable, "-c", RUNNER, str(tmp_path / "program"), str(tmp_path / "feeds.npz"),
                           str(tmp_path / "out.npz")], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.strip().splitlines()[-1]) == []
    saved = numpy.load(tmp_path / "out.npz")
    for i, feed in enumerate(feeds):
        # another process may run its GEMMs on another number of BLAS threads: equal up to float32 rounding
        numpy.testing.assert_allclose(saved[str(i)], program(**feed), rtol=1e-5, atol=1e-6)


@pytest.fixture
def saved(tmp_path):
    config, axes, feeds = FAMILIES["SentaCNN"]
    model = MODELS.build(config)
    model.eval()
    feed = feeds(numpy.random.default_rng(0))[0]
    path = tmp_path / "program"
    jit.save(jit.trace(model, feed, axes), path)
    return path, feed


def _edit_graph(path, change):
    graph = json.loads((path / "program.json").read_text())
    change(graph)
    (path / "program.json").write_text(json.dumps(graph))


def test_a_loaded_program_equals_the_saved_one(saved):
    path, feed = saved
    numpy.testing.assert_array_equal(jit.load(path)(**feed), jit.load(path)(**feed))
    assert jit.load(path).inputs[0].shape == ("batch", "seq")


@pytest.mark.parametrize("change, message", [
    (lambda g: g["nodes"][0].update(op="os.system"), r"names 'os.system', which is not an op of the framework"),
    (lambda g: g["nodes"][0].update(inputs=[999]), r"reads slots \[999\] before any op writes them"),
    (lambda g: g["nodes"][0].update(attrs={"x": {"pickle": "gASV"}}), r"not an attribute value"),
    (lambda g: g.update(version=7), r"format version 7"),
    (lambda g: g.update(weights_sha256="0" * 64), r"the file was changed after saving"),
    (lambda g: g["values"][0].update(shape=[1, 2, 3]), r"lists \[1, 2, 3\]"),
    (lambda g: g.update(outputs={"slot": 10 ** 6}), r"not a slot the program writes"),
])
def test_an_altered_graph_is_refused_naming_what_is_wrong(saved, change, message):
    path, _ = saved
    _edit_graph(path, change)
    with pytest.raises(jit.ProgramFileError, match=message):
        jit.load(path)


def test_broken_json_and_altered_or_pickled_arrays_are_refused(saved):
    path, _ = saved
    weights = (path / "weights.npz").read_bytes()
    (path / "weights.npz").write_bytes(weights[:-10] + b"0123456789")
    with pytest.raises(jit.ProgramFileError, match="sha256 .* the file was changed after saving"):
        jit.load(path)
    numpy.savez(path / "weights.npz", v0=numpy.array([{"a": 1}], dtype=object))   # an object array needs pickle
    from framework.fetch import sha256_of
    _edit_graph(path, lambda g: g.update(weights_sha256=sha256_of(path / "weights.npz")))
    with pytest.raises(jit.ProgramFileError, match="weights.npz"):
        jit.load(path)
    (path / "program.json").write_text("{not json")
    with pytest.raises(jit.ProgramFileError, match="not valid JSON"):
        jit.load(path)
    with pytest.raises(FileNotFoundError, match="is not a saved program"):
        jit.load(path.parent / "nowhere")
