"""Specs for framework/ops/common.py: dropout, embedding, hashed_ngrams, one_hot, sequence_mask."""
import numpy
import pytest

import framework as fw
from framework import OpError, Tensor
from framework.nn import functional as F
from framework.testing import assert_allclose
from ..opspec import OpSpec


def _seeded_dropout(**options):
    """dropout with the framework generator reset first, so every call draws the same mask."""
    def fn(x):
        fw.seed(7)
        return F.dropout(x, **options)
    return fn


def _check_dropout(p, scale):
    """Every output is 0 or scale * x, and about a fraction p of them are 0."""
    def check(outs, arrays):
        (y,), (x,) = outs, arrays
        y = y.numpy()
        dropped = y == 0
        assert_allclose(y[~dropped], scale * x[~dropped], rtol=1e-6, atol=1e-7)
        assert abs(dropped.mean() - p) < 0.05, f"dropped fraction {dropped.mean():.3f}, expected {p}"
    return check


def embedding_reference(ids, weight):
    out = numpy.empty(ids.shape + weight.shape[1:])
    for index in numpy.ndindex(*ids.shape):
        out[index] = weight[ids[index]]
    return out


def _check_padding_gradient(outs, arrays):
    """The padding row gets no gradient; every other row gets one unit per occurrence."""
    ids, weight = arrays
    w = Tensor(weight.astype(numpy.float64), requires_grad=True)
    F.embedding(Tensor(ids), w, padding_idx=2).backward(numpy.ones(ids.shape + (weight.shape[1],)))
    counts = numpy.array([(ids == row).sum() for row in range(weight.shape[0])], dtype=numpy.float64)
    counts[2] = 0
    assert_allclose(w.grad, numpy.repeat(counts[:, None], weight.shape[1], axis=1), rtol=0, atol=0)


def one_hot_reference(ids, classes):
    out = numpy.zeros(ids.shape + (classes,), dtype=numpy.float32)
    for index in numpy.ndindex(*ids.shape):
        out[index + (ids[index],)] = 1
    return out


def hashed_ngrams_reference(ids, orders, buckets):
    """Loops over every position and window: h_0 = n, h_i = (h_{i-1} * 1000003 + a_i) % buckets."""
    n, steps = ids.shape
    out = numpy.zeros((n, steps, sum(orders)), dtype=numpy.int64)
    for row, t in numpy.ndindex(n, steps):
        column = 0
        for order in orders:
            for start in range(t - order + 1, t + 1):
                h = order
                for position in range(start, start + order):
                    h = (h * 1000003 + (int(ids[row, position]) if 0 <= position < steps else 0)) % buckets
                out[row, t, column] = h
                column += 1
    return out


def packed_positions_reference(lengths, maxlen):
    rows, index, packed = [], [], 0
    for n, length in enumerate(lengths):
        for t in range(maxlen):
            if t < length:
                rows.append(n * maxlen + t)
                index.append(packed)
                packed += 1
            else:
                index.append(None)
    return numpy.array(rows, dtype=numpy.int64), numpy.array([packed if i is None else i for i in index])


def sequence_mask_reference(lengths, maxlen):
    out = numpy.zeros(lengths.shape + (maxlen,), dtype=bool)
    for index in numpy.ndindex(*lengths.shape):
        out[index + (slice(0, lengths[index]),)] = True
    return out


def _rejects_bad_input(outs, arrays):
    """Out-of-range or non-integer ids, bad p or mode: one OpError naming the op (and the id and the limit)."""
    weight = Tensor(numpy.zeros((5, 4), numpy.float32))
    bad_calls = [("embedding: id 7 is out of range for vocab size 5",
                  lambda: F.embedding(Tensor(numpy.array([1, 7])), weight)),
                 ("embedding: id -1", lambda: F.embedding(Tensor(numpy.array([-1])), weight)),
                 ("embedding: ids must be integers", lambda: F.embedding(Tensor(numpy.zeros(2)), weight)),
                 ("embedding: padding_idx", lambda: F.embedding(Tensor(numpy.array([1])), weight, padding_idx=5)),
                 ("one_hot: id 3 is out of range for num_classes 3", lambda: F.one_hot(Tensor(numpy.array([3])), 3)),
                 ("sequence_mask", lambda: F.sequence_mask(Tensor(numpy.zeros(3)))),
                 ("hashed_ngrams: ids must be", lambda: F.hashed_ngrams(Tensor(numpy.zeros((2, 3))), (2,), 5)),
                 ("hashed_ngrams: orders", lambda: F.hashed_ngrams(Tensor(numpy.zeros((2, 3), int)), (0,), 5)),
                 ("dropout", lambda: F.dropout(Tensor(numpy.zeros(3)), 1.5)),
                 ("dropout", lambda: F.dropout(Tensor(numpy.zeros(3)), 0.5, mode="scale"))]
    for message, call in bad_calls:
        with pytest.raises(OpError, match=message):
            call()

SPECS = [
    OpSpec("dropout", _seeded_dropout(p=0.3), lambda rng: [rng.uniform(0.5, 1.5, (40, 50))], None,
           check=_check_dropout(0.3, 1 / 0.7)),
    OpSpec("dropout", _seeded_dropout(p=0.5, mode="downscale_in_infer"),
           lambda rng: [rng.uniform(0.5, 1.5, (40, 50))], None, check=_check_dropout(0.5, 1.0)),
    OpSpec("dropout", lambda x: F.dropout(x, 0.4, training=False), lambda rng: [rng.uniform(-1, 1, (3, 4))],
           lambda x: x),
    OpSpec("dropout", lambda x: F.dropout(x, 0.4, training=False, mode="downscale_in_infer"),
           lambda rng: [rng.uniform(-1, 1, (3, 4))], lambda x: x * 0.6),
    OpSpec("embedding", F.embedding, lambda rng: [rng.integers(0, 6, (3, 4)), rng.uniform(-1, 1, (6, 5))],
           embedding_reference),
    OpSpec("embedding", F.embedding, lambda rng: [rng.integers(0, 4, (7,)), rng.uniform(-1, 1, (4, 3))],
           embedding_reference, check=_rejects_bad_input),
    OpSpec("embedding", lambda ids, w: F.embedding(ids, w, padding_idx=2),
           lambda rng: [numpy.array([[2, 0, 1], [1, 2, 3]]), rng.uniform(-1, 1, (4, 3))],
           embedding_reference, grad=False, check=_check_padding_gradient),
    OpSpec("hashed_ngrams", lambda ids: F.hashed_ngrams(ids, (2, 3), 1009),
           lambda rng: [rng.integers(0, 50, (3, 6))], lambda ids: hashed_ngrams_reference(ids, (2, 3), 1009),
           grad=False),
    OpSpec("hashed_ngrams", lambda ids: F.hashed_ngrams(ids, (1, 4), 7), lambda rng: [rng.integers(0, 9, (2, 2))],
           lambda ids: hashed_ngrams_reference(ids, (1, 4), 7), grad=False),
    OpSpec("one_hot", lambda ids: F.one_hot(ids, 5), lambda rng: [rng.integers(0, 5, (2, 3))],
           lambda ids: one_hot_reference(ids, 5), grad=False),
    OpSpec("packed_positions", lambda lengths: F.packed_positions(lengths, 5),
           lambda rng: [numpy.array([3, 0, 5, 1])], lambda lengths: packed_positions_reference(lengths, 5),
           grad=False),
    OpSpec("sequence_mask", F.sequence_mask, lambda rng: [numpy.array([3, 0, 5, 1])],
           lambda lengths: sequence_mask_reference(lengths, 5), grad=False),
    OpSpec("sequence_mask", lambda lengths: F.sequence_mask(lengths, maxlen=4, dtype="int64"),
           lambda rng: [numpy.array([[2, 4], [1, 0]])],
           lambda lengths: sequence_mask_reference(lengths, 4).astype(numpy.int64), grad=False),
]
