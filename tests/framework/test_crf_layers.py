"""LinearChainCRF and ViterbiDecoder layers: shapes, probabilities, decoding, bad input."""
import itertools

import numpy
import pytest

import framework
from framework import nn
from framework.testing import assert_allclose

from .specs.crf import crf_nll_reference, viterbi_reference

K = 4


def _setup(seed=0, n=3, t=4, lengths=(4, 1, 3)):
    rng = numpy.random.default_rng(seed)
    framework.seed(seed)
    crf = nn.LinearChainCRF(K)
    emissions = framework.to_tensor(rng.normal(size=(n, t, K)).astype("float32"), requires_grad=True)
    return crf, emissions, numpy.array(lengths)


def test_transition_shape_and_nll_matches_enumeration():
    crf, emissions, lengths = _setup()
    assert crf.transition.shape == (K + 2, K)
    labels = numpy.random.default_rng(1).integers(0, K, (3, 4))
    nll = crf(emissions, labels, lengths)
    assert nll.shape == (3,)
    expected = crf_nll_reference(emissions.numpy().astype(float), labels, lengths, crf.transition.numpy().astype(float))
    assert_allclose(nll, expected, rtol=1e-5, atol=1e-5)
    assert numpy.all(nll.numpy() > 0)


def test_probabilities_of_all_paths_sum_to_one():
    crf, emissions, lengths = _setup(seed=2, n=1, t=3, lengths=(3,))
    paths = numpy.array(list(itertools.product(range(K), repeat=3)))
    batch = framework.to_tensor(numpy.repeat(emissions.numpy(), len(paths), axis=0))
    nll = crf(batch, paths, numpy.full(len(paths), 3))
    assert abs(numpy.exp(-nll.numpy().astype(numpy.float64)).sum() - 1) < 1e-4


def test_emission_gradient_is_marginal_minus_gold():
    """Per valid position the gradient sums to 0 over tags (marginals sum to 1); padding gets none."""
    crf, emissions, lengths = _setup(seed=3)
    labels = numpy.zeros((3, 4), dtype=numpy.int64)
    crf(emissions, labels, lengths).sum().backward()
    grad = emissions.grad.numpy()
    valid = numpy.arange(4)[None, :] < lengths[:, None]
    assert_allclose(grad.sum(axis=2)[valid], numpy.zeros(valid.sum()), atol=1e-6)
    assert numpy.all(grad[~valid] == 0)
    assert numpy.all(grad[..., 0][valid] <= 0) and numpy.all(grad[..., 1:][valid] >= 0)
    assert crf.transition.grad.shape == (K + 2, K)


def test_decoder_shares_the_transition_and_finds_the_best_path():
    crf, emissions, lengths = _setup(seed=4)
    decoder = nn.ViterbiDecoder(crf.transition)
    assert decoder.transition is crf.transition
    scores, paths = decoder(emissions, lengths)
    ref_scores, ref_paths = viterbi_reference(emissions.numpy().astype(float), crf.transition.numpy().astype(float),
                                              lengths)
    assert paths.dtype == numpy.int64 and paths.shape == (3, 4)
    assert_allclose(scores, ref_scores, rtol=1e-5, atol=1e-5)
    assert numpy.array_equal(paths.numpy(), ref_paths)
    best_nll = crf(emissions, paths.numpy(), lengths).numpy()           # the best path is the most likely one
    for path in itertools.product(range(K), repeat=4):
        labels = numpy.tile(numpy.array(path), (3, 1))
        assert numpy.all(crf(emissions, labels, lengths).numpy() >= best_nll - 1e-5)


def test_viterbi_ties_go_to_the_lowest_tag():
    decoder = nn.ViterbiDecoder(K)
    decoder.transition.data[...] = 0
    scores, paths = decoder(framework.to_tensor(numpy.zeros((2, 5, K), "float32")), [5, 3])
    assert numpy.array_equal(paths.numpy(), numpy.zeros((2, 5)))
    assert_allclose(scores, numpy.zeros(2))


def test_decoder_without_start_and_stop():
    decoder = nn.ViterbiDecoder(K, include_bos_eos_tag=False)
    assert decoder.transition.shape == (K, K)
    rng = numpy.random.default_rng(5)
    emissions = rng.normal(size=(2, 3, K)).astype("float32")
    scores, paths = decoder(framework.to_tensor(emissions))
    ref_scores, ref_paths = viterbi_reference(emissions.astype(float), decoder.transition.numpy().astype(float),
                                              [3, 3], include_bos_eos_tag=False)
    assert_allclose(scores, ref_scores, rtol=1e-5, atol=1e-5)
    assert numpy.array_equal(paths.numpy(), ref_paths)


def test_bad_input_raises_naming_the_op():
    crf, emissions, lengths = _setup()
    with pytest.raises(framework.OpError, match=r"linear_chain_crf.*labels.*\[0, 4\)"):
        crf(emissions, numpy.full((3, 4), K), lengths)
    with pytest.raises(framework.OpError, match=r"linear_chain_crf.*labels.*\(3, 4\)"):
        crf(emissions, numpy.zeros((3, 5), dtype=numpy.int64), lengths)
    with pytest.raises(framework.OpError, match=r"linear_chain_crf.*lengths.*\[1, 4\]"):
        crf(emissions, numpy.zeros((3, 4), dtype=numpy.int64), [4, 0, 2])
    with pytest.raises(framework.OpError, match=r"viterbi_decode.*\(3, 4, 4\).*\(6, 4\)"):
        nn.ViterbiDecoder(crf.transition, include_bos_eos_tag=False)(emissions)
