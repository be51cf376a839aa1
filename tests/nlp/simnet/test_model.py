"""SimNet models: registration, shapes of both heads, gradients, save/load, lengths, symmetry."""
import numpy
import pytest

import framework
from framework.registry import MODELS
from nlp.common import lengths_mask
from nlp.simnet.model import SimNetBOW, SimNetCNN, SimNetGRU, SimNetLSTM

V = 30
SMALL = {
    "SimNetBOW": {"emb_dim": 6, "hidden": 5},
    "SimNetCNN": {"emb_dim": 6, "filters": 7, "windows": [3], "hidden": 5},
    "SimNetCNN-13": {"emb_dim": 6, "filters": 4, "windows": [1, 3], "hidden": 5},
    "SimNetGRU": {"emb_dim": 6, "hidden_size": 4, "hidden": 5},
    "SimNetGRU-bi": {"emb_dim": 6, "hidden_size": 4, "hidden": 5, "bidirectional": True},
    "SimNetLSTM": {"emb_dim": 6, "hidden_size": 4, "hidden": 5},
    "SimNetLSTM-bi": {"emb_dim": 6, "hidden_size": 3, "hidden": 5, "bidirectional": True},
}
CASES = [(key, head) for key in sorted(SMALL) for head in ("pointwise", "pairwise")]


def build(key, head):
    return MODELS.build({"type": key.split("-")[0], "vocab_size": V, "head": head, **SMALL[key]})


def tensor(values):
    return framework.to_tensor(numpy.asarray(values, dtype=numpy.int64))


def sides(rng, a_lengths, b_lengths):
    """Two padded id batches whose positions beyond each length hold random non-pad ids."""
    a = rng.integers(1, V, size=(len(a_lengths), max(a_lengths)))
    b = rng.integers(1, V, size=(len(b_lengths), max(b_lengths)))
    return tensor(a), tensor(a_lengths), tensor(b), tensor(b_lengths)


def test_registered_names():
    for cls in (SimNetBOW, SimNetCNN, SimNetGRU, SimNetLSTM):
        assert MODELS.get(cls.__name__) is cls
    with pytest.raises(ValueError, match="head must be one of pointwise, pairwise"):
        SimNetBOW(V, head="listwise")
    with pytest.raises(ValueError, match="windows must be positive odd numbers"):
        SimNetCNN(V, windows=[3, 2])


@pytest.mark.parametrize("key,head", CASES)
def test_shapes_gradients_and_round_trip(key, head, tmp_path):
    rng = numpy.random.default_rng(0)
    model = build(key, head)
    inputs = sides(rng, [5, 2, 1], [3, 4, 1])
    out = model(*inputs)
    assert out.shape == ((3, 2) if head == "pointwise" else (3,)) and out.dtype == numpy.float32
    assert numpy.isfinite(out.numpy()).all()
    if head == "pairwise":
        assert numpy.all(numpy.abs(out.numpy()) <= 1.0 + 1e-6)
    weights = framework.to_tensor(rng.standard_normal(out.shape).astype(numpy.float32))
    (out * weights).sum().backward()
    for name, param in model.named_parameters():
        grad = param.grad.numpy()
        assert numpy.isfinite(grad).all() and numpy.abs(grad).sum() > 0, name
    numpy.testing.assert_array_equal(model.embedding.weight.grad.numpy()[0], 0.0)
    assert model.threshold.numpy().tolist() == [0.5]
    model.threshold.data[...] = 0.83
    path = str(tmp_path / "simnet.npz")
    framework.save(model.state_dict(), path)
    framework.seed(5)
    fresh = build(key, head)
    fresh.set_state_dict(framework.load(path))
    model.eval(), fresh.eval()
    numpy.testing.assert_allclose(fresh(*inputs).numpy(), model(*inputs).numpy(), rtol=1e-6, atol=1e-6)
    assert fresh.threshold.numpy().tolist() == [numpy.float32(0.83)]


@pytest.mark.parametrize("key,head", CASES)
def test_padding_never_changes_a_score_and_sides_commute(key, head):
    rng = numpy.random.default_rng(1)
    model = build(key, head)
    model.eval()
    a, a_len, b, b_len = sides(rng, [4, 2, 3], [1, 3, 2])
    reference = model(a, a_len, b, b_len).numpy()
    junk_a = a.numpy().copy()
    junk_a[1, 2:] = rng.integers(1, V, size=2)                # change only positions past the length
    wide_b = numpy.concatenate([b.numpy(), rng.integers(1, V, size=(3, 4))], axis=1)   # longer padding
    numpy.testing.assert_allclose(model(tensor(junk_a), a_len, tensor(wide_b), b_len).numpy(), reference,
                                  rtol=1e-5, atol=1e-6)
    alone = model(tensor(a.numpy()[1:2, :2]), tensor([2]), tensor(b.numpy()[1:2, :3]), tensor([3])).numpy()
    numpy.testing.assert_allclose(alone, reference[1:2], rtol=1e-5, atol=1e-6)
    numpy.testing.assert_allclose(model(b, b_len, a, a_len).numpy(), reference, rtol=1e-5, atol=1e-6)
    u, v = model.encode_many((a, a_len), (b, b_len))
    numpy.testing.assert_allclose(u.numpy(), model.encode(a, a_len).numpy(), rtol=1e-5, atol=1e-6)
    numpy.testing.assert_allclose(v.numpy(), model.encode(b, b_len).numpy(), rtol=1e-5, atol=1e-6)


def test_identical_texts_score_the_maximum_cosine():
    model = build("SimNetCNN", "pairwise")
    a, a_len, _, _ = sides(numpy.random.default_rng(2), [4, 2], [1, 1])
    numpy.testing.assert_allclose(model(a, a_len, a, a_len).numpy(), [1.0, 1.0], rtol=1e-5)


def test_bad_lengths_name_the_problem():
    model = build("SimNetBOW", "pointwise")
    ids = tensor([[1, 2, 3]])
    with pytest.raises(ValueError, match=r"lengths must lie in \[1, 3\]"):
        model(ids, tensor([4]), ids, tensor([3]))
    with pytest.raises(ValueError, match=r"ids must be \(N, L\)"):
        lengths_mask(tensor([1, 2]), None)
