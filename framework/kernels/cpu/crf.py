"""Compiled linear-chain CRF recursions: the forward algorithm and Viterbi (plain and constrained).

Same layout, results and tie rule as :mod:`framework.kernels.crf` (emissions (N, T, K), lengths (N,) in
[1, T], start (K,), trans (K, K) ``trans[from, to]``), one row of the batch at a time with its alpha in a
K-vector; rows are split over the CPU threads when there are several.

- :func:`crf_forward`: per step K exponentials of the previous alpha less its
  maximum, one mat-vec with exp(trans - column max) (both factors <= 1), K
  logarithms; a step whose sums fall below the underflow floor is redone
  exactly in log space, as the NumPy kernel does.
- :func:`viterbi_decode`: per step a max over the previous tag for every tag
  (vectorised over the tag; ties to the lowest previous tag, as ``argmax``),
  backpointers for the row, then the backtrack; paths identical to the NumPy
  kernel's. With ``allowed`` (K+2, K) bool in LAC's layout (start row, stop
  row, then ``[from, to]``) it decodes only paths whose first tag, transitions
  and last tag are allowed (constrained decoding); a row with no allowed path
  scores -inf and gets tag 0 throughout.

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
def _viterbi_rows(emissions, lengths, start, stop, trans, constrained, allowed, scores, paths, first, last):
    """scores[first:last] and paths[first:last] of :func:`viterbi_decode`; paths zero-filled on entry."""
    num_steps, k = emissions.shape[1], emissions.shape[2]
    alpha = numpy.empty(k, dtype=emissions.dtype)
    best = numpy.empty(k, dtype=emissions.dtype)
    backpointers = numpy.zeros((num_steps, k), dtype=numpy.int32)
    minus_inf = -numpy.inf
    for r in range(first, last):
        length = lengths[r]
        for j in range(k):
            alpha[j] = start[j] + emissions[r, 0, j]
            if constrained and not allowed[0, j]:
                alpha[j] = minus_inf
        for t in range(1, length):
            bp = backpointers[t]
            if constrained:
                for j in range(k):
                    best[j] = minus_inf
                    bp[j] = 0
                for i in range(k):
                    a = alpha[i]
                    for j in range(k):
                        s = a + trans[i, j]
                        take = allowed[2 + i, j] and s > best[j]
                        best[j] = s if take else best[j]
                        bp[j] = i if take else bp[j]
            else:
                for j in range(k):
                    best[j] = alpha[0] + trans[0, j]
                    bp[j] = 0
                for i in range(1, k):          # selects, not branches: vectorised over j
                    a = alpha[i]
                    for j in range(k):
                        s = a + trans[i, j]
                        take = s > best[j]
                        best[j] = s if take else best[j]
                        bp[j] = i if take else bp[j]
            for j in range(k):
                alpha[j] = best[j] + emissions[r, t, j]
        tag = 0
        top = alpha[0] + stop[0]
        if constrained and not allowed[1, 0]:
            top = minus_inf
        for j in range(1, k):
            s = alpha[j] + stop[j]
            if (not constrained or allowed[1, j]) and s > top:
                top = s
                tag = j
        scores[r] = top
        paths[r, length - 1] = tag
        for t in range(length - 1, 0, -1):
            tag = backpointers[t, tag]
            paths[r, t - 1] = tag


def _over_rows(fn, n, work_per_row):
    """fn(first, last) over the rows [0, n), split over the CPU threads when the work is large enough."""
    from ... import parallel
    if n > 1 and parallel.num_threads() > 1:
        parallel.run_chunks(fn, n, elements_per_index=work_per_row)
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
    start, stop, trans = _host(start), _host(stop), _host(trans)
    n, num_steps, k = emissions.shape
    constrained = allowed is not None
    allowed = _host(allowed, numpy.bool_) if constrained else numpy.ones((1, 1), dtype=numpy.bool_)
    scores = numpy.empty(n, dtype=emissions.dtype)
    paths = numpy.zeros((n, num_steps), dtype=numpy.int64)
    _over_rows(lambda first, last: _viterbi_rows(emissions, lengths, start, stop, trans, constrained, allowed,
                                                 scores, paths, first, last), n, num_steps * k * k)
    return scores, paths
