"""Compiled linear-chain CRF recursions: the forward algorithm and Viterbi (plain and constrained).

Same layout, results and tie rule as :mod:`framework.kernels.crf` (emissions (N, T, K), lengths (N,) in
[1, T], start (K,), trans (K, K) ``trans[from, to]``), one row of the batch at a time with its alpha in a
K-vector; rows are split over the CPU threads when there are several.

- :func:`crf_forward`: per step K exponentials of the previous alpha less its
  maximum, one mat-vec with exp(trans - column max) (both factors <= 1), K
  logarithms; a step whose sums fall below the underflow floor is redone
  exactly in log space, as the NumPy kernel does.
- :func:`viterbi_decode`: per step the max over the previous tag for every
  tag, vectorised over the tag (the table padded to a multiple of 16 columns),
  four previous tags a pass from one buffer into the other (a select into a
  second buffer compiles to ``maxps``; into the same buffer it becomes masked
  stores); every step's alpha is kept and the backtrack recomputes the argmax
  for the one tag chosen at each step from the same sums (ties to the lowest
  previous tag, as ``argmax``), as the NumPy kernel does: paths identical to
  it. With ``allowed`` (K+2, K) bool in LAC's layout (start row, stop row,
  then ``[from, to]``) the disallowed scores are -inf, so only paths whose
  first tag, transitions and last tag are allowed are decoded (constrained
  decoding); a row with no allowed path scores -inf and gets tag 0 throughout.

Compiled without the no-inf / no-NaN fastmath assumptions (constrained
scores are -inf).
"""
import math

import numpy

from .compiler import FASTMATH_SAFE, kernel

__all__ = ["crf_forward", "viterbi_decode"]


@kernel(fastmath=FASTMATH_SAFE)
def _forward_rows(emissions, lengths, start, trans, exp_trans, column_max, floor, alpha, first, stop):
    """alpha[first:stop] of :func:`crf_forward`; alpha zero-filled on entry."""
    k = emissions.shape[2]
    p = numpy.empty(k, dtype=emissions.dtype)
    sums = numpy.empty(k, dtype=emissions.dtype)
    for r in range(first, stop):
        for j in range(k):
            alpha[r, 0, j] = start[j] + emissions[r, 0, j]
        for t in range(1, lengths[r]):
            prev = alpha[r, t - 1]
            top = prev[0]
            for i in range(1, k):
                top = max(top, prev[i])
            for i in range(k):
                p[i] = math.exp(prev[i] - top)
            for j in range(k):
                sums[j] = 0
            for i in range(k):
                pi = p[i]
                for j in range(k):
                    sums[j] += pi * exp_trans[i, j]
            coarse = False
            for j in range(k):
                coarse |= sums[j] < floor
            if not coarse:
                for j in range(k):
                    alpha[r, t, j] = math.log(sums[j]) + top + column_max[j] + emissions[r, t, j]
                continue
            for j in range(k):                  # exact log-space step
                best = prev[0] + trans[0, j]
                for i in range(1, k):
                    best = max(best, prev[i] + trans[i, j])
                total = 0.0
                for i in range(k):
                    total += math.exp(prev[i] + trans[i, j] - best)
                alpha[r, t, j] = best + math.log(total) + emissions[r, t, j]


@kernel(fastmath=False)
def _viterbi_rows(emissions, lengths, start, stop, trans, trans_t, scores, paths, first, last):
    """scores[first:last] and paths[first:last] of :func:`viterbi_decode`; paths zero-filled on entry.

    ``trans`` (K, W) is the transition table padded to W >= K columns (a multiple of the vector width, so the
    inner loop has no scalar tail); ``trans_t`` (K, K) its transpose, for the backtrack.
    """
    num_steps, k = emissions.shape[1], emissions.shape[2]
    width = trans.shape[1]
    alpha = numpy.zeros((num_steps, width), dtype=emissions.dtype)     # every step's alpha, for the backtrack
    buffers = numpy.zeros((2, width), dtype=emissions.dtype)
    for r in range(first, last):
        length = lengths[r]
        for j in range(k):
            alpha[0, j] = start[j] + emissions[r, 0, j]
        for t in range(1, length):
            a = alpha[t - 1, 0]
            for j in range(width):
                buffers[0, j] = a + trans[0, j]
            src = 0
            i = 1
            while i + 4 <= k:                       # four previous tags a pass, into the other buffer: the
                a0, a1, a2, a3 = alpha[t - 1, i], alpha[t - 1, i + 1], alpha[t - 1, i + 2], alpha[t - 1, i + 3]
                dst = 1 - src                       # selects become maxps (a read-modify-write of one buffer
                for j in range(width):              # compiles to masked stores instead)
                    b = buffers[src, j]
                    s = a0 + trans[i, j]
                    b = s if s > b else b
                    s = a1 + trans[i + 1, j]
                    b = s if s > b else b
                    s = a2 + trans[i + 2, j]
                    b = s if s > b else b
                    s = a3 + trans[i + 3, j]
                    b = s if s > b else b
                    buffers[dst, j] = b
                src = dst
                i += 4
            while i < k:
                a = alpha[t - 1, i]
                dst = 1 - src
                for j in range(width):
                    s = a + trans[i, j]
                    b = buffers[src, j]
                    buffers[dst, j] = s if s > b else b
                src = dst
                i += 1
            for j in range(k):
                alpha[t, j] = buffers[src, j] + emissions[r, t, j]
        final = alpha[length - 1]
        tag = 0
        top = final[0] + stop[0]
        for j in range(1, k):
            s = final[j] + stop[j]
            if s > top:
                top = s
                tag = j
        scores[r] = top
        paths[r, length - 1] = tag
        for t in range(length - 1, 0, -1):     # the argmax for the chosen tag, from the same sums
            prev = alpha[t - 1]
            column = trans_t[tag]
            tag = 0
            top = prev[0] + column[0]
            for i in range(1, k):
                s = prev[i] + column[i]
                if s > top:
                    top = s
                    tag = i
            paths[r, t - 1] = tag


_WIDTH = 16                                     # Viterbi rows padded to a multiple of this


def _over_rows(fn, n, work_per_row):
    """fn(first, last) over the rows [0, n), split over the CPU threads when the work is large enough."""
    from ... import threadpool
    if n > 1 and threadpool.num_threads() > 1:
        threadpool.run_chunks(fn, n, elements_per_index=work_per_row)
    else:
        fn(0, n)


def _host(a, dtype=None):
    """``a`` as a C-contiguous, writable array (one compiled signature per dtype)."""
    a = numpy.ascontiguousarray(a, dtype=dtype)
    return a if a.flags.writeable else a.copy()


def crf_forward(emissions, lengths, start, trans):
    """Forward-algorithm log scores alpha (N, T, K), 0 at t >= lengths[n]: :func:`framework.kernels.crf.crf_forward`."""
    emissions, lengths, start, trans = _host(emissions), _host(lengths, numpy.int64), _host(start), _host(trans)
    n, num_steps, k = emissions.shape
    alpha = numpy.zeros_like(emissions)
    column_max = trans.max(axis=0)
    exp_trans = numpy.exp(trans - column_max)
    floor = emissions.dtype.type(numpy.sqrt(numpy.finfo(emissions.dtype).tiny))    # the NumPy kernel's floor
    _over_rows(lambda first, stop: _forward_rows(emissions, lengths, start, trans, exp_trans, column_max, floor,
                                                 alpha, first, stop), n, num_steps * k * k)
    return alpha


def viterbi_decode(emissions, lengths, start, stop, trans, allowed=None):
    """Best path of each sequence: (scores (N,), paths (N, T) int64, 0 at t >= lengths[n]), as
    :func:`framework.kernels.crf.viterbi_decode`; ``allowed`` (K+2, K) bool constrains it (module docstring)."""
    emissions, lengths = _host(emissions), _host(lengths, numpy.int64)
    n, num_steps, k = emissions.shape
    dtype = emissions.dtype
    start, stop, trans = (numpy.asarray(a, dtype=dtype) for a in (start, stop, trans))
    if allowed is not None:                     # a disallowed score is -inf: never the max, ties as the mask's
        allowed = numpy.asarray(allowed, dtype=bool)
        start, stop, trans = (numpy.where(mask, a, -numpy.inf).astype(dtype)
                              for mask, a in ((allowed[0], start), (allowed[1], stop), (allowed[2:], trans)))
    width = -(-k // _WIDTH) * _WIDTH
    padded = numpy.zeros((k, width), dtype=dtype)
    padded[:, :k] = trans
    start, stop, trans_t = _host(start), _host(stop), numpy.ascontiguousarray(trans.T)
    scores = numpy.empty(n, dtype=dtype)
    paths = numpy.zeros((n, num_steps), dtype=numpy.int64)
    _over_rows(lambda first, last: _viterbi_rows(emissions, lengths, start, stop, padded, trans_t, scores, paths,
                                                 first, last), n, num_steps * k * k)
    return scores, paths
