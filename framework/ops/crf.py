"""Linear-chain CRF on padded batches: negative log-likelihood (forward
algorithm, differentiable) and Viterbi decoding.

Transition layout (Baidu LAC's ``crfw``): ``transition`` is (K+2, K); row 0
holds the start scores, row 1 the stop scores, and rows 2.. the tag-to-tag
scores ``transition[2 + i, j]`` of tag i followed by tag j. The score of a tag
path y of length L is

    start[y_0] + sum_{t<L} emissions[t, y_t] + sum_{0<t<L} trans[y_{t-1}, y_t] + stop[y_{L-1}]
"""

import numpy

from .. import backend
from ..kernels import crf as crf_kernel
from ..tensor import Function, Tensor, OpError
from ..kernels.runs import time_index
from .rnn import array_on_device, sequence_lengths
from .utils import check_float

__all__ = ["linear_chain_crf", "viterbi_decode"]


def _logsumexp(xp, a, axis):
    """Stable log(sum(exp(a))) over ``axis``."""
    top = a.max(axis=axis, keepdims=True)
    return (top + xp.log(xp.exp(a - top).sum(axis=axis, keepdims=True))).squeeze(axis)


def _one_hot(xp, labels, valid, num_tags):
    """(N, T, K) bool indicators of ``labels`` on valid positions."""
    return (labels[..., None] == xp.arange(num_tags)) & valid[..., None]


class LinearChainCRF(Function):
    """NLL per sequence; attributes ``labels`` (N, T) int64 and ``lengths`` (N,) int64."""

    def forward(self, emissions, transition):
        xp = self.xp
        n, num_steps, k = emissions.shape
        valid = xp.arange(num_steps) < self.lengths[:, None]
        gold = _one_hot(xp, self.labels, valid, k).astype(emissions.dtype)
        start, stop, trans = transition[0], transition[1], transition[2:]
        alpha = crf_kernel.crf_forward(emissions, self.lengths, start, trans)
        last = self.lengths - 1
        rows = xp.arange(n)
        log_z = _logsumexp(xp, alpha[rows, last] + stop, axis=1)
        gold_score = ((gold * emissions).sum(axis=(1, 2)) + gold[:, 0] @ start + gold[rows, last] @ stop
                      + ((gold[:, :-1] @ trans) * gold[:, 1:]).sum(axis=(1, 2)))
        self.saved = emissions, transition, alpha, log_z, gold, valid
        return log_z - gold_score

    def backward(self, grad):
        """Gradients are (marginal - gold indicator) * grad, with marginals by forward-backward."""
        xp = self.xp
        emissions, transition, alpha, log_z, gold, valid = self.saved
        stop, trans = transition[1], transition[2:]
        gamma = self._backward_scores(emissions, stop, trans)     # gamma[t, j] = emissions[t, j] + beta[t, j]
        marginals = xp.exp(alpha + gamma - emissions - log_z[:, None, None]) * valid[..., None]
        weighted = (marginals - gold) * grad[:, None, None]
        grad_emissions = weighted if self.needs_input_grad[0] else None
        grad_transition = None
        if self.needs_input_grad[1]:
            rows, last = xp.arange(len(grad)), self.lengths - 1
            grad_transition = xp.empty_like(transition)
            grad_transition[0] = weighted[:, 0].sum(axis=0)
            grad_transition[1] = weighted[rows, last].sum(axis=0)
            grad_transition[2:] = self._pair_marginals(alpha, gamma, trans, log_z, valid, grad) - xp.tensordot(
                gold[:, :-1] * (grad[:, None, None] * valid[:, 1:, None]), gold[:, 1:], axes=([0, 1], [0, 1]))
        return grad_emissions, grad_transition

    def _backward_scores(self, emissions, stop, trans):
        """gamma (N, T, K): the forward recursion run backwards inside each length, from the stop scores."""
        xp = self.xp
        index = time_index(self.lengths, emissions.shape[1], reverse=True)
        rows = xp.arange(emissions.shape[0])[:, None]
        reversed_alpha = crf_kernel.crf_forward(emissions[rows, index], self.lengths, stop,
                                                xp.ascontiguousarray(trans.T))
        return reversed_alpha[rows, index]

    def _pair_marginals(self, alpha, gamma, trans, log_z, valid, grad):
        """sum over n and 0 < t < L of grad[n] * P(y_{t-1} = i, y_t = j), as (K, K).

        P = exp(alpha[t-1, i] + trans[i, j] + gamma[t, j] - log_z) factors into
        x[t-1, i] * E[i, j] * q[t, j] with x = exp(alpha - max_i alpha) <= 1,
        E = exp(trans - max_i trans) <= 1 and q = P(y_t = j) / sum_i x_i E_ij;
        one GEMM over all (n, t) sums x^T q. Steps where some q exceeds
        1 / underflow_floor (the scaling too coarse) are summed exactly in log space.
        """
        xp = self.xp
        floor = crf_kernel.underflow_floor(alpha.dtype)
        prev, top = alpha[:, :-1], alpha[:, :-1].max(axis=2, keepdims=True)           # (N, T-1, K), (N, T-1, 1)
        column_max = trans.max(axis=0)
        log_q = gamma[:, 1:] + top + column_max - log_z[:, None, None]                 # (N, T-1, K)
        weight = grad[:, None] * valid[:, 1:]                                          # (N, T-1)
        coarse = valid[:, 1:] & (log_q.max(axis=2) > -numpy.log(floor))
        q = xp.exp(xp.where(valid[:, 1:, None] & ~coarse[..., None], log_q, -xp.inf))
        x = xp.exp(prev - top) * weight[..., None]
        total = xp.exp(trans - column_max) * xp.tensordot(x, q, axes=([0, 1], [0, 1]))
        for t in numpy.flatnonzero(backend.to_device(coarse.any(axis=0), "cpu")):
            rows = coarse[:, t]
            scores = alpha[rows, t, :, None] + trans + (gamma[rows, t + 1] - log_z[rows, None])[:, None, :]
            total += xp.tensordot(weight[rows, t], xp.exp(scores), axes=1)
        return total


def _check_emissions(op, emissions, transition, rows):
    """Validate emissions (N, T, K) against a transition of ``rows`` (K+2 or K) rows."""
    check_float(emissions, op)
    k = emissions.shape[-1] if emissions.ndim == 3 else None
    if emissions.ndim != 3 or transition.shape != (k + rows, k) or emissions.shape[1] == 0:
        raise OpError(f"{op}: expected emissions (N, T, K) with T > 0 and transition (K{'+' if rows else ''}"
                      f"{rows or ''}, K), got emissions {emissions.shape} and transition {transition.shape}")
    if transition.dtype != emissions.dtype:
        raise OpError(f"{op}: dtype mismatch, emissions {emissions.dtype} vs transition {transition.dtype}")


def linear_chain_crf(emissions, labels, lengths, transition):
    """Negative log-likelihood of each tag sequence under a linear-chain CRF.

    nll[n] = log Z[n] - score(labels[n]), with the path score in the module
    docstring and log Z the log-sum-exp over all paths of length lengths[n],
    computed by the forward algorithm in log space. The backward pass uses
    forward-backward marginals: d nll / d emissions[n, t, j] = P(y_t = j) - [labels[n, t] = j].

    Args:
        emissions: (N, T, K) float Tensor of per-position tag scores.
        labels: (N, T) int64 Tensor or array of gold tags; ignored at t >= lengths[n].
        lengths: (N,) int64 lengths in [1, T], or None (all T).
        transition: (K+2, K) float Tensor (start row, stop row, then trans[from, to]).

    Returns:
        (N,) Tensor, the negative log-likelihood of each sequence.
    """
    _check_emissions("linear_chain_crf", emissions, transition, rows=2)
    lengths = sequence_lengths(lengths, emissions, "linear_chain_crf", minimum=1)
    xp = backend.get_array_module(lengths)
    tags = array_on_device(labels, emissions)
    if tags.shape != emissions.shape[:2] or tags.dtype.kind not in "iu":
        raise OpError(f"linear_chain_crf: labels must be integers of shape {emissions.shape[:2]} "
                      f"for emissions {emissions.shape}, got {tuple(tags.shape)} {tags.dtype}")
    valid = xp.arange(tags.shape[1]) < lengths[:, None]
    tags = xp.where(valid, tags, 0).astype(xp.int64)
    if int(tags.min()) < 0 or int(tags.max()) >= emissions.shape[2]:
        raise OpError(f"linear_chain_crf: labels must lie in [0, {emissions.shape[2]}) on valid positions, "
                      f"got min {int(tags.min())} max {int(tags.max())}")
    return LinearChainCRF.apply(emissions, transition, labels=tags, lengths=lengths)


def viterbi_decode(emissions, transition, lengths=None, include_bos_eos_tag=True, allowed=None):
    """Highest-scoring tag path of each sequence (not differentiable).

    Args:
        emissions: (N, T, K) float Tensor.
        transition: (K+2, K) Tensor in the LAC layout (start row, stop row,
            trans[from, to]) when ``include_bos_eos_tag``; else (K, K) tag-to-tag
            scores only, with no start or stop scores.
        lengths: (N,) int64 lengths in [1, T], or None (all T).
        allowed: optional bool array (or Tensor) of ``transition``'s shape: only
            paths whose first tag, transitions and last tag are allowed are
            decoded (constrained decoding; a row with no allowed path scores
            -inf). None: every path.

    Returns:
        (scores, paths): scores (N,), the best path's score; paths (N, T) int64,
        0 at t >= lengths[n]. Ties go to the lowest tag index.
    """
    _check_emissions("viterbi_decode", emissions, transition, rows=2 if include_bos_eos_tag else 0)
    lengths = sequence_lengths(lengths, emissions, "viterbi_decode", minimum=1)
    if allowed is not None:
        allowed = array_on_device(allowed, emissions)
        if allowed.shape != tuple(transition.shape) or allowed.dtype != numpy.bool_:
            raise OpError(f"viterbi_decode: allowed must be a bool array of the transition's shape "
                          f"{tuple(transition.shape)}, got {allowed.shape} {allowed.dtype}")
    return ViterbiDecode.apply(emissions, transition, lengths=lengths, include_bos_eos_tag=bool(include_bos_eos_tag),
                               allowed=allowed)


class ViterbiDecode(Function):
    """(scores, paths) of :func:`viterbi_decode` (no gradient); attributes ``lengths``, ``include_bos_eos_tag``
    and ``allowed`` (None or a bool array of the table's shape), so a traced program decodes inside each length
    as eager does."""

    def forward(self, e, table):
        k = e.shape[2]
        xp = self.xp
        allowed = getattr(self, "allowed", None)
        if self.include_bos_eos_tag:
            start, stop, trans = table[0], table[1], table[2:]
        else:
            start, stop, trans = xp.zeros(k, dtype=e.dtype), xp.zeros(k, dtype=e.dtype), table
            if allowed is not None:                 # no start or stop scores: every first and last tag allowed
                allowed = xp.concatenate([xp.ones((2, k), dtype=bool), allowed])
        return crf_kernel.viterbi_decode(e, self.lengths, start, stop, trans, allowed)

    def backward(self, *grads):
        return None, None
