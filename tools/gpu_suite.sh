#!/usr/bin/env bash
# The GPU checks in one go, for a machine with an NVIDIA GPU and CuPy:
#   tools/gpu_suite.sh [OUTDIR] [TEST_SECONDS] [BENCH_SECONDS]
# runs the GPU-marked tests (every op's GPU result and gradient against the CPU, one training
# step of every model family, short LAC and TSM trainings, optimizers, NCCL of one GPU), then
# `tools/bench.py gpu`. Writes gpu_tests.log, gpu_tests.xml, bench_gpu.json and bench_gpu.log
# into OUTDIR (default gpu_results); each stage stops after its time limit.
set -u
out=${1:-gpu_results}
test_seconds=${2:-900}
bench_seconds=${3:-900}
mkdir -p "$out"
export PYTHONUNBUFFERED=1
python3 - <<'PY' 2>&1 | tee "$out/devices.log"
import cupy, numpy
props = cupy.cuda.runtime.getDeviceProperties(0)
print("cupy", cupy.__version__, "numpy", numpy.__version__, "cuda runtime", cupy.cuda.runtime.runtimeGetVersion(),
      "device", props["name"].decode(), "devices", cupy.cuda.runtime.getDeviceCount())
PY
timeout "$test_seconds" python3 -m pytest -m gpu -n 0 -p no:cacheprovider -q -rfE --junitxml "$out/gpu_tests.xml" \
    tests/test_gpu_models.py tests/framework tests/nlp/lac/test_task.py 2>&1 | tee "$out/gpu_tests.log"
timeout "$bench_seconds" python3 tools/bench.py gpu --out "$out/bench_gpu.json" 2>&1 | tee "$out/bench_gpu.log"
