"""The peephole LSTM (Paddle's ``lstm`` with ``use_peepholes``): the compiled CPU forward against the NumPy
reference kernel, with and without a gradient (the compiled forward saves what the NumPy backward reads), on
ragged lengths in both directions."""
import contextlib

import numpy
import pytest

import framework
from framework import to_tensor
from framework.kernels import cpu
from framework.nn import functional as F

pytestmark = pytest.mark.skipif(not cpu.enabled(), reason="the compiled CPU kernels are off")

D = 5
RAGGED = {"batch1": [7], "ragged": [7, 0, 1, 3, 7, 5], "uneven_tail": [2, 6, 6, 6, 1, 4]}


def _inputs(lengths, dtype):
    rng = numpy.random.default_rng(0)
    n, t = len(lengths), max(lengths)
    arrays = [rng.uniform(-1, 1, (n, t, 4 * D)) for _ in range(2)] + [rng.uniform(-0.6, 0.6, (D, 4 * D))
                                                                      for _ in range(2)]
    arrays += [rng.uniform(-0.5, 0.5, (1, 7 * D)) for _ in range(2)] + [rng.uniform(-0.5, 0.5, (n, D))
                                                                        for _ in range(4)]
    return [a.astype(dtype) for a in arrays], numpy.array(lengths, dtype=numpy.int64)


def _run(arrays, lengths, grad):
    tensors = [to_tensor(a, requires_grad=grad) for a in arrays]
    with contextlib.nullcontext() if grad else framework.no_grad():
        outs = F.dynamic_bilstm(tensors[0], tensors[1], lengths, *tensors[2:], use_peepholes=True)
    if not grad:
        return [o.numpy() for o in outs]
    rng = numpy.random.default_rng(1)
    loss = sum((o * to_tensor(rng.standard_normal(o.shape).astype(o.dtype))).sum() for o in outs[1:])
    (loss + (outs[0] * to_tensor(rng.standard_normal(outs[0].shape).astype(outs[0].dtype))).sum()).backward()
    return [o.numpy() for o in outs] + [t.grad.numpy() for t in tensors]


@pytest.mark.parametrize("dtype", [numpy.float32, numpy.float64])
@pytest.mark.parametrize("lengths", list(RAGGED.values()), ids=list(RAGGED))
@pytest.mark.parametrize("grad", [False, True])
def test_compiled_forward_matches_numpy_kernel(monkeypatch, dtype, lengths, grad):
    arrays, lens = _inputs(lengths, dtype)
    monkeypatch.delenv(cpu.KERNELS_ENV, raising=False)
    compiled = _run(arrays, lens, grad)
    monkeypatch.setenv(cpu.KERNELS_ENV, "numpy")
    reference = _run(arrays, lens, grad)
    tol = 1e-5 if dtype == numpy.float32 else 1e-11
    assert len(compiled) == len(reference) == (15 if grad else 5)
    for a, b in zip(compiled, reference):
        numpy.testing.assert_allclose(a, b, rtol=tol, atol=tol)


def test_padding_is_zero_and_reverse_starts_at_each_length():
    """A reverse run's first step is each row's last valid position: a row's outputs do not depend on the
    padding after it, and padded positions are 0."""
    arrays, lens = _inputs([6, 3], numpy.float64)
    hidden = _run(arrays, lens, False)[0]
    assert not hidden[1, 3:].any()
    padded = [a.copy() for a in arrays]
    padded[1][1, 3:] = 100.0                                # the backward input past row 1's length
    numpy.testing.assert_array_equal(_run(padded, lens, False)[0], hidden)
