"""Shared by the ONNX tests: export, run the file in a bare subprocess (numpy + onnxruntime only), compare."""
import json
import subprocess
import sys

import numpy
import pytest

onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

import framework.onnx  # noqa: E402
from framework.onnx.runtime import name_outputs, output_leaves  # noqa: E402

TOLERANCE = 1e-4
OAR_PACKAGES = ("framework", "nlp", "vision", "video", "zoo", "tools")

# Runs the exported model on each saved feed; prints the oar modules it found imported (there must be none).
RUNNER = """
import json, sys
import numpy, onnxruntime
model, feeds, out = sys.argv[1:]
session = onnxruntime.InferenceSession(model, providers=["CPUExecutionProvider"])
names = [o.name for o in session.get_outputs()]
saved = numpy.load(feeds)
results = {}
for case in sorted({key.split("__")[0] for key in saved.files}):
    feed = {key.split("__", 1)[1]: saved[key] for key in saved.files if key.split("__")[0] == case}
    for name, value in zip(names, session.run(names, feed)):
        results[f"{case}__{name}"] = value
numpy.savez(out, **results)
print(json.dumps(sorted(m for m in sys.modules if m.split(".")[0] in %r)))
""" % (OAR_PACKAGES,)


def run_bare(model_path, feeds, tmp_path):
    """Run ``model_path`` on each feed ({input name: array}) in a subprocess that imports only numpy and
    onnxruntime; returns one {output name: array} per feed."""
    feeds_path, out_path = tmp_path / "feeds.npz", tmp_path / "outputs.npz"
    numpy.savez(feeds_path, **{f"{i}__{name}": array for i, feed in enumerate(feeds) for name, array in feed.items()})
    done = subprocess.run([sys.executable, "-c", RUNNER, str(model_path), str(feeds_path), str(out_path)],
                          capture_output=True, text=True, cwd=tmp_path, timeout=300)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.strip().splitlines()[-1]) == [], "the runner imported oar modules"
    saved = numpy.load(out_path)
    return [{key.split("__", 1)[1]: saved[key] for key in saved.files if key.split("__")[0] == str(i)}
            for i in range(len(feeds))]


def max_errors(expected, actual):
    """(max abs, max abs over the largest magnitude of ``expected``)."""
    expected, actual = numpy.asarray(expected, dtype=numpy.float64), numpy.asarray(actual, dtype=numpy.float64)
    assert expected.shape == actual.shape
    worst = float(numpy.abs(expected - actual).max(initial=0.0))
    scale = float(numpy.abs(expected).max(initial=0.0))
    return worst, (worst / scale if scale else worst)


def assert_exported_parity(program, feeds, tmp_path, name="model"):
    """Export ``program`` with ``feeds[0]`` as the example, check the file with the ONNX checker, run it bare on
    every feed and compare with the program (1e-4, absolute or relative). Returns the worst (abs, rel)."""
    path = tmp_path / f"{name}.onnx"
    framework.onnx.export(program, path, feeds[0])
    onnx.checker.check_model(onnx.load(str(path)), full_check=True)
    worst = (0.0, 0.0)
    for feed, outputs in zip(feeds, run_bare(path, feeds, tmp_path)):
        for output, value in output_leaves(name_outputs(program.outputs)[0], program(**feed)):
            errors = max_errors(value, outputs[output])
            assert min(errors) <= TOLERANCE, (output, errors, {k: v.shape for k, v in feed.items()})
            worst = max(worst, errors)
    return worst
