"""Linear-chain CRF recursions over a padded batch: the forward algorithm
(log-sum-exp) and Viterbi (max with backpointers), plus the backtrack.

Layout: emissions (N, T, K) batch-major, lengths (N,) int64 with
1 <= lengths <= T, start (K,) scores of the first tag, trans (K, K) with
trans[i, j] the score of tag i followed by tag j. Both recursions compute

    alpha[n, 0, j] = start[j] + emissions[n, 0, j]
    alpha[n, t, j] = reduce_i(alpha[n, t-1, i] + trans[i, j]) + emissions[n, t, j]     (0 < t < lengths[n])

with reduce = log-sum-exp (:func:`crf_forward`) or max (:func:`viterbi_decode`,
whose ties go to the lowest i, as ``numpy.argmax``); alpha is 0 at t >= lengths[n].

The NumPy versions loop over time. Viterbi runs the rows sorted by decreasing
length, updating only the rows still running, over an (N, K, K) score buffer
whose last axis is the previous tag (contiguous reductions), then backtracks
in the same order. The forward algorithm is one (N, K) x (K, K) GEMM per step
in scaled exp space with an exact log-space redo of any row the scaling would
underflow. The CuPy version is one ``RawKernel`` for both reductions (exact log
space): a block per sequence, a thread per tag, the previous step's alpha in
shared memory; its Viterbi backtrack is one gather per step.
"""
import functools

import numpy

from .. import backend
from . import cpu

__all__ = ["crf_forward", "viterbi_decode", "underflow_floor"]


# Rows up to which the compiled forward algorithm runs on the CPU: it walks one row at a time with scalar exp and
# log (no SVML in pip's Numba); from about 32 rows NumPy's (N, K) x (K, K) GEMM a step with vectorised exp/log is
# as fast or faster (`oar bench kernels`: K=85, 64 rows 5.9 ms compiled against 4.1 ms NumPy; 1 row 0.11 / 1.2 ms).
COMPILED_FORWARD_MAX_ROWS = 32


def crf_forward(emissions, lengths, start, trans):
    """Forward-algorithm log scores alpha (N, T, K); see the module docstring."""
    xp = backend.get_array_module(emissions)
    if xp is numpy:
        if cpu.enabled() and emissions.shape[0] < COMPILED_FORWARD_MAX_ROWS:
            from .cpu import crf as compiled
            return compiled.crf_forward(emissions, lengths, start, trans)
        return _forward_numpy(emissions, lengths, start, trans)
    return _recursion_cupy(xp, emissions, lengths, start, trans, use_max=False)[0]


def viterbi_decode(emissions, lengths, start, stop, trans, allowed=None):
    """Best path of each sequence: (scores (N,), paths (N, T) int64, 0 at t >= lengths[n]).

    ``stop`` (K,) scores the last tag; the path score is the Viterbi alpha of
    the last step plus ``stop``. Ties go to the lowest tag, at every step and at
    the end. ``allowed`` (K+2, K) bool, in the transition table's layout (start
    row, stop row, then ``[from, to]``), constrains the paths to allowed first
    tags, transitions and last tags (a row with no allowed path scores -inf).
    On the CPU the compiled kernel (:mod:`framework.kernels.cpu.crf`) runs unless
    ``OAR_KERNELS=numpy``.
    """
    xp = backend.get_array_module(emissions)
    if xp is numpy and cpu.enabled():
        from .cpu import crf as compiled
        return compiled.viterbi_decode(emissions, lengths, start, stop, trans, allowed)
    if allowed is not None:
        start, stop, trans = (xp.where(mask, scores, -xp.inf).astype(emissions.dtype)
                              for mask, scores in ((allowed[0], start), (allowed[1], stop), (allowed[2:], trans)))
    if xp is numpy:
        return _viterbi_numpy(emissions, lengths, start, stop, trans)
    alpha, backpointers = _recursion_cupy(xp, emissions, lengths, start, trans, use_max=True)
    final = alpha[xp.arange(len(lengths)), lengths - 1] + stop
    return final.max(axis=1), _backtrack_cupy(xp, backpointers, final.argmax(axis=1), lengths)


def underflow_floor(dtype):
    """sqrt(smallest normal) of ``dtype``: scaled sums at or above it lose nothing to underflow."""
    return float(numpy.sqrt(numpy.finfo(dtype).tiny))


# ---- NumPy ------------------------------------------------------------------

def _forward_numpy(emissions, lengths, start, trans):
    """The forward algorithm, one GEMM step at a time (:func:`_logsumexp_step_numpy`)."""
    alpha = numpy.zeros_like(emissions)
    alpha[:, 0] = start + emissions[:, 0]
    column_max = trans.max(axis=0)
    exp_trans = numpy.exp(trans - column_max)
    for t in range(1, int(lengths.max())):
        step = _logsumexp_step_numpy(alpha[:, t - 1], trans, exp_trans, column_max)
        alpha[:, t] = numpy.where((lengths > t)[:, None], step + emissions[:, t], 0)
    return alpha


def _viterbi_numpy(emissions, lengths, start, stop, trans):
    """Viterbi over the rows sorted by decreasing length, time-major; see :func:`viterbi_decode`.

    Step t updates only the rows still running (``active[t]``), so a finished
    row keeps its last alpha and needs no mask. The scores are laid out
    ``scores[n, j, i] = alpha[n, i] + trans[i, j]`` (the transition transposed
    once), so the max over the previous tag i runs along the contiguous last
    axis. The forward pass keeps every step's alpha and no backpointers: the
    backtrack recomputes the argmax for the one tag chosen at each step, from
    the same sums, so ties resolve exactly as a full argmax would.
    """
    n, num_steps, k = emissions.shape
    order = numpy.argsort(-lengths, kind="stable")
    active = (lengths[None, :] > numpy.arange(num_steps)[:, None]).sum(axis=1).tolist()
    steps = max(active.index(0) if 0 in active else num_steps, 1)
    e = numpy.ascontiguousarray(emissions[order].swapaxes(0, 1))                 # (T, N, K) in row order
    trans_t = numpy.ascontiguousarray(trans.T)                                     # trans_t[to, from]
    alpha = numpy.empty((steps, n, k), dtype=emissions.dtype)
    numpy.add(start, e[0], out=alpha[0])
    scores = numpy.empty((n, k, k), dtype=emissions.dtype)
    for t in range(1, steps):
        m = active[t]
        sc, a = scores[:m], alpha[t, :m]
        numpy.add(alpha[t - 1, :m, None, :], trans_t, out=sc)
        numpy.maximum.reduce(sc, axis=2, out=a)
        a += e[t, :m]
        if m < n:
            alpha[t, m:] = alpha[t - 1, m:]     # a finished row keeps its last alpha
    final = alpha[-1] + stop
    tags = final.argmax(axis=1)
    paths = numpy.zeros((num_steps, n), dtype=numpy.int64)
    for t in range(steps - 1, -1, -1):
        m = active[t]
        paths[t, :m] = tags[:m]
        if t:
            tags[:m] = (alpha[t - 1, :m] + trans_t[tags[:m]]).argmax(axis=1)
    rank = numpy.empty_like(order)
    rank[order] = numpy.arange(n)
    return final.max(axis=1)[rank], paths.T[rank]


def _logsumexp_step_numpy(prev, trans, exp_trans, column_max):
    """log sum_i exp(prev[:, i] + trans[i, j]) for prev (N, K) -> (N, K).

    One GEMM in scaled exp space: exp(prev - max prev) @ exp(trans - column max),
    both factors <= 1. A row where some sum falls below :func:`underflow_floor`
    (the scaling was too coarse for it) is recomputed exactly in log space.
    """
    top = prev.max(axis=1, keepdims=True)
    sums = numpy.exp(prev - top) @ exp_trans
    floor = underflow_floor(prev.dtype)
    out = numpy.log(numpy.maximum(sums, floor)) + top + column_max
    coarse = (sums < floor).any(axis=1)
    if coarse.any():
        scores = prev[coarse, :, None] + trans
        best = scores.max(axis=1)
        out[coarse] = best + numpy.log(numpy.exp(scores - best[:, None, :]).sum(axis=1))
    return out


# ---- CuPy -------------------------------------------------------------------

_RECURSION = r"""
extern "C" __global__ void oar_crf_recursion_SUFFIX(
        const TYPE* emissions,      // (N, T, K)
        const long long* lengths,   // (N,)
        const TYPE* start,          // (K,)
        const TYPE* trans,          // (K, K), trans[from * K + to]
        TYPE* alpha,                // (N, T, K), zero-filled on entry
        long long* backpointers,    // (N, T, K), zero-filled on entry; written when use_max
        const int num_steps, const int num_tags, const int use_max) {
    extern __shared__ unsigned char shared_bytes[];
    TYPE* prev = reinterpret_cast<TYPE*>(shared_bytes);    // alpha[n, t-1, :]
    const int n = blockIdx.x, j = threadIdx.x;             // one block per sequence, one thread per tag
    const long long length = lengths[n];                   // the same for the whole block
    const long long base = (long long)n * num_steps * num_tags;
    TYPE value = start[j] + emissions[base + j];
    alpha[base + j] = value;
    prev[j] = value;
    __syncthreads();
    for (int t = 1; t < length; ++t) {
        TYPE best = prev[0] + trans[j];
        int arg = 0;
        for (int i = 1; i < num_tags; ++i) {
            const TYPE s = prev[i] + trans[i * num_tags + j];
            if (s > best) { best = s; arg = i; }
        }
        const long long at = base + (long long)t * num_tags + j;
        if (use_max) {
            backpointers[at] = arg;
        } else {
            TYPE sum = 0;
            for (int i = 0; i < num_tags; ++i) sum += exp(prev[i] + trans[i * num_tags + j] - best);
            best += log(sum);
        }
        value = best + emissions[at];
        alpha[at] = value;
        __syncthreads();
        prev[j] = value;
        __syncthreads();
    }
}
"""


@functools.lru_cache(maxsize=None)
def _cupy_recursion(type_name):
    """The recursion RawKernel for C type ``type_name`` ('float' or 'double')."""
    cupy = backend.array_module("gpu")
    source = _RECURSION.replace("TYPE", type_name).replace("SUFFIX", type_name)
    return cupy.RawKernel(source, f"oar_crf_recursion_{type_name}")


def _recursion_cupy(cupy, emissions, lengths, start, trans, use_max):
    """Launch one block of K threads per sequence (K <= 1024)."""
    n, num_steps, k = emissions.shape
    if k > 1024:
        raise ValueError(f"crf kernel: at most 1024 tags on the GPU, got {k}")
    type_name = {numpy.dtype(numpy.float32): "float", numpy.dtype(numpy.float64): "double"}[emissions.dtype]
    alpha = cupy.zeros_like(emissions)
    backpointers = cupy.zeros((n, num_steps, k), dtype=cupy.int64)
    kernel = _cupy_recursion(type_name)
    kernel((n,), (k,),
           (cupy.ascontiguousarray(emissions), cupy.ascontiguousarray(lengths, dtype=cupy.int64),
            cupy.ascontiguousarray(start), cupy.ascontiguousarray(trans), alpha, backpointers,
            numpy.int32(num_steps), numpy.int32(k), numpy.int32(use_max)),
           shared_mem=k * emissions.dtype.itemsize)
    return alpha, (backpointers if use_max else None)


def _backtrack_cupy(cupy, backpointers, last_tags, lengths):
    """Best paths (N, T) int64 from backpointers (N, T, K) and each sequence's last tag (N,); 0 beyond lengths."""
    n, num_steps, _ = backpointers.shape
    paths = cupy.zeros((n, num_steps), dtype=cupy.int64)
    rows = cupy.arange(n)
    tags = last_tags
    for t in range(num_steps - 1, -1, -1):
        tags = cupy.where(lengths - 1 == t, last_tags, tags)
        paths[:, t] = cupy.where(lengths > t, tags, 0)
        tags = backpointers[rows, t, tags]
    return paths
