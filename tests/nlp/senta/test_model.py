"""Senta models: registration, shapes, gradients, save/load, and that padding never changes a sequence's scores."""
import numpy
import pytest

import framework
from framework.registry import MODELS
from nlp.common import lengths_mask
from nlp.senta.model import (NGramEmbedding, SentaBiLSTM, SentaBOW, SentaCNN, SentaGRU, SentaLSTM, hash_ngrams,
                              pool_over_time)

V = 40
SMALL = {
    "SentaBOW": {"emb_dim": 6, "hidden": 5, "hidden2": 4},
    "SentaBOW-sum": {"emb_dim": 6, "hidden": 5, "hidden2": 4, "pooling": "sum"},
    "SentaBOW-ngrams": {"emb_dim": 6, "hidden": 5, "hidden2": 4, "ngrams": 3, "buckets": 50},
    "SentaBOW-sqrt": {"emb_dim": 6, "hidden": 5, "hidden2": 4, "ngrams": 2, "buckets": 50, "pooling": "sqrt"},
    "SentaCNN": {"emb_dim": 6, "filters": 5, "window": 3, "hidden2": 4},
    "SentaCNN-5": {"emb_dim": 6, "filters": 5, "window": 5, "hidden2": 4},
    "SentaGRU": {"emb_dim": 6, "hidden": 5, "hidden2": 4},
    "SentaLSTM": {"emb_dim": 6, "hidden": 5, "hidden2": 4},
    "SentaBiLSTM": {"emb_dim": 6, "hidden": 5, "hidden2": 4},
    "SentaGRU-attention": {"emb_dim": 6, "hidden": 5, "hidden2": 4, "pooling": "attention"},
    "SentaBiLSTM-attention": {"emb_dim": 6, "hidden": 5, "hidden2": 4, "pooling": "attention"},
    "SentaCNN-ngrams": {"emb_dim": 6, "filters": 5, "window": 3, "hidden2": 4, "ngrams": 3, "buckets": 50},
    "SentaGRU-ngrams": {"emb_dim": 6, "hidden": 5, "hidden2": 4, "ngrams": 2, "buckets": 50},
    "SentaLSTM-ngrams": {"emb_dim": 6, "hidden": 5, "hidden2": 4, "ngrams": 3, "buckets": 50},
    "SentaBiLSTM-ngrams": {"emb_dim": 6, "hidden": 5, "hidden2": 4, "ngrams": 3, "buckets": 50,
                           "pooling": "attention"},
    "SentaCNN-maxmean": {"emb_dim": 6, "filters": 5, "window": 3, "hidden2": 4, "pooling": "maxmean",
                         "ngrams": 2, "buckets": 50},
    "SentaGRU-maxmean": {"emb_dim": 6, "hidden": 5, "hidden2": 4, "pooling": "maxmean"},
    "SentaBiLSTM-maxmean": {"emb_dim": 6, "hidden": 5, "hidden2": 4, "pooling": "maxmean", "ngrams": 2,
                            "buckets": 50},
}


def build(key, **extra):
    return MODELS.build({"type": key.split("-")[0], "vocab_size": V, **SMALL[key], **extra})


def tensors(ids, lengths):
    return framework.to_tensor(numpy.asarray(ids, dtype=numpy.int64)), framework.to_tensor(
        numpy.asarray(lengths, dtype=numpy.int64))


def batch(rng, lengths, width=None):
    """Ids (N, width) whose positions beyond each length hold random non-pad ids (not padding)."""
    width = width or max(lengths)
    return rng.integers(1, V, size=(len(lengths), width)), numpy.asarray(lengths)


def test_registered_names():
    for cls in (SentaBOW, SentaCNN, SentaGRU, SentaLSTM, SentaBiLSTM):
        assert MODELS.get(cls.__name__) is cls


@pytest.mark.parametrize("key", sorted(SMALL))
def test_shape_gradients_and_round_trip(key, tmp_path):
    rng = numpy.random.default_rng(1)
    model = build(key)
    ids, lengths = batch(rng, [7, 3, 1, 5])
    ids[1, 3:] = 0
    logits = model(*tensors(ids, lengths))
    assert logits.shape == (4, 2) and logits.dtype == numpy.float32
    assert numpy.isfinite(logits.numpy()).all()
    (logits * framework.to_tensor(rng.standard_normal((4, 2)).astype(numpy.float32))).sum().backward()
    for name, param in model.named_parameters():
        grad = param.grad.numpy()
        assert numpy.isfinite(grad).all() and numpy.abs(grad).sum() > 0, name
    numpy.testing.assert_array_equal(model.embedding.weight.grad.numpy()[0], 0.0)   # the pad row learns nothing
    path = str(tmp_path / "senta.npz")
    framework.save(model.state_dict(), path)
    framework.seed(123)
    other = build(key)
    other.set_state_dict(framework.load(path))
    model.eval(), other.eval()
    numpy.testing.assert_array_equal(other(*tensors(ids, lengths)).numpy(), model(*tensors(ids, lengths)).numpy())


@pytest.mark.parametrize("key", sorted(SMALL))
def test_padding_never_changes_a_sequences_scores(key):
    rng = numpy.random.default_rng(2)
    model = build(key)
    model.eval()
    lengths = [6, 1, 3, 6]
    ids, _ = batch(rng, lengths, width=11)                     # 5+ extra columns of random (non-pad) ids
    padded = model(*tensors(ids, lengths)).numpy()
    tight = model(*tensors(ids[:, :6], lengths)).numpy()
    alone = numpy.concatenate([model(*tensors(ids[i:i + 1, :n], [n])).numpy() for i, n in enumerate(lengths)])
    numpy.testing.assert_allclose(padded, alone, rtol=1e-5, atol=1e-6)
    numpy.testing.assert_allclose(tight, alone, rtol=1e-5, atol=1e-6)
    full = model(*tensors(ids[:, :6], [6, 6, 6, 6])).numpy()
    assert not numpy.allclose(full[1], alone[1], atol=1e-4)   # the masked ids would have mattered


def test_bow_mean_matches_a_numpy_reference():
    model = SentaBOW(V, emb_dim=6, hidden=5, hidden2=4)
    ids, lengths = numpy.array([[3, 4, 5, 9], [7, 8, 1, 1]]), numpy.array([4, 2])
    p = {k: v.numpy().astype(numpy.float64) for k, v in model.state_dict().items()}
    expected = []
    for row, n in zip(ids, lengths):
        h = numpy.tanh(numpy.tanh(p["embedding.weight"][row[:n]].mean(axis=0)) @ p["fc.weight"] + p["fc.bias"])
        h = numpy.tanh(h @ p["classifier.fc.weight"] + p["classifier.fc.bias"])
        expected.append(h @ p["classifier.out.weight"] + p["classifier.out.bias"])
    numpy.testing.assert_allclose(model(*tensors(ids, lengths)).numpy(), expected, rtol=1e-5, atol=1e-6)


def _code(gram, buckets):
    """The reference hash of one n-gram (a list of ids)."""
    h = len(gram)
    for token in gram:
        h = (h * 1000003 + token) % buckets
    return h


def test_hash_ngrams_hashes_the_ngram_ending_at_each_position():
    ids = framework.to_tensor(numpy.array([[3, 4, 5, 9], [7, 8, 1, 1]]))
    codes = hash_ngrams(ids, 3, 17).numpy()
    assert codes.shape == (2, 4) and codes.dtype == numpy.int64
    assert codes.tolist() == [[_code([0, 0, 3], 17), _code([0, 3, 4], 17), _code([3, 4, 5], 17), _code([4, 5, 9], 17)],
                              [_code([0, 0, 7], 17), _code([0, 7, 8], 17), _code([7, 8, 1], 17), _code([8, 1, 1], 17)]]
    assert hash_ngrams(ids[:, :1], 2, 17).numpy().tolist() == [[_code([0, 3], 17)], [_code([0, 7], 17)]]


def test_ngram_embedding_sums_the_ngrams_ending_at_each_valid_position_and_routes_gradients_there():
    layer = NGramEmbedding(3, 17, 6)
    ids = numpy.array([[3, 4, 5, 9], [7, 8, 1, 1]])
    ids_t, lengths_t = tensors(ids, [4, 2])
    mask = lengths_mask(ids_t, lengths_t)
    table = layer.weight.numpy()
    expected = numpy.zeros((2, 4, 6), dtype=numpy.float32)
    for i, n_valid in enumerate([4, 2]):
        for t in range(n_valid):
            for n in (2, 3):
                if t >= n - 1:
                    expected[i, t] += table[_code(ids[i, t - n + 1:t + 1].tolist(), 17)]
    out = layer(ids_t, mask)
    assert out.shape == (2, 4, 6)
    numpy.testing.assert_allclose(out.numpy(), expected, rtol=1e-6, atol=1e-7)
    assert layer.count(mask).numpy().tolist() == [[5.0], [1.0]]           # 3 + 2 n-grams; one bigram
    out.sum().backward()
    used = numpy.zeros(17)
    for code in [_code(g, 17) for g in ([3, 4], [4, 5], [5, 9], [3, 4, 5], [4, 5, 9], [7, 8])]:
        used[code] += 1                                                   # [8, 1] and [7, 8, 1] reach padding
    numpy.testing.assert_allclose(layer.weight.grad.numpy(), numpy.repeat(used[:, None], 6, axis=1))


@pytest.mark.parametrize("pooling", ["mean", "sqrt"])
def test_bow_ngrams_pool_hashed_ngrams_inside_each_sequence(pooling):
    model = SentaBOW(V, emb_dim=6, hidden=5, hidden2=4, ngrams=3, buckets=17, pooling=pooling)
    ids, lengths = numpy.array([[3, 4, 5, 9], [7, 8, 1, 1]]), numpy.array([4, 2])
    unigram, grams = model.embedding.weight.numpy(), model.ngram_embedding.weight.numpy()
    expected = []
    for row, n in zip(ids, lengths):
        rows = [unigram[t] for t in row[:n]]
        rows += [grams[_code(row[i:i + k].tolist(), 17)] for k in (2, 3) for i in range(n - k + 1)]
        expected.append(numpy.sum(rows, axis=0) / (len(rows) if pooling == "mean" else numpy.sqrt(len(rows))))
    ids_t, lengths_t = tensors(ids, lengths)
    emb, mask = model.embed(ids_t, lengths_t)
    pooled = model.encode(ids_t, emb, mask, lengths_t)                     # fc(tanh(pooled bag))
    p = {k: v.numpy().astype(numpy.float64) for k, v in model.state_dict().items()}
    numpy.testing.assert_allclose(pooled.numpy(), numpy.tanh(numpy.array(expected)) @ p["fc.weight"] + p["fc.bias"],
                                  rtol=1e-5, atol=1e-6)


def test_max_pooling_takes_valid_positions_only_and_routes_the_gradient_there():
    h = framework.to_tensor(numpy.array([[[1.0, -5.0], [3.0, -4.0], [9.0, 9.0]],
                                         [[-2.0, -7.0], [8.0, 8.0], [8.0, 8.0]]], dtype=numpy.float32),
                            requires_grad=True)
    out = pool_over_time(h, framework.to_tensor(numpy.array([2, 1])), "max")
    numpy.testing.assert_array_equal(out.numpy(), [[3.0, -4.0], [-2.0, -7.0]])
    out.sum().backward()
    numpy.testing.assert_array_equal(h.grad.numpy(), [[[0, 0], [1, 1], [0, 0]], [[1, 1], [0, 0], [0, 0]]])


def test_maxmean_pools_the_max_then_the_mean_of_valid_positions_and_doubles_the_features():
    h = numpy.array([[[1.0, -5.0], [3.0, -4.0], [9.0, 9.0]], [[-2.0, -7.0], [8.0, 8.0], [8.0, 8.0]]], numpy.float32)
    lengths = framework.to_tensor(numpy.array([2, 1]))
    pooled = pool_over_time(framework.to_tensor(h), lengths, "maxmean").numpy()
    numpy.testing.assert_allclose(pooled, [[3.0, -4.0, 2.0, -4.5], [-2.0, -7.0, -2.0, -7.0]])
    numpy.testing.assert_array_equal(pool_over_time(framework.to_tensor(h), lengths, "max").numpy(), pooled[:, :2])
    assert SentaBiLSTM(V, emb_dim=6, hidden=5, hidden2=4, pooling="maxmean").classifier.fc.weight.shape == (20, 4)
    assert SentaCNN(V, emb_dim=6, filters=5, hidden2=4, pooling="maxmean").classifier.fc.weight.shape == (10, 4)


def test_no_lengths_means_full_rows():
    model = SentaCNN(V, emb_dim=6, filters=5, hidden2=4)
    ids = numpy.array([[3, 4, 5], [6, 7, 8]])
    numpy.testing.assert_array_equal(model(framework.to_tensor(ids)).numpy(), model(*tensors(ids, [3, 3])).numpy())


def test_dropout_only_while_training():
    model = SentaBiLSTM(V, emb_dim=6, hidden=5, hidden2=4, dropout=0.5)
    ids, lengths = tensors([[3, 4, 5, 6]], [4])
    model.eval()
    assert numpy.array_equal(model(ids, lengths).numpy(), model(ids, lengths).numpy())
    model.train()
    assert not numpy.array_equal(model(ids, lengths).numpy(), model(ids, lengths).numpy())


@pytest.mark.parametrize("ids, lengths, message", [
    ([[1, 2, 3]], [0], r"lengths must lie in \[1, 3\]"),
    ([[1, 2, 3]], [4], r"lengths must lie in \[1, 3\]"),
    ([[1, 2, 3]], [3, 3], r"lengths must be \(N,\) = \(1,\) integers"),
    ([1, 2, 3], [3], r"ids must be \(N, L\)"),
])
def test_bad_lengths_and_ids_are_clear_errors(ids, lengths, message):
    with pytest.raises(ValueError, match=message):
        SentaGRU(V, emb_dim=6, hidden=5, hidden2=4)(*tensors(ids, lengths))


def test_bad_constructor_arguments():
    with pytest.raises(ValueError, match="pooling must be 'mean', 'sum' or 'sqrt'"):
        SentaBOW(V, pooling="max")
    with pytest.raises(ValueError, match="window must be a positive odd number"):
        SentaCNN(V, window=4)
    with pytest.raises(ValueError, match="pooling must be 'max', 'maxmean' or 'attention'"):
        SentaLSTM(V, pooling="last")
    with pytest.raises(ValueError, match="SentaCNN: pooling must be 'max' or 'maxmean'"):
        SentaCNN(V, pooling="attention")
    with pytest.raises(ValueError, match=r"SentaCNN: need ngrams >= 1, and buckets >= 1 when ngrams > 1"):
        SentaCNN(V, ngrams=2)
