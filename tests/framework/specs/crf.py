"""Specs for framework/ops/crf.py: linear_chain_crf and viterbi_decode.

The reference enumerates every tag path of each sequence (tiny K and T): the
log partition is the log-sum-exp of all path scores and the Viterbi path is
the best one.
"""
import itertools

import numpy

import framework.nn.functional as F
from ..opspec import OpSpec

N, T, K = 3, 4, 3
LENGTHS = [4, 1, 3]


def path_score(emissions, start, stop, trans, path):
    """Score of one tag path over the first len(path) positions of ``emissions`` (T, K)."""
    score = start[path[0]] + stop[path[-1]]
    score += sum(emissions[t, tag] for t, tag in enumerate(path))
    score += sum(trans[a, b] for a, b in zip(path, path[1:]))
    return score


def all_path_scores(emissions, start, stop, trans, length):
    """(paths, scores) for every path of ``length`` tags."""
    paths = list(itertools.product(range(emissions.shape[1]), repeat=length))
    return paths, numpy.array([path_score(emissions, start, stop, trans, p) for p in paths])


def crf_nll_reference(emissions, labels, lengths, transition):
    nll = []
    for e, y, length in zip(emissions, labels, lengths):
        _, scores = all_path_scores(e, transition[0], transition[1], transition[2:], length)
        top = scores.max()
        log_z = top + numpy.log(numpy.exp(scores - top).sum())
        nll.append(log_z - path_score(e, transition[0], transition[1], transition[2:], list(y[:length])))
    return numpy.array(nll)


def viterbi_reference(emissions, transition, lengths, include_bos_eos_tag=True):
    k = emissions.shape[2]
    if include_bos_eos_tag:
        start, stop, trans = transition[0], transition[1], transition[2:]
    else:
        start, stop, trans = numpy.zeros(k), numpy.zeros(k), transition
    scores, paths = [], numpy.zeros(emissions.shape[:2], dtype=numpy.int64)
    for i, (e, length) in enumerate(zip(emissions, lengths)):
        candidates, values = all_path_scores(e, start, stop, trans, length)
        best = int(values.argmax())
        scores.append(values[best])
        paths[i, :length] = candidates[best]
    return numpy.array(scores), paths


def _crf_inputs(rng):
    labels = rng.integers(0, K, (N, T))
    labels[1, 1:] = -1                       # padding labels are ignored
    return [rng.normal(size=(N, T, K)), labels, numpy.array(LENGTHS, dtype=numpy.int64),
            rng.normal(size=(K + 2, K))]


def _extreme_crf_inputs(rng):
    """Scores hundreds apart and forbidden (-5000) transitions: the NumPy forward
    step and the pair marginals leave their scaled exp-space GEMMs for exact log space."""
    emissions, labels, lengths, transition = _crf_inputs(rng)
    emissions[0, 1], emissions[0, 2], emissions[2, 0] = [400, 0, 0], [0, 1200, 0], [0, 500, -500]
    transition[2:] = numpy.where(numpy.eye(K, dtype=bool), 0.5, -5000.0)
    return [emissions, labels, lengths, transition]


def _viterbi_inputs(rows):
    return lambda rng: [rng.normal(size=(N, T, K)), rng.normal(size=(K + rows, K)),
                        numpy.array(LENGTHS, dtype=numpy.int64)]


SPECS = [
    OpSpec("linear_chain_crf", F.linear_chain_crf, _crf_inputs, crf_nll_reference),
    OpSpec("linear_chain_crf", F.linear_chain_crf, _extreme_crf_inputs, crf_nll_reference, grad_atol=1e-5,
           id="crf.linear_chain_crf[extreme scores]"),
    OpSpec("viterbi_decode", F.viterbi_decode, _viterbi_inputs(2), viterbi_reference, grad=False),
    OpSpec("viterbi_decode", lambda e, tr, lengths: F.viterbi_decode(e, tr, lengths, include_bos_eos_tag=False),
           _viterbi_inputs(0), lambda e, tr, lengths: viterbi_reference(e, tr, lengths, False), grad=False),
]
