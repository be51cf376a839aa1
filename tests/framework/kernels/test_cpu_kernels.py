"""The compiled CPU kernels (framework.kernels.cpu) against the NumPy kernels they replace.

Every comparison runs the same public op or kernel twice, once with the compiled
kernels (the default) and once with ``OAR_KERNELS=numpy`` (the reference), on
ragged batches with empty and length-1 sequences, both directions, batch 1 and
batch 6 (the BLAS path starts at 4 rows). float32 within 1e-5 relative, Viterbi
paths identical, float64 gradients by central differences through the compiled
backward. Each kernel compiles once per dtype per machine (cached under
$OAR_HOME/numba), so the tests share the cache of the user running them.
"""
import os
import subprocess
import sys

import numpy
import pytest

import framework
from framework import to_tensor
from framework.kernels import cpu
from framework.kernels import crf as crf_kernel
from framework.nn import functional as F
from framework.testing import gradcheck

pytestmark = pytest.mark.skipif(not cpu.enabled(), reason="the compiled CPU kernels are off")

D = 5
RAGGED = {"batch1": [7], "batch1_len1": [1], "ragged": [7, 0, 1, 3, 7, 5], "uneven_tail": [2, 6, 6, 6, 1, 4]}


def _both(monkeypatch, fn):
    """(compiled result, NumPy-kernel result) of ``fn()``."""
    monkeypatch.delenv(cpu.KERNELS_ENV, raising=False)
    compiled = fn()
    monkeypatch.setenv(cpu.KERNELS_ENV, "numpy")
    reference = fn()
    monkeypatch.delenv(cpu.KERNELS_ENV)
    return compiled, reference


def _close(a, b, dtype):
    tol = 1e-5 if dtype == numpy.float32 else 1e-11
    for x, y in zip(a, b):
        numpy.testing.assert_allclose(x, y, rtol=tol, atol=tol)


def _recurrent_inputs(rng, lengths, gates, dtype, runs):
    n, t = len(lengths), max(max(lengths), 1)
    arrays = [rng.uniform(-1, 1, (n, t, gates * D)) for _ in range(runs)]
    arrays += [rng.uniform(-0.6, 0.6, (D, gates * D)) for _ in range(runs)]
    arrays += [rng.uniform(-0.3, 0.3, (1, gates * D)) for _ in range(runs)]
    arrays += [rng.uniform(-0.5, 0.5, (n, D)) for _ in range(runs * (1 if gates == 3 else 2))]
    return [a.astype(dtype) for a in arrays], numpy.array(lengths, dtype=numpy.int64)


def _run_with_grads(op, arrays, lengths, **options):
    """Outputs and input gradients of op(*tensors) under a fixed random projection of the outputs."""
    tensors = [to_tensor(a, requires_grad=True) for a in arrays]
    n_x = {"gru": 1, "bigru": 2, "lstm": 1, "bilstm": 2}[op]
    xs, rest = tensors[:n_x], tensors[n_x:]
    fn = {"gru": F.dynamic_gru, "bigru": F.dynamic_bigru, "lstm": F.dynamic_lstm, "bilstm": F.dynamic_bilstm}[op]
    outs = fn(*xs, lengths, *rest, **options)
    rng = numpy.random.default_rng(1)
    loss = None
    for o in outs:
        term = (o * to_tensor(rng.standard_normal(o.shape).astype(o.dtype))).sum()
        loss = term if loss is None else loss + term
    loss.backward()
    return [o.numpy() for o in outs] + [t.grad.numpy() for t in tensors]


def _inference(op, arrays, lengths, **options):
    fn = {"bigru": F.dynamic_bigru, "bilstm": F.dynamic_bilstm}[op]
    with framework.no_grad():
        return [o.numpy() for o in fn(*[to_tensor(a) for a in arrays[:2]], lengths,
                                      *[to_tensor(a) for a in arrays[2:]], **options)]


@pytest.mark.parametrize("dtype", [numpy.float32, numpy.float64])
@pytest.mark.parametrize("lengths", list(RAGGED.values()), ids=list(RAGGED))
@pytest.mark.parametrize("origin_mode", [False, True])
def test_bigru_matches_numpy_kernel(monkeypatch, dtype, lengths, origin_mode):
    arrays, lens = _recurrent_inputs(numpy.random.default_rng(0), lengths, 3, dtype, runs=2)
    _close(*_both(monkeypatch, lambda: _run_with_grads("bigru", arrays, lens, origin_mode=origin_mode)), dtype)
    _close(*_both(monkeypatch, lambda: _inference("bigru", arrays, lens, origin_mode=origin_mode)), dtype)


@pytest.mark.parametrize("dtype", [numpy.float32, numpy.float64])
@pytest.mark.parametrize("lengths", list(RAGGED.values()), ids=list(RAGGED))
def test_bilstm_matches_numpy_kernel(monkeypatch, dtype, lengths):
    arrays, lens = _recurrent_inputs(numpy.random.default_rng(0), lengths, 4, dtype, runs=2)
    _close(*_both(monkeypatch, lambda: _run_with_grads("bilstm", arrays, lens)), dtype)
    _close(*_both(monkeypatch, lambda: _inference("bilstm", arrays, lens)), dtype)


@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("op", ["gru", "lstm"])
def test_single_direction_matches_numpy_kernel(monkeypatch, op, reverse):
    gates = 3 if op == "gru" else 4
    arrays, lens = _recurrent_inputs(numpy.random.default_rng(2), RAGGED["ragged"], gates, numpy.float32, runs=1)
    _close(*_both(monkeypatch, lambda: _run_with_grads(op, arrays, lens, reverse=reverse)), numpy.float32)


@pytest.fixture
def threads():
    """Sets the CPU thread count for one test (restored after)."""
    before = framework.threadpool.num_threads()
    yield framework.threadpool.set_num_threads
    framework.threadpool.set_num_threads(before)


@pytest.mark.parametrize("thread_count", [2, 3, 4])
@pytest.mark.parametrize("op", ["gru", "lstm", "bigru", "bilstm", "peephole"])
def test_rows_cut_into_parts_over_the_threads_match_numpy_kernel(monkeypatch, threads, op, thread_count):
    """With more threads than directions a run's rows are cut into parts (at least 8 rows each, of about equal
    steps), each part on its own thread: outputs, last states and every gradient equal the NumPy kernels', on a
    ragged batch with empty and length-1 rows, both directions."""
    from framework.kernels.cpu.recurrent import row_parts
    threads(thread_count)
    lengths = [11, 0, 3, 1, 11, 7, 2, 9, 5, 11, 1, 4, 8, 6, 10, 3, 0, 2, 11, 9, 7, 5, 3, 1, 6, 8, 4, 2, 10, 1, 5, 9]
    runs = 2 if op.startswith("bi") else 1
    assert len(row_parts(numpy.sort(lengths)[::-1], runs)) == min(thread_count // runs, len(lengths) // 8)
    gates = 3 if "gru" in op else 4
    arrays, lens = _recurrent_inputs(numpy.random.default_rng(13), lengths, gates, numpy.float32, runs=runs)
    name, options = (("lstm", {"use_peepholes": True}) if op == "peephole" else (op, {}))
    if op == "peephole":
        arrays[2] = numpy.random.default_rng(14).uniform(-0.3, 0.3, (1, 7 * D)).astype(numpy.float32)
    _close(*_both(monkeypatch, lambda: _run_with_grads(name, arrays, lens, **options)), numpy.float32)


def test_blas_threads_restored_after_parallel_runs(threads):
    """The directions run on two threads with their GEMMs on one BLAS thread each; afterwards the BLAS has its
    thread count back (a race between the threads' own restores once left it at 1 for the whole process)."""
    threadpoolctl = pytest.importorskip("threadpoolctl")
    threads(2)
    before = [info["num_threads"] for info in threadpoolctl.threadpool_info() if info["user_api"] == "blas"]
    arrays, lens = _recurrent_inputs(numpy.random.default_rng(6), [9] * 40, 4, numpy.float32, runs=2)
    for _ in range(20):
        _inference("bilstm", arrays, lens)
    after = [info["num_threads"] for info in threadpoolctl.threadpool_info() if info["user_api"] == "blas"]
    assert after == before


def test_reverse_runs_inside_each_length():
    """A reversed sequence's outputs are the forward run on the flipped valid part, flipped back."""
    arrays, lens = _recurrent_inputs(numpy.random.default_rng(3), [6, 3, 1, 0, 6], 3, numpy.float64, runs=1)
    x, w, b, h0 = arrays
    with framework.no_grad():
        hidden, last = F.dynamic_gru(to_tensor(x), lens, to_tensor(w), to_tensor(b), to_tensor(h0), reverse=True)
        for n, length in enumerate(lens):
            flipped = x[n:n + 1, :length][:, ::-1].copy()
            if length == 0:
                numpy.testing.assert_array_equal(last.numpy()[n], h0[n])
                continue
            one, one_last = F.dynamic_gru(to_tensor(flipped), None, to_tensor(w), to_tensor(b), to_tensor(h0[n:n + 1]))
            numpy.testing.assert_allclose(hidden.numpy()[n, :length], one.numpy()[0, ::-1], rtol=1e-12, atol=1e-12)
            numpy.testing.assert_array_equal(hidden.numpy()[n, length:], 0)
            numpy.testing.assert_allclose(last.numpy()[n], one_last.numpy()[0], rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("op", ["bigru", "bilstm"])
def test_gradcheck_through_compiled_backward(op):
    gates = 3 if op == "bigru" else 4
    arrays, lens = _recurrent_inputs(numpy.random.default_rng(4), [4, 0, 1, 3, 4, 2], gates, numpy.float64, runs=2)
    fn = F.dynamic_bigru if op == "bigru" else F.dynamic_bilstm
    gradcheck(lambda *t: fn(t[0], t[1], lens, *t[2:]), arrays, max_elements=40)


DEPTHWISE_CASES = {  # (input shape, kernel, stride, padding, dilation)
    "same_3x3": ((2, 4, 7, 6), (3, 3), 1, 1, 1),
    "stride_2": ((3, 5, 9, 8), (3, 3), 2, 1, 1),
    "mixed": ((2, 3, 10, 11), (3, 2), (2, 3), (2, 0), (2, 1)),
    "window_past_edge": ((1, 3, 2, 2), (3, 3), 2, 2, 1),
}


@pytest.mark.parametrize("dtype", [numpy.float32, numpy.float64])
@pytest.mark.parametrize("case", list(DEPTHWISE_CASES.values()), ids=list(DEPTHWISE_CASES))
def test_depthwise_conv_matches_numpy_kernel(monkeypatch, dtype, case):
    """Forward and input gradient bit for bit, weight gradient to the tolerance, through the public op."""
    shape, kernel, stride, padding, dilation = case
    rng = numpy.random.default_rng(5)
    x_data = rng.standard_normal(shape).astype(dtype)
    w_data = rng.standard_normal((shape[1], 1) + kernel).astype(dtype)

    def run():
        x, w = to_tensor(x_data, requires_grad=True), to_tensor(w_data, requires_grad=True)
        y = F.conv2d(x, w, stride=stride, padding=padding, dilation=dilation, groups=shape[1])
        (y * to_tensor(numpy.linspace(-1, 1, y.size, dtype=dtype).reshape(y.shape))).sum().backward()
        return y.numpy(), x.grad.numpy(), w.grad.numpy()

    (y, gx, gw), (y_ref, gx_ref, gw_ref) = _both(monkeypatch, run)
    numpy.testing.assert_array_equal(y, y_ref)
    numpy.testing.assert_array_equal(gx, gx_ref)
    _close([gw], [gw_ref], dtype)


MAX_POOL_CASES = {  # x shape, kernel, stride, padding, ceil_mode
    "resnet_stem": ((2, 3, 12, 11), 3, 2, 1, False),
    "unpadded": ((3, 2, 8, 8), 2, 2, 0, False),
    "overlapping_ceil": ((2, 2, 9, 7), (3, 2), (2, 1), (1, 0), True),
    "stride_1": ((1, 4, 5, 6), 3, 1, 1, False),
}


@pytest.mark.parametrize("dtype", [numpy.float32, numpy.float64])
@pytest.mark.parametrize("case", list(MAX_POOL_CASES.values()), ids=list(MAX_POOL_CASES))
def test_max_pool_matches_numpy_kernel(monkeypatch, dtype, case):
    """Output, gradient and which tap won, bit for bit, through the public op: ties (the first tap wins), a NaN
    (it wins from where it appears), -inf inputs beside the padding's -inf, windows running past the edge."""
    shape, kernel, stride, padding, ceil_mode = case
    rng = numpy.random.default_rng(6)
    x_data = rng.integers(-3, 4, shape).astype(dtype)                 # small integers: many ties
    x_data[0, 0, 0, :2] = -numpy.inf
    x_data[-1, -1, 2, 3] = numpy.nan

    def run():
        x = to_tensor(x_data, requires_grad=True)
        y = F.max_pool2d(x, kernel, stride, padding, ceil_mode=ceil_mode)
        (y * to_tensor(numpy.linspace(-1, 1, y.size, dtype=dtype).reshape(y.shape))).sum().backward()
        return y.numpy(), x.grad.numpy()

    (y, gx), (y_ref, gx_ref) = _both(monkeypatch, run)
    numpy.testing.assert_array_equal(y, y_ref)
    numpy.testing.assert_array_equal(gx, gx_ref)


@pytest.mark.parametrize("thread_count", [1, 2])
def test_max_pool_gradcheck_through_compiled_kernel(threads, thread_count):
    threads(thread_count)
    x = numpy.random.default_rng(7).standard_normal((3, 2, 7, 6))
    gradcheck(lambda t: F.max_pool2d(t, 3, 2, 1), [x])


@pytest.mark.parametrize("dtype", [numpy.float32, numpy.float64])
@pytest.mark.parametrize("relu", [False, True])
@pytest.mark.parametrize("threads", [1, 2])
def test_channel_affine_matches_numpy_bit_for_bit(monkeypatch, dtype, relu, threads):
    """An inference program's fused batch norm (+ ReLU): the compiled pass gives NumPy's multiply, add and
    maximum bit for bit, NaN, infinities and zeros of both signs included, on any thread count."""
    from framework import threadpool
    from framework.kernels.affine import fused_channel_affine
    rng = numpy.random.default_rng(8)
    x = rng.standard_normal((3, 5, 700)).astype(dtype)
    x[0, 0, :6] = [numpy.nan, numpy.inf, -numpy.inf, 0.0, -0.0, 1e-30]
    scale, shift = rng.standard_normal(5).astype(dtype), rng.standard_normal(5).astype(dtype)
    scale[1], shift[1] = -1.0, 0.0                                          # -x: zeros change sign
    previous = threadpool.num_threads()
    threadpool.set_num_threads(threads)
    try:
        y, y_ref = _both(monkeypatch, lambda: fused_channel_affine(x, scale, shift, relu))
    finally:
        threadpool.set_num_threads(previous)
    assert y.dtype == dtype and y.shape == x.shape
    numpy.testing.assert_array_equal(y.view(f"u{y.itemsize}"), y_ref.view(f"u{y.itemsize}"))


@pytest.mark.parametrize("dtype", [numpy.float32, numpy.float64])
@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("shape", [(4, 6, 9, 7), (2, 3, 1, 1), (2, 5)], ids=["images", "one_position", "features"])
def test_batch_norm_training_matches_numpy_kernel(monkeypatch, dtype, threads, shape):
    """Batch statistics: output, running statistics and the three gradients equal the NumPy passes', on
    activations far from zero mean (the compiled sums centre before squaring), any thread count."""
    from framework import threadpool
    rng = numpy.random.default_rng(9)
    x = (rng.standard_normal(shape) * 3 + 40).astype(dtype)
    weight, bias = rng.standard_normal(shape[1]).astype(dtype), rng.standard_normal(shape[1]).astype(dtype)
    projection = rng.standard_normal(shape).astype(dtype)

    def run():
        tensors = [to_tensor(a, requires_grad=True) for a in (x, weight, bias)]
        mean, var = to_tensor(numpy.zeros(shape[1], dtype)), to_tensor(numpy.ones(shape[1], dtype))
        y = F.batch_norm(tensors[0], mean, var, tensors[1], tensors[2], training=True)
        (y * to_tensor(projection)).sum().backward()
        return [y.numpy(), mean.numpy(), var.numpy()] + [t.grad.numpy() for t in tensors]

    previous = threadpool.num_threads()
    threadpool.set_num_threads(threads)
    try:
        compiled, reference = _both(monkeypatch, run)
    finally:
        threadpool.set_num_threads(previous)
    tol = 2e-4 if dtype == numpy.float32 else 1e-10
    for a, b in zip(compiled, reference):
        assert a.dtype == dtype
        numpy.testing.assert_allclose(a, b, rtol=tol, atol=tol)


def test_batch_norm_backward_after_switching_kernels(monkeypatch):
    """A forward by the compiled kernels (which keep x) and a backward by the NumPy ones give the gradients of
    NumPy's kernels alone."""
    rng = numpy.random.default_rng(10)
    x = rng.standard_normal((3, 4, 5))
    weight, bias = rng.standard_normal(4), rng.standard_normal(4)

    def grads(switch):
        tensors = [to_tensor(a, requires_grad=True) for a in (x, weight, bias)]
        y = F.batch_norm(tensors[0], to_tensor(numpy.zeros(4)), to_tensor(numpy.ones(4)), tensors[1], tensors[2],
                         training=True)
        if switch:
            monkeypatch.setenv(cpu.KERNELS_ENV, "numpy")
        (y * y).sum().backward()
        monkeypatch.delenv(cpu.KERNELS_ENV, raising=False)
        return [t.grad.numpy() for t in tensors]

    switched, compiled = grads(True), grads(False)
    monkeypatch.setenv(cpu.KERNELS_ENV, "numpy")
    reference = grads(False)
    for a, b, c in zip(switched, compiled, reference):
        numpy.testing.assert_allclose(a, c, rtol=1e-10, atol=1e-10)
        numpy.testing.assert_allclose(b, c, rtol=1e-10, atol=1e-10)


def test_batch_norm_gradcheck_through_compiled_kernel():
    rng = numpy.random.default_rng(11)
    x, weight, bias = rng.standard_normal((3, 4, 2, 3)), rng.standard_normal(4), rng.standard_normal(4)
    gradcheck(lambda a, w, b: F.batch_norm(a, to_tensor(numpy.zeros(4)), to_tensor(numpy.ones(4)), w, b,
                                           training=True), [x, weight, bias])


def test_depthwise_conv_gradcheck_through_compiled_kernel():
    rng = numpy.random.default_rng(6)
    x, w = rng.standard_normal((2, 3, 6, 5)), rng.standard_normal((3, 1, 3, 3))
    gradcheck(lambda a, b: F.conv2d(a, b, stride=2, padding=1, groups=3), [x, w])


@pytest.mark.parametrize("dtype", [numpy.float32, numpy.float64])
@pytest.mark.parametrize("thread_count", [1, 2])
def test_embedding_weight_grad_matches_numpy_kernel(monkeypatch, threads, dtype, thread_count):
    """The compiled scatter-add (an embedding's weight gradient) against NumPy's ``add.at``: repeated ids, the
    padding row zeroed, columns split over any thread count."""
    rng = numpy.random.default_rng(12)
    ids = rng.integers(0, 9, size=(7, 30))
    ids[0, :10] = 3                                                          # one id many times
    weight = rng.standard_normal((9, 66)).astype(dtype)
    upstream = rng.standard_normal((7, 30, 66)).astype(dtype)

    def grad():
        w = to_tensor(weight, requires_grad=True)
        (F.embedding(to_tensor(ids), w, padding_idx=0) * to_tensor(upstream)).sum().backward()
        return [w.grad.numpy()]
    threads(thread_count)
    compiled, reference = _both(monkeypatch, grad)
    expected = numpy.zeros_like(weight)
    numpy.add.at(expected, ids.reshape(-1), upstream.reshape(-1, 66))
    expected[0] = 0
    _close(compiled, reference, dtype)
    _close(compiled, [expected], dtype)


@pytest.mark.parametrize("dtype", [numpy.float32, numpy.float64])
@pytest.mark.parametrize("lazy", [False, True])
def test_adam_matches_numpy_kernel(monkeypatch, threads, dtype, lazy):
    """The compiled one-pass Adam update against the NumPy passes over five steps of a parameter large enough to
    be split over the threads (and a small one), lazy rows too: the same bits, on one thread and on three."""
    from framework.optimizer import Adam
    rng = numpy.random.default_rng(15)
    start = [rng.standard_normal((1500, 900)).astype(dtype), rng.standard_normal(7).astype(dtype)]
    grads = [[rng.standard_normal(a.shape).astype(dtype) for a in start] for _ in range(5)]
    for step in grads:
        step[0][::3] = 0                                                    # rows lazy mode leaves alone

    def trajectory():
        params = [to_tensor(a.copy(), requires_grad=True) for a in start]
        optimizer = Adam(0.01, parameters=params, lazy_mode=lazy)
        for step in grads:
            for param, grad in zip(params, step):
                param.grad = to_tensor(grad)
            optimizer.step()
        return [param.numpy() for param in params]
    threads(1)
    compiled, reference = _both(monkeypatch, trajectory)
    for a, b in zip(compiled, reference):
        numpy.testing.assert_array_equal(a, b)
    threads(3)
    for a, b in zip(trajectory(), compiled):
        numpy.testing.assert_array_equal(a, b)


def _crf_inputs(rng, lengths, k, dtype, scale=1.0):
    n, t = len(lengths), max(lengths)
    emissions = (rng.standard_normal((n, t, k)) * scale).astype(dtype)
    transition = (rng.standard_normal((k + 2, k)) * scale).astype(dtype)
    return emissions, transition, numpy.array(lengths, dtype=numpy.int64)


CRF_LENGTHS = {"batch1": [9], "batch1_len1": [1], "ragged": [9, 1, 4, 9, 2, 7]}


@pytest.mark.parametrize("dtype", [numpy.float32, numpy.float64])
@pytest.mark.parametrize("lengths", list(CRF_LENGTHS.values()), ids=list(CRF_LENGTHS))
@pytest.mark.parametrize("scale", [1.0, 60.0], ids=["plain", "extreme"])
def test_crf_forward_and_gradient_match_numpy_kernel(monkeypatch, dtype, lengths, scale):
    rng = numpy.random.default_rng(5)
    emissions, transition, lens = _crf_inputs(rng, lengths, 7, dtype, scale)
    labels = rng.integers(0, 7, emissions.shape[:2])

    def run():
        alpha = crf_kernel.crf_forward(emissions, lens, transition[0], transition[2:])
        e, tr = to_tensor(emissions, requires_grad=True), to_tensor(transition, requires_grad=True)
        nll = F.linear_chain_crf(e, labels, lens, tr)
        nll.sum().backward()
        return alpha, nll.numpy(), e.grad.numpy(), tr.grad.numpy()
    compiled, reference = _both(monkeypatch, run)
    tol = (1e-5 if dtype == numpy.float32 else 1e-11) * max(scale, 1.0)
    for a, b in zip(compiled, reference):
        numpy.testing.assert_allclose(a, b, rtol=1e-5 if dtype == numpy.float32 else 1e-11, atol=tol)


@pytest.mark.parametrize("dtype", [numpy.float32, numpy.float64])
@pytest.mark.parametrize("lengths", list(CRF_LENGTHS.values()), ids=list(CRF_LENGTHS))
def test_viterbi_paths_identical(monkeypatch, dtype, lengths):
    rng = numpy.random.default_rng(6)
    emissions, transition, lens = _crf_inputs(rng, lengths, 11, dtype)
    emissions[0, 0, :3] = emissions[0, 0, 3]                   # ties go to the lowest tag on both
    compiled, reference = _both(monkeypatch, lambda: [o.numpy() for o in F.viterbi_decode(
        to_tensor(emissions), to_tensor(transition), lens)])
    numpy.testing.assert_array_equal(compiled[1], reference[1])
    numpy.testing.assert_allclose(compiled[0], reference[0], rtol=1e-6)


@pytest.mark.parametrize("lengths", list(CRF_LENGTHS.values()), ids=list(CRF_LENGTHS))
def test_constrained_viterbi(monkeypatch, lengths):
    """Allowed-mask decoding equals the NumPy kernel's and the -1e4 penalty form, and obeys the mask."""
    rng = numpy.random.default_rng(7)
    emissions, transition, lens = _crf_inputs(rng, lengths, 6, numpy.float32)
    allowed = rng.random(transition.shape) > 0.3
    allowed[:, 0] = True                                       # every step has an allowed way on
    start, stop, trans = transition[0], transition[1], transition[2:]
    compiled, reference = _both(monkeypatch, lambda: crf_kernel.viterbi_decode(emissions, lens, start, stop, trans,
                                                                                allowed))
    numpy.testing.assert_array_equal(compiled[1], reference[1])
    numpy.testing.assert_allclose(compiled[0], reference[0], rtol=1e-6)
    penalised = transition + numpy.where(allowed, 0, -1e4).astype(numpy.float32)
    _, paths = crf_kernel.viterbi_decode(emissions, lens, penalised[0], penalised[1], penalised[2:])
    numpy.testing.assert_array_equal(compiled[1], paths)
    for n, length in enumerate(lens):
        path = compiled[1][n, :length]
        assert allowed[0, path[0]] and allowed[1, path[-1]]
        assert all(allowed[2 + a, b] for a, b in zip(path[:-1], path[1:]))


@pytest.mark.parametrize("k", [6, 17, 40])                    # below, across and over the padded width
def test_viterbi_tag_counts_paths_identical(monkeypatch, k):
    """Tag counts that are not a multiple of the kernel's padded width, or of its four-tag pass, decode alike."""
    rng = numpy.random.default_rng(8)
    emissions, transition, lens = _crf_inputs(rng, [12, 3, 1, 12, 7], k, numpy.float32)
    emissions[1, :, :] = 0.0                                   # ties everywhere in one row
    compiled, reference = _both(monkeypatch, lambda: crf_kernel.viterbi_decode(
        emissions, lens, transition[0], transition[1], transition[2:]))
    numpy.testing.assert_array_equal(compiled[1], reference[1])
    numpy.testing.assert_allclose(compiled[0], reference[0], rtol=1e-6)


@pytest.mark.parametrize("bos_eos", [True, False])
def test_viterbi_op_allowed_mask(monkeypatch, bos_eos):
    """F.viterbi_decode(allowed=...) equals the kernel's constrained decoding on both kernels, obeys the mask,
    and refuses a mask of another shape."""
    rng = numpy.random.default_rng(9)
    emissions, transition, lens = _crf_inputs(rng, [9, 1, 4, 9, 2, 7], 6, numpy.float32)
    table = transition if bos_eos else transition[2:]
    allowed = rng.random(table.shape) > 0.3
    allowed[:, 0] = True
    compiled, reference = _both(monkeypatch, lambda: [o.numpy() for o in F.viterbi_decode(
        to_tensor(emissions), to_tensor(table), lens, include_bos_eos_tag=bos_eos, allowed=allowed)])
    numpy.testing.assert_array_equal(compiled[1], reference[1])
    full = allowed if bos_eos else numpy.concatenate([numpy.ones((2, 6), dtype=bool), allowed])
    start, stop = (transition[0], transition[1]) if bos_eos else (numpy.zeros(6, numpy.float32),) * 2
    _, paths = crf_kernel.viterbi_decode(emissions, lens, start, stop, table[-6:], full)
    numpy.testing.assert_array_equal(compiled[1], paths)
    for n, length in enumerate(lens):
        path = compiled[1][n, :length]
        assert full[0, path[0]] and full[1, path[-1]]
        assert all(full[2 + a, b] for a, b in zip(path[:-1], path[1:]))
    with pytest.raises(framework.tensor.OpError, match="allowed"):
        F.viterbi_decode(to_tensor(emissions), to_tensor(table), lens, include_bos_eos_tag=bos_eos,
                         allowed=allowed[1:])


def test_numpy_choice_and_bad_value(monkeypatch):
    monkeypatch.setenv(cpu.KERNELS_ENV, "numpy")
    assert not cpu.enabled()
    monkeypatch.setenv(cpu.KERNELS_ENV, "fortran")
    with pytest.raises(ValueError, match="OAR_KERNELS"):
        cpu.enabled()


def _python(code, **env):
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                          env={**os.environ, **env})


def test_unwritable_cache_compiles_in_memory(tmp_path):
    """An $OAR_HOME that cannot hold the cache folder: one warning, the kernel runs and gives the NumPy result."""
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    code = ("import numpy; from framework.kernels.cpu import crf; from framework.kernels import crf as ref\n"
            "rng = numpy.random.default_rng(0); e = rng.standard_normal((3, 5, 4)).astype(numpy.float32)\n"
            "l = numpy.array([5, 1, 3]); t = rng.standard_normal((6, 4)).astype(numpy.float32)\n"
            "s, p = crf.viterbi_decode(e, l, t[0], t[1], t[2:])\n"
            "s0, p0 = ref._viterbi_numpy(e, l, t[0], t[1], t[2:])\n"
            "assert (p == p0).all(), (p, p0); print('same')\n")
    result = _python(code, OAR_HOME=str(blocker / "home"))
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "same"
    assert result.stderr.count("cannot write the kernel cache folder") == 1, result.stderr
    assert "compiling the CPU kernels" in result.stderr and "in memory" in result.stderr


def test_numba_imported_lazily():
    """Listing the zoo and a non-recurrent model never import Numba; a recurrent op does, unless OAR_KERNELS=numpy."""
    code = ("import sys, io, contextlib, zoo.cli, framework\n"
            "with contextlib.redirect_stdout(io.StringIO()): assert zoo.cli.main(['list']) == 0\n"
            "from framework import nn; nn.Linear(3, 2)(framework.to_tensor([[1.0, 2.0, 3.0]]))\n"
            "assert 'numba' not in sys.modules\n"
            "from framework.nn import functional as F\n"
            "F.dynamic_gru(framework.to_tensor([[[0.5] * 6]]), None, framework.to_tensor([[0.1] * 6] * 2))\n"
            "print('numba' in sys.modules)\n")
    compiled = _python(code)
    assert compiled.returncode == 0, compiled.stderr
    assert compiled.stdout.strip() == "True"
    reference = _python(code, OAR_KERNELS="numpy")
    assert reference.returncode == 0, reference.stderr
    assert reference.stdout.strip() == "False"


@pytest.mark.parametrize("module", ["affine", "crf", "depthwise", "peephole", "pooling", "recurrent", "warm"])
def test_kernel_cache_on_disk_whichever_kernel_module_comes_first(tmp_path, module):
    """Each kernel module imported first in a fresh process still has Numba load after the cache folder is set,
    so what a command compiles is kept for the next one (an early ``import numba`` left every process compiling
    in memory)."""
    code = (f"import framework.kernels.cpu.{module}\n"
            "from framework.kernels.cpu import compiler\n"
            "print(compiler.CACHE_DIR)\n")
    result = _python(code, OAR_HOME=str(tmp_path / "home"))
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == str(tmp_path / "home" / "numba" / os.path.basename(result.stdout.strip()))
