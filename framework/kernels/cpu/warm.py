"""Compile every compiled CPU kernel ahead, for float32 and float64 (``oar warmup``, images, CI)."""
import time

import numpy

__all__ = ["warmup"]


def _recurrent(dtype):
    from . import peephole, recurrent
    from ..runs import SortedRuns
    rng = numpy.random.default_rng(0)
    n, num_steps, d = 5, 3, 4
    lengths = numpy.array([3, 3, 2, 1, 0], dtype=numpy.int64)
    seq = SortedRuns(lengths, num_steps, (False, True))
    order, active = seq.order, recurrent.active_counts(lengths, num_steps)
    grad_hidden, grad_last = numpy.ones((n, num_steps, 2 * d), dtype=dtype), numpy.zeros((2, n, d), dtype=dtype)
    for gates, forward in ((3, recurrent.gru_forward), (4, recurrent.lstm_forward)):
        xs = [rng.standard_normal((n, num_steps, gates * d)).astype(dtype) for _ in range(2)]
        biases = [numpy.zeros(gates * d, dtype=dtype)] * 2
        weights = [rng.standard_normal((d, gates * d)).astype(dtype) * 0.1 for _ in range(2)]
        h0s = [numpy.zeros((n, d), dtype=dtype)] * 2
        if gates == 3:
            _, _, saved = forward(xs, biases, weights, h0s, lengths, (False, True), False, order, active, True)
            flat = numpy.stack(weights).reshape(2, -1)
            recurrent.gru_backward(*saved, flat[:, :2 * d * d].reshape(2, d, 2 * d),
                                   flat[:, 2 * d * d:].reshape(2, d, d), seq, grad_hidden, grad_last)
        else:
            _, _, _, saved = forward(xs, biases, weights, h0s, h0s, lengths, (False, True), order, active, True)
            recurrent.lstm_backward(*saved, numpy.stack(weights), seq, grad_hidden, grad_last, grad_last)
    peephole.peephole_lstm_forward(xs, [numpy.zeros(7 * d, dtype=dtype)] * 2, weights, h0s, h0s, lengths,
                                   (False, True), order, active, True)
    return ["gru_forward", "gru_backward", "lstm_forward", "lstm_backward", "peephole_lstm_forward"]


def _crf(dtype):
    from . import crf
    rng = numpy.random.default_rng(0)
    k = 3
    emissions = rng.standard_normal((2, 4, k)).astype(dtype)
    lengths = numpy.array([4, 1], dtype=numpy.int64)
    start, stop, trans = (rng.standard_normal(shape).astype(dtype) for shape in ((k,), (k,), (k, k)))
    crf.crf_forward(emissions, lengths, start, trans)
    crf.viterbi_decode(emissions, lengths, start, stop, trans)
    crf.viterbi_decode(emissions, lengths, start, stop, trans, numpy.ones((k + 2, k), dtype=bool))
    return ["crf_forward", "viterbi_decode"]


def _depthwise(dtype):
    from . import depthwise
    x, w = numpy.ones((1, 2, 4, 4), dtype=dtype), numpy.ones((2, 3, 3), dtype=dtype)
    geometry = ((1, 1), ((1, 1), (1, 1)), (1, 1))

    def run(fn, channels):
        fn(0, channels)
    y = depthwise.depthwise_forward(x, w, *geometry, (4, 4), run)
    depthwise.depthwise_input_grad(y, w, x.shape, *geometry, run)
    depthwise.depthwise_weight_grad(x, y, (3, 3), *geometry, run)
    return ["depthwise_forward", "depthwise_input_grad", "depthwise_weight_grad"]


def _affine(dtype):
    from . import affine
    x = numpy.ones((1, 2, 3), dtype=dtype)
    affine.channel_affine_channels(x, numpy.ones(2, dtype=dtype), numpy.zeros(2, dtype=dtype), True, 0, 2,
                                   numpy.empty_like(x))
    return ["channel_affine_channels"]


def _batch_norm(dtype):
    from . import batch_norm
    x, ones = numpy.ones((1, 2, 3), dtype=dtype), numpy.ones(2, dtype=dtype)
    mean, var, y = numpy.empty(2, dtype=dtype), numpy.empty(2, dtype=dtype), numpy.empty_like(x)
    batch_norm.batch_statistics(x, 0, 2, mean, var)
    batch_norm.normalize_channels(x, mean, ones, ones, 0, 2, y)
    batch_norm.gradient_sums(y, x, mean, 0, 2, mean.copy(), var.copy())
    batch_norm.input_grad_channels(y, x, mean, ones, ones, ones, 0, 2, numpy.empty_like(x))
    return ["batch_statistics", "normalize_channels", "gradient_sums", "input_grad_channels"]


def _scatter(dtype):
    from . import scatter
    scatter.scatter_add_columns(numpy.array([1, 0, 1], dtype=numpy.int64), numpy.ones((3, 2), dtype=dtype), 0, 2,
                                numpy.zeros((2, 2), dtype=dtype))
    return ["scatter_add_columns"]


def _adam(dtype):
    from . import adam
    p, m, v, g = (numpy.ones(3, dtype=dtype) for _ in range(4))
    adam.adam_elements(p, m, v, g, 0, 3, *(dtype(value) for value in (0.9, 0.1, 0.999, 0.001, 1e-8, 1e-3)))
    return ["adam_elements"]


def _sequence_pool(dtype):
    from . import sequence_pool
    x, lengths = numpy.ones((2, 3, 2), dtype=dtype), numpy.array([3, 1], dtype=numpy.int64)
    top, mean, where = numpy.empty((2, 2), dtype), numpy.empty((2, 2), dtype), numpy.empty((2, 2), numpy.int64)
    sequence_pool.pool_rows(x, lengths, 0, 2, top, where, mean)
    sequence_pool.pool_rows_backward(top, where, mean, lengths, 0, 2, numpy.empty_like(x))
    return ["pool_rows", "pool_rows_backward"]


def _pooling(dtype):
    from . import pooling
    x, y = numpy.ones((1, 1, 3, 3), dtype=dtype), numpy.empty((1, 1, 2, 2), dtype=dtype)
    argmax = numpy.empty(y.shape, dtype=numpy.uint8)
    pooling.max_pool2d_images(x, 2, 2, 1, 1, 0, 0, 0, 1, y, argmax)
    pooling.max_pool2d_backward_images(argmax, y, 2, 2, 1, 1, 0, 0, 0, 1, numpy.zeros_like(x))
    return ["max_pool2d_images", "max_pool2d_backward_images"]


def warmup(progress=None):
    """See :func:`framework.kernels.cpu.warmup`."""
    began = time.perf_counter()
    from . import compiler
    names = []
    for dtype in (numpy.float32, numpy.float64):
        for family in (_recurrent, _crf, _depthwise, _affine, _batch_norm, _scatter, _adam, _sequence_pool,
                       _pooling):
            done = [f"{name}[{numpy.dtype(dtype).name}]" for name in family(dtype)]
            names += done
            if progress is not None:
                progress(", ".join(done))
    return {"cache": compiler.CACHE_DIR, "blas": None if compiler.BLAS is None else compiler.BLAS[0],
            "kernels": names, "seconds": round(time.perf_counter() - began, 2)}
