"""Benchmarks that print one JSON object each (``oar bench NAME`` / ``tools/bench.py NAME``).

One module per suite (``zoo/bench/<suite>.py``, each with ``run_all(quick=False)``)
and :mod:`zoo.bench.torch_twins`, the PyTorch models they measure against.
Timings are the best of several repeats after a warm-up; nothing here is asserted.
"""
import importlib
import inspect
import json
import os
import platform

import numpy

__all__ = ["SUITES", "run", "machine_info"]


def machine_info():
    """CPU model, core count, Python/NumPy versions and the BLAS NumPy uses."""
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    blas = "unknown"
    try:
        blas_info = numpy.show_config(mode="dicts").get("Build Dependencies", {}).get("blas", {})
        blas = f"{blas_info.get('name', '?')} {blas_info.get('version', '')}".strip()
    except Exception:  # older NumPy without mode="dicts"
        pass
    return {"cpu": cpu, "cores": os.cpu_count(), "python": platform.python_version(),
            "numpy": numpy.__version__, "blas": blas,
            "threads_env": {k: os.environ[k] for k in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")
                            if k in os.environ}}


SUITES = {  # benchmark name -> module whose ``run_all(quick=False)`` measures it (on its default device)
    "framework": "zoo.bench.framework",
    "data": "zoo.bench.data",
    "dist": "zoo.bench.dist",
    "lac": "zoo.bench.lac",
    "kernels": "zoo.bench.kernels",
    "providers": "zoo.bench.providers",
    "export": "zoo.bench.export",
    "static": "zoo.bench.static",
    "senta": "zoo.bench.senta",
    "train": "zoo.bench.train",
    "gpu": "zoo.bench.gpu",
    "cli": "zoo.bench.command_line",
    "predict": "zoo.bench.predict",
    "serve": "zoo.bench.serve",
    "vision": "zoo.bench.vision",
    "detection": "zoo.bench.detection",
    "video_data": "zoo.bench.video_data",
    "video_models": "zoo.bench.video_models",
    "video_feature_models": "zoo.bench.video_feature_models",
    "scale": "zoo.bench.scale",
    "slim": "zoo.bench.slim",
}


def run(name, quick=False, out=None, models=None):
    """Run suite ``name`` and print its JSON result (also written to ``out`` when given); ``models``: the
    models to measure, for a suite that takes them (``predict``)."""
    if name not in SUITES:
        raise SystemExit(f"unknown benchmark {name!r}; known: {', '.join(sorted(SUITES))}")
    module = importlib.import_module(SUITES[name])
    options = {"quick": quick}
    if models:
        if "models" not in inspect.signature(module.run_all).parameters:
            from ..usage import UsageError
            raise UsageError(f"--model: oar bench {name} measures its own models; --model is for oar bench predict")
        options["models"] = models
    result = {"benchmark": name, "machine": machine_info(), "results": module.run_all(**options)}
    text = json.dumps(result, indent=2)
    print(text)
    if out:
        with open(out, "w") as f:
            f.write(text + "\n")
    return result
