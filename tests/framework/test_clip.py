"""Gradient clipping used standalone on (param, grad) pairs: values by hand,
None gradients passed through, inputs never modified."""
import numpy
import pytest

import framework
from framework.optimizer import ClipGradByGlobalNorm, ClipGradByNorm, ClipGradByValue


def _pairs(*grads):
    """(param, grad) pairs with float64 grads; a None grad stays None."""
    return [(framework.to_tensor(numpy.zeros(numpy.shape(g) if g is not None else 1), requires_grad=True),
             None if g is None else framework.to_tensor(numpy.array(g, dtype=numpy.float64)))
            for g in grads]


def _grads(pairs):
    return [None if g is None else g.numpy() for _, g in pairs]


def test_global_norm_scales_all_gradients_together():
    pairs = _pairs([3.0, 4.0], [[12.0]], None)  # global norm sqrt(9 + 16 + 144) = 13
    before = [g.numpy().copy() for _, g in pairs[:2]]
    out = ClipGradByGlobalNorm(clip_norm=6.5)(pairs)
    assert [p for p, _ in out] == [p for p, _ in pairs]
    a, b, none = _grads(out)
    numpy.testing.assert_allclose(a, [1.5, 2.0], rtol=1e-15)
    numpy.testing.assert_allclose(b, [[6.0]], rtol=1e-15)
    assert none is None
    for (_, g), old in zip(pairs, before):
        numpy.testing.assert_array_equal(g.numpy(), old)


def test_global_norm_below_the_limit_leaves_values():
    out = ClipGradByGlobalNorm(clip_norm=13.5)(_pairs([3.0, 4.0], [[12.0]]))
    numpy.testing.assert_array_equal(_grads(out)[0], [3.0, 4.0])
    numpy.testing.assert_array_equal(_grads(out)[1], [[12.0]])


def test_global_norm_keeps_each_gradient_dtype():
    pairs = [(None, framework.to_tensor(numpy.array([3.0, 4.0], numpy.float32))),
             (None, framework.to_tensor(numpy.array([12.0], numpy.float64)))]
    out = ClipGradByGlobalNorm(1.0)(pairs)
    assert [g.dtype for _, g in out] == [numpy.float32, numpy.float64]
    numpy.testing.assert_allclose(out[0][1].numpy(), [3 / 13, 4 / 13], rtol=1e-6)


def test_clip_by_norm_is_per_tensor():
    out = ClipGradByNorm(clip_norm=2.5)(_pairs([3.0, 4.0], [1.0, -1.0]))  # norms 5 and sqrt(2)
    a, b = _grads(out)
    numpy.testing.assert_allclose(a, [1.5, 2.0], rtol=1e-15)
    numpy.testing.assert_array_equal(b, [1.0, -1.0])


def test_clip_by_value():
    a, b = _grads(ClipGradByValue(max=1.0)(_pairs([-3.0, 0.5, 2.0], [[0.25, -1.5]])))
    numpy.testing.assert_array_equal(a, [-1.0, 0.5, 1.0])
    numpy.testing.assert_array_equal(b, [[0.25, -1.0]])
    (c,) = _grads(ClipGradByValue(max=1.0, min=0.0)(_pairs([-3.0, 0.5, 2.0])))
    numpy.testing.assert_array_equal(c, [0.0, 0.5, 1.0])


def test_bad_settings_are_named():
    with pytest.raises(ValueError, match="clip_norm"):
        ClipGradByGlobalNorm(0.0)
    with pytest.raises(ValueError, match="clip_norm"):
        ClipGradByNorm(-1.0)
    with pytest.raises(ValueError, match="min"):
        ClipGradByValue(max=1.0, min=2.0)
