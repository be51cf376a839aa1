"""Running an ONNX file in a bare ONNX Runtime: a child process that imports only numpy and onnxruntime."""
import json
import subprocess
import sys

import numpy

BARE = r"""
import json, sys
import numpy, onnxruntime
model, optimized, inputs, expected = sys.argv[1:5]
options = onnxruntime.SessionOptions()
options.optimized_model_filepath = optimized
session = onnxruntime.InferenceSession(model, options, providers=["CPUExecutionProvider"])
x = numpy.load(inputs)
y = session.run(None, {session.get_inputs()[0].name: x})[0]
print(json.dumps({"error": float(numpy.abs(y - numpy.load(expected)).max()), "shape": list(y.shape),
                  "modules": sorted(m for m in ("framework", "zoo", "onnx") if m in sys.modules)}))
"""


def run_bare(model, x, expected, folder):
    """``{"error": max |ONNX Runtime's output - expected|, "shape", "modules": oar or onnx modules the child
    imported}`` of the ONNX file ``model`` on ``x`` (one input) in a child process; ONNX Runtime's optimised
    graph is written to ``<folder>/optimized.onnx``."""
    numpy.save(f"{folder}/x.npy", x)
    numpy.save(f"{folder}/y.npy", expected)
    run = subprocess.run([sys.executable, "-c", BARE, str(model), f"{folder}/optimized.onnx", f"{folder}/x.npy",
                          f"{folder}/y.npy"], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout)
