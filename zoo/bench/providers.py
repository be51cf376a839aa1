"""``oar bench providers``: each candidate GEMM library beside NumPy's on the shapes oar's training steps are made of.

Candidates, each loaded from its wheel through its C ABI (ctypes; nothing
copies an operand that NumPy would not copy too), their shared libraries found
through the installed distributions' file lists:

- ``numpy``: ``numpy.matmul`` on the OpenBLAS NumPy ships (the reference);
- ``mkl``: Intel MKL's ``cblas_sgemm_64`` in ``libmkl_rt`` (threads: ``MKL_Set_Num_Threads``);
- ``onednn``: ``dnnl_sgemm`` in ``libdnnl`` (row-major; its dependencies, installed beside it by their own
  wheels, are loaded from its folder first; its CPU runtime is TBB under SYCL, whose workers follow the
  process's CPU affinity, which the measuring process sets to its thread count);
- ``scipy-openblas32``: ``scipy_cblas_sgemm`` of that newer OpenBLAS (threads: ``scipy_openblas_set_num_threads``);
- ``blis``: ``blis.py.gemm``, which writes into the output array (its wheel has no thread control: a
  single-threaded build, so its two-thread figures are one thread's).

A library that is not installed is listed ``"absent"``; one that does not load
says why. Shapes (single precision, 2 flops per multiply-add), grouped into families:

- ``rnn_step_b{1,16,64}``: one recurrent step of the Senta LSTM and GRU at hidden 128: the gate
  product h (B, 128) @ W (128, 4*128 | 3*128) and its gradient dG (B, gates) @ W.T;
- ``rnn_projection``: the input projection of 64-dim embeddings over 64 x 100 tokens, (6400, 64) @
  (64, gates), and its input gradient (6400, gates) @ (gates, 64)ᵀ;
- ``rnn_weight_grad``: the weight gradients summed over every token, (128 | 64, 6400)ᵀ @ (6400, gates);
- ``resnet50_{forward,weight_grad,input_grad}``: the im2col GEMMs of every distinct ResNet-50 convolution
  (torchvision's v1.5 layout) at the batch ``oar bench train`` uses (8 images at 224²; TSN-R50 and TSM-R50
  run the same shapes on their 8 frames): W (O, C·k²) @ cols (C·k², N·P), dY (O, N·P) @ colsᵀ and, for one
  kernel offset, W[:, :, i]ᵀ (C, O) @ dY (O, N·P).

Each thread count (1 and 2) runs in its own process with ``OAR_NUM_THREADS``,
``OMP_NUM_THREADS``, ``OPENBLAS_NUM_THREADS`` and ``MKL_NUM_THREADS`` set and the
CPU affinity cut to that many cores. A family's rate is its flops over the sum of
its shapes' best times (best of 3 rounds after a warm-up); ``vs_numpy`` is the
library's rate over NumPy's; ``peak`` is the best rate of a large square GEMM
(2048³) over the libraries. oneDNN's direct convolution and batch norm are not
measured: they need its primitive API (engine, memory descriptors, primitive
descriptors, execution arguments) through ctypes, which this suite does not
carry; its GEMM stands for it here. Nothing is asserted.

Run as ``python -m zoo.bench.providers --threads N [--quick]`` it measures one
thread count and prints its rows as JSON (what :func:`run_all` starts per count).
"""
import argparse
import ctypes
import importlib.metadata
import json
import os
import re
import subprocess
import sys

import numpy

from framework.kernels import providers
from framework.timing import best_time

__all__ = ["CANDIDATES", "step_shapes", "resnet50_shapes", "measure", "run_all"]

THREAD_COUNTS = (1, 2)
NOT_MEASURED = {
    "direct_convolution": "not measured: oneDNN's convolution needs its primitive C API (engine, memory and "
                          "primitive descriptors), which this suite does not drive; only its GEMM is timed",
    "batch_norm": "not measured: oneDNN's batch normalization needs the same primitive C API",
}
_THREAD_VARIABLES = ("OAR_NUM_THREADS", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


# ---- candidates ---------------------------------------------------------------------------------------------------

def _numpy(threads):
    return (lambda a, b, out: numpy.matmul(a, b, out=out)), numpy.__version__


def _mkl(threads):
    provider = providers.Provider(_required(providers.find_library(), "mkl", "libmkl_rt"))
    provider.set_threads(threads)
    return (lambda a, b, out: providers.call_cblas(provider.sgemm, a, b, out)), provider.version


def _openblas32(threads):
    lib = ctypes.CDLL(_required(providers.library_file("scipy-openblas32", "libscipy_openblas"),
                                "scipy-openblas32", "libscipy_openblas"))
    fn = lib.scipy_cblas_sgemm
    size = ctypes.c_int
    fn.argtypes = [ctypes.c_int] * 3 + [size] * 3 + [ctypes.c_float, ctypes.c_void_p, size, ctypes.c_void_p, size,
                                                      ctypes.c_float, ctypes.c_void_p, size]
    lib.scipy_openblas_set_num_threads(threads)
    return (lambda a, b, out: providers.call_cblas(fn, a, b, out)), importlib.metadata.version("scipy-openblas32")


def _onednn(threads):
    lib = _load_with_neighbours(_required(providers.library_file("onednn", "libdnnl"), "onednn", "libdnnl"))
    fn = lib.dnnl_sgemm
    size = ctypes.c_int64
    fn.argtypes = [ctypes.c_char, ctypes.c_char, size, size, size, ctypes.c_float, ctypes.c_void_p, size,
                   ctypes.c_void_p, size, ctypes.c_float, ctypes.c_void_p, size]
    fn.restype = ctypes.c_int

    def gemm(a, b, out):
        (trans_a, lda), (trans_b, ldb) = _layouts(a, b)
        status = fn(b"T" if trans_a else b"N", b"T" if trans_b else b"N", a.shape[0], b.shape[1], a.shape[1], 1.0,
                    a.ctypes.data, lda, b.ctypes.data, ldb, 0.0, out.ctypes.data, out.shape[1])
        if status != 0:
            raise RuntimeError(f"dnnl_sgemm failed with status {status}")
    return gemm, importlib.metadata.version("onednn")


def _blis(threads):
    import blis.py

    def gemm(a, b, out):
        (trans_a, _), (trans_b, _) = _layouts(a, b)
        blis.py.gemm(a.T if trans_a else a, b.T if trans_b else b, out=out, trans1=trans_a, trans2=trans_b,
                     beta=0.0)
    return gemm, importlib.metadata.version("blis")


#: library -> loader(threads) returning (gemm(a, b, out), version); raises _Absent or ImportError when not installed
CANDIDATES = {"numpy": _numpy, "mkl": _mkl, "onednn": _onednn, "scipy-openblas32": _openblas32, "blis": _blis}


class _Absent(Exception):
    """The candidate's wheel is not installed."""


def _required(path, distribution, stem):
    if path is None:
        raise _Absent(f"{distribution} ships no {stem}")
    return path


def _layouts(a, b):
    """The :func:`providers.blas_layout` of both operands (the suite builds them as C-ordered or transposed)."""
    return providers.blas_layout(a), providers.blas_layout(b)


def _load_with_neighbours(path):
    """``ctypes.CDLL(path)`` after loading (globally, from ``path``'s folder) each library it needs that the
    system loader does not find there by itself: the wheels of its runtime install them beside it."""
    folder = os.path.dirname(path)
    for _ in range(64):
        try:
            return ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)
        except OSError as err:
            missing = re.match(r"(\S+): cannot open shared object file", str(err))
            if missing is None or not os.path.exists(os.path.join(folder, missing.group(1))):
                raise
            _load_with_neighbours(os.path.join(folder, missing.group(1)))
    raise OSError(f"{os.path.basename(path)}: too many libraries missing")


# ---- shapes: name -> (family, M, K, N, a transposed, b transposed) -----------------------------------------------

def step_shapes(quick=False):
    """The Senta LSTM/GRU step's products (hidden 128, 64-dim embeddings, 64 x 100 tokens; ``quick``: 4 x 10)."""
    hidden, embedding, tokens = 128, 64, (40 if quick else 6400)
    shapes = {}
    for cell, gates in (("lstm", 4 * hidden), ("gru", 3 * hidden)):
        for batch in (1, 16, 64):
            shapes[f"{cell}_step[b{batch}]"] = (f"rnn_step_b{batch}", batch, hidden, gates, False, False)
            shapes[f"{cell}_step_grad[b{batch}]"] = (f"rnn_step_b{batch}", batch, gates, hidden, False, True)
        shapes[f"{cell}_projection"] = ("rnn_projection", tokens, embedding, gates, False, False)
        shapes[f"{cell}_projection_grad"] = ("rnn_projection", tokens, gates, embedding, False, True)
        shapes[f"{cell}_recurrent_weight_grad"] = ("rnn_weight_grad", hidden, tokens, gates, True, False)
        shapes[f"{cell}_input_weight_grad"] = ("rnn_weight_grad", embedding, tokens, gates, True, False)
    return shapes


def _resnet50_convs(size):
    """(in channels, out channels, kernel, stride, output side) of every distinct ResNet-50 convolution."""
    convs = {(3, 64, 7, 2, size // 2)}
    side, in_channels = size // 4, 64
    for stage, channels in enumerate((64, 128, 256, 512)):
        stride = 1 if stage == 0 else 2
        out_side = side // stride
        convs |= {(in_channels, channels, 1, 1, side), (channels, channels, 3, stride, out_side),
                  (channels, 4 * channels, 1, 1, out_side), (in_channels, 4 * channels, 1, stride, out_side),
                  (4 * channels, channels, 1, 1, out_side), (channels, channels, 3, 1, out_side)}
        side, in_channels = out_side, 4 * channels
    return sorted(convs)


def resnet50_shapes(quick=False):
    """The im2col GEMMs of each distinct ResNet-50 convolution at batch 8 and 224² (``quick``: batch 1, 32²)."""
    batch, size = (1, 32) if quick else (8, 224)
    shapes = {}
    for c, o, k, stride, side in _resnet50_convs(size):
        rows, width = c * k * k, batch * side * side
        name = f"conv{k}x{k}/{stride} {c}->{o} @{side}"
        shapes[f"{name} forward"] = ("resnet50_forward", o, rows, width, False, False)
        shapes[f"{name} weight_grad"] = ("resnet50_weight_grad", o, width, rows, False, True)
        shapes[f"{name} input_grad"] = ("resnet50_input_grad", c, o, width, True, False)
    return shapes


def _operands(m, k, n, trans_a, trans_b, rng):
    """a (m, k), b (k, n) (each a transposed view of a C-ordered array when asked) and a C-ordered out (m, n)."""
    a = rng.standard_normal((k, m) if trans_a else (m, k), dtype=numpy.float32)
    b = rng.standard_normal((n, k) if trans_b else (k, n), dtype=numpy.float32)
    return a.T if trans_a else a, b.T if trans_b else b, numpy.empty((m, n), dtype=numpy.float32)


def _rate(gemm, operands, flops, quick):
    """Best GFLOP/s of ``gemm(*operands)``, repeated to about 0.1 GFLOP (quick: once) a timed round."""
    inner = 1 if quick else max(1, int(1e8 // flops))
    seconds = best_time(lambda: [gemm(*operands) for _ in range(inner)], repeat=3)
    return flops * inner / seconds / 1e9


def _families(shapes, seconds):
    """{family: GFLOP/s}: each family's flops over the sum of its shapes' times."""
    totals = {}
    for name, (family, m, k, n, *_) in shapes.items():
        flops, time = totals.get(family, (0.0, 0.0))
        totals[family] = (flops + 2.0 * m * k * n, time + seconds[name])
    return {family: _significant(flops / time / 1e9) for family, (flops, time) in totals.items()}


def _significant(rate):
    """``rate`` to 4 significant digits (a rate on a starved machine stays above 0, so ratios of it exist)."""
    return float(f"{rate:.4g}")


def measure(threads, quick=False):
    """In this process (thread variables already set): ``{"threads", "libraries", "peak", "families", "shapes"}``
    for every candidate; see the module docstring."""
    _pin(threads)
    rng = numpy.random.default_rng(0)
    shapes = {**step_shapes(quick), **resnet50_shapes(quick)}
    operands = {name: _operands(*shape[1:], rng) for name, shape in shapes.items()}
    side = 256 if quick else 2048
    square = _operands(side, side, side, False, False, rng)
    result = {"threads": threads, "libraries": {}, "peak": {}, "families": {}, "shapes": {}}
    for library, loader in CANDIDATES.items():
        try:
            gemm, version = loader(threads)
        except (_Absent, ImportError):
            result["libraries"][library] = {"status": "absent"}
            continue
        except (OSError, AttributeError) as err:
            result["libraries"][library] = {"status": f"not measured: does not load ({err})"}
            continue
        result["libraries"][library] = {"status": "measured", "version": version}
        result["peak"][library] = _significant(_rate(gemm, square, 2.0 * side ** 3, quick))
        seconds = {}
        for name, (family, m, k, n, *_) in shapes.items():
            seconds[name] = 2.0 * m * k * n / _rate(gemm, operands[name], 2.0 * m * k * n, quick) / 1e9
            result["shapes"].setdefault(name, {})[library] = _significant(2.0 * m * k * n / seconds[name] / 1e9)
        result["families"][library] = _families(shapes, seconds)
    return result


def _pin(threads):
    """Cut this process's CPU affinity to its first ``threads`` cores (runtimes that size their pools from it)."""
    try:
        cores = sorted(os.sched_getaffinity(0))
        os.sched_setaffinity(0, cores[:threads])
    except (AttributeError, OSError):
        pass


def run_all(quick=False):
    """Every candidate at 1 and 2 threads, each count in its own process; see the module docstring."""
    runs = {}
    for threads in THREAD_COUNTS:
        env = {**os.environ, **{name: str(threads) for name in _THREAD_VARIABLES}}
        command = [sys.executable, "-m", "zoo.bench.providers", "--threads", str(threads)] + (["--quick"] if quick
                                                                                              else [])
        done = subprocess.run(command, env=env, check=True, stdout=subprocess.PIPE, text=True)
        runs[f"{threads}t"] = json.loads(done.stdout)
    summary = {}
    for key, run in runs.items():
        best = max(run["peak"], key=run["peak"].get)
        reference = run["families"].get("numpy", {})
        summary[key] = {"peak_gflops": run["peak"][best], "peak_library": best,
                        "vs_numpy": {library: {family: round(rate / reference[family], 2)
                                               for family, rate in families.items()}
                                     for library, families in run["families"].items() if library != "numpy"}}
    return {"quick": quick, "libraries": runs["1t"]["libraries"], "summary": summary, **NOT_MEASURED,
            "runs": runs}


def main(argv=None):
    parser = argparse.ArgumentParser(description="one thread count of oar bench providers")
    parser.add_argument("--threads", type=int, required=True)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args(argv)
    print(json.dumps(measure(args.threads, args.quick)))


if __name__ == "__main__":
    main()
