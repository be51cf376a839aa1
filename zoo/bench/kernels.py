"""``oar bench kernels``: each compiled CPU kernel beside its NumPy reference, in one process.

For every kernel (GRU and LSTM forward at batch 1 and 64, their backward at
batch 64, the CRF forward algorithm and Viterbi at batch 1 and 64, at LAC's
sizes: hidden 128 and 192, 57 and 85 tags, 90 steps — the People's Daily test
sentences' mean length) the best time of the compiled kernel and of the
NumPy kernel, their ratio, and the compiled kernel's rate: GFLOP/s for the
recurrences (2 flops per multiply-add of the recurrent products) and, at
batch 1, GB/s of recurrent weights read (the step re-reads them from L2);
beside the machine's measured single-thread GEMM peak (a 512³ float32 GEMM) and
L2 read rate (the dot product of the two halves of a 256 KB array, which
BLAS streams at the cache's rate; NumPy's float32 ``sum`` is bound by its own
arithmetic, well below it). Both kernels run the same arrays in
the same command; nothing is asserted.
"""
import os
import time

import numpy

from framework.timing import best_times

__all__ = ["run_all"]

STEPS = 90


def _best(fn, repeat, inner=1):
    fn()
    return best_times(lambda: [fn() for _ in range(inner)], repeat, warmup=0)[0] / inner


def _machine(repeat):
    a = numpy.random.default_rng(0).standard_normal((512, 512)).astype(numpy.float32)
    gemm = _best(lambda: a @ a, repeat, inner=4)
    first, second = numpy.ones((2, 32 * 1024), dtype=numpy.float32)    # 256 KB in all
    l2 = _best(lambda: first.dot(second), repeat, inner=200)
    return {"gemm_gflops": round(2 * 512 ** 3 / gemm / 1e9, 1),
            "l2_read_gbs": round((first.nbytes + second.nbytes) / l2 / 1e9, 1)}


def _with_kernels(choice, fn):
    previous = os.environ.get("OAR_KERNELS")
    os.environ["OAR_KERNELS"] = choice
    try:
        return fn()
    finally:
        if previous is None:
            del os.environ["OAR_KERNELS"]
        else:
            os.environ["OAR_KERNELS"] = previous


def _pair(run, repeat, inner):
    compiled = _with_kernels("numba", lambda: _best(run, repeat, inner))
    reference = _with_kernels("numpy", lambda: _best(run, repeat, inner))
    return {"compiled_ms": round(compiled * 1e3, 4), "numpy_ms": round(reference * 1e3, 4),
            "speedup": round(reference / compiled, 2)}, compiled


def _recurrent(mode, batch, hidden, repeat, backward):
    import framework
    from framework.nn import functional as F
    rng = numpy.random.default_rng(0)
    gates = 3 if mode == "gru" else 4
    width = gates * hidden
    lengths = numpy.full(batch, STEPS, dtype=numpy.int64)
    xs = [framework.to_tensor(rng.uniform(-1, 1, (batch, STEPS, width)).astype(numpy.float32),
                              requires_grad=backward) for _ in range(2)]
    ws = [framework.to_tensor(rng.uniform(-0.1, 0.1, (hidden, width)).astype(numpy.float32),
                              requires_grad=backward) for _ in range(2)]
    op = F.dynamic_bigru if mode == "gru" else F.dynamic_bilstm
    if backward:
        def run():
            out = op(*xs, lengths, *ws)[0]
            out.sum().backward()
    else:
        def run():
            with framework.no_grad():
                op(*xs, lengths, *ws)
    figures, seconds = _pair(run, repeat, 1 if batch > 1 or backward else 5)
    flops = 2 * 2 * batch * STEPS * hidden * width * (3 if backward else 1)    # both directions; bwd ~ 2 more
    figures["compiled_gflops"] = round(flops / seconds / 1e9, 2)
    if batch == 1 and not backward:
        figures["compiled_weight_gbs"] = round(2 * STEPS * hidden * width * 4 / seconds / 1e9, 1)
    return figures


def _crf(kind, batch, tags, repeat):
    from framework.kernels import crf
    rng = numpy.random.default_rng(0)
    emissions = rng.standard_normal((batch, STEPS, tags)).astype(numpy.float32)
    table = rng.standard_normal((tags + 2, tags)).astype(numpy.float32)
    lengths = numpy.full(batch, STEPS, dtype=numpy.int64)
    if kind == "viterbi":
        def run():
            crf.viterbi_decode(emissions, lengths, table[0], table[1], table[2:])
    else:
        def run():
            crf.crf_forward(emissions, lengths, table[0], table[2:])
    figures, seconds = _pair(run, repeat, 5 if batch == 1 else 1)
    figures["compiled_ns_per_pair"] = round(seconds / (batch * STEPS * tags * tags) * 1e9, 3)
    return figures


def run_all(quick=False):
    """``{"machine": {...}, "threads": ..., "kernels": {name: figures}}``; see the module docstring."""
    from framework import threadpool
    from framework.kernels import cpu
    repeat = 2 if quick else 5
    began = time.perf_counter()
    cpu.warmup()
    result = {"warmup_s": round(time.perf_counter() - began, 2), "machine": _machine(repeat),
              "threads": threadpool.num_threads(), "steps": STEPS, "kernels": {}}
    sizes = [(128, 1), (128, 64), (192, 1), (192, 64)] if not quick else [(128, 1), (128, 8)]
    for mode in ("gru", "lstm"):
        for hidden, batch in sizes:
            result["kernels"][f"{mode}_forward[h{hidden},b{batch}]"] = _recurrent(mode, batch, hidden, repeat, False)
        hidden, batch = (128, 64) if not quick else (128, 8)
        result["kernels"][f"{mode}_forward_backward[h{hidden},b{batch}]"] = _recurrent(mode, batch, hidden, repeat,
                                                                                       True)
    for kind in ("crf_forward", "viterbi"):
        for tags in (57, 85):
            for batch in ((1, 64) if not quick else (1, 8)):
                result["kernels"][f"{kind}[k{tags},b{batch}]"] = _crf(kind, batch, tags, repeat)
    return result
