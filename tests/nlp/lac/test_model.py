"""nlp.lac.model.BiGRUCRF: registration, shapes, gradients, round trip, the official name mapping,
and agreement with an independent NumPy transcription of LAC's network (lac_official.md §6)."""
import numpy
import pytest

import framework
from framework import nn
from framework.registry import MODELS
from nlp.lac.model import BiGRUCRF
from nlp.lac.official import OFFICIAL_NAMES, official_state_dict

V, K, E, H = 30, 7, 6, 5


def paddle_sigmoid(x):
    return 1.0 / (1.0 + numpy.exp(-numpy.clip(x, -40.0, 13.0)))


def paddle_tanh(x):
    return 2.0 / (1.0 + numpy.exp(numpy.minimum(-2.0 * x, 40.0))) - 1.0


def reference_gru(g, w, b, reverse):
    """Paddle's ``gru`` op on one sequence: g (T, 3D) fc output, w (D, 3D) flat-buffer weight, b (1, 3D)."""
    d = w.shape[0]
    w_ur, w_c = w.ravel()[:2 * d * d].reshape(d, 2 * d), w.ravel()[2 * d * d:].reshape(d, d)
    g = g + b
    h, out = numpy.zeros(d), numpy.zeros((len(g), d))
    for t in (range(len(g) - 1, -1, -1) if reverse else range(len(g))):
        u = paddle_sigmoid(g[t, :d] + h @ w_ur[:, :d])
        r = paddle_sigmoid(g[t, d:2 * d] + h @ w_ur[:, d:])
        c = paddle_tanh(g[t, 2 * d:] + (r * h) @ w_c)
        h = h - u * h + u * c
        out[t] = h
    return out


def reference_lac(ids, params, num_layers=2):
    """LAC's lex_net on one sequence of ids, from the official parameter names: emissions (T, K)."""
    x = params["word_emb"][ids]
    for k in range(num_layers):
        outs = [reference_gru(x @ params[f"fc_{2 * k + j}.w_0"] + params[f"fc_{2 * k + j}.b_0"],
                              params[f"gru_{2 * k + j}.w_0"], params[f"gru_{2 * k + j}.b_0"], reverse=j == 1)
                for j in (0, 1)]
        x = numpy.concatenate(outs, axis=1)
    return x @ params[f"fc_{2 * num_layers}.w_0"] + params[f"fc_{2 * num_layers}.b_0"]


def random_official_params(rng, num_layers=2):
    params = {"word_emb": rng.standard_normal((V, E)), "crfw": rng.standard_normal((K + 2, K)),
              f"fc_{2 * num_layers}.w_0": rng.standard_normal((2 * H, K)) * 0.5,
              f"fc_{2 * num_layers}.b_0": rng.standard_normal(K)}
    for k in range(num_layers):
        for j in (0, 1):
            i = 2 * k + j
            params[f"fc_{i}.w_0"] = rng.standard_normal((E if k == 0 else 2 * H, 3 * H)) * 0.5
            params[f"fc_{i}.b_0"] = rng.standard_normal(3 * H) * 0.1
            params[f"gru_{i}.w_0"] = rng.standard_normal((H, 3 * H)) * 0.5
            params[f"gru_{i}.b_0"] = rng.standard_normal((1, 3 * H)) * 0.1
    return params


def test_registered_under_both_names():
    assert MODELS.get("BiGRUCRF") is BiGRUCRF and MODELS.get("lac") is BiGRUCRF
    model = MODELS.build({"type": "lac", "vocab_size": V, "num_tags": K, "emb_dim": E, "hidden": H})
    assert isinstance(model.gru, nn.GRU) and model.gru.num_layers == 2
    assert model.crf.transition.shape == (K + 2, K)


def test_forward_shape_padding_and_initialisation():
    model = BiGRUCRF(V, K, emb_dim=E, hidden=H, num_layers=1)
    tokens = numpy.array([[1, 2, 3, 4], [5, 6, 0, 0]], dtype="int64")
    lengths = numpy.array([4, 2], dtype="int64")
    emissions = model(framework.to_tensor(tokens), framework.to_tensor(lengths))
    assert emissions.shape == (2, 4, K) and emissions.dtype == numpy.float32
    out = emissions.numpy()
    # beyond its length a sequence's GRU output is 0, so its emissions are the bias (0 at init)
    numpy.testing.assert_array_equal(out[1, 2:], 0.0)
    short = model(framework.to_tensor(tokens[1:, :2]), framework.to_tensor(lengths[1:])).numpy()
    numpy.testing.assert_allclose(out[1, :2], short[0], rtol=1e-5, atol=1e-6)
    for name, param in model.named_parameters():
        data = param.numpy()
        if name == "crf.transition":
            continue
        if name.endswith(("bias", "bias_hh")):
            numpy.testing.assert_array_equal(data, 0.0)
        else:
            assert numpy.abs(data).max() <= 0.1 and data.std() > 0.01, name


def test_gradient_reaches_every_parameter_and_round_trip(tmp_path):
    model = BiGRUCRF(V, K, emb_dim=E, hidden=H)
    tokens = framework.to_tensor(numpy.array([[1, 2, 3], [4, 5, 0]], dtype="int64"))
    lengths = framework.to_tensor(numpy.array([3, 2], dtype="int64"))
    labels = numpy.array([[0, 1, 2], [3, 4, 0]], dtype="int64")
    loss = model.crf(model(tokens, lengths), labels, lengths).mean()
    loss.backward()
    assert numpy.isfinite(loss.item())
    for name, param in model.named_parameters():
        grad = param.grad.numpy()
        assert numpy.isfinite(grad).all() and numpy.abs(grad).sum() > 0, name
    framework.save(model.state_dict(), str(tmp_path / "lac.npz"))
    copy = BiGRUCRF(V, K, emb_dim=E, hidden=H)
    copy.set_state_dict(framework.load(str(tmp_path / "lac.npz")))
    numpy.testing.assert_array_equal(copy(tokens, lengths).numpy(), model(tokens, lengths).numpy())


def test_official_name_mapping():
    assert len(OFFICIAL_NAMES) == 20
    assert OFFICIAL_NAMES["fc_1.w_0"] == "gru.layers.0.bw.input_proj.weight"
    assert OFFICIAL_NAMES["gru_2.b_0"] == "gru.layers.1.fw.bias_hh"
    assert OFFICIAL_NAMES["fc_4.w_0"] == "emission.weight" and OFFICIAL_NAMES["crfw"] == "crf.transition"
    model = BiGRUCRF(V, K, emb_dim=E, hidden=H)
    assert set(OFFICIAL_NAMES.values()) == {name for name, _ in model.named_parameters()}
    params = random_official_params(numpy.random.default_rng(0))
    with pytest.raises(KeyError, match="missing crfw"):
        official_state_dict({k: v for k, v in params.items() if k != "crfw"})


@pytest.mark.parametrize("num_layers", [1, 2])
def test_matches_numpy_transcription_of_lac(num_layers):
    rng = numpy.random.default_rng(num_layers)
    params = random_official_params(rng, num_layers)
    model = BiGRUCRF.from_official(params)
    assert model.gru.num_layers == num_layers and model.embedding.weight.dtype == numpy.float32
    sequences = [rng.integers(0, V, 9), rng.integers(0, V, 4), rng.integers(0, V, 1)]
    tokens = numpy.zeros((3, 9), dtype="int64")
    for row, ids in enumerate(sequences):
        tokens[row, :len(ids)] = ids
    lengths = numpy.array([len(s) for s in sequences], dtype="int64")
    emissions = model(framework.to_tensor(tokens), framework.to_tensor(lengths)).numpy()
    for row, ids in enumerate(sequences):
        expected = reference_lac(ids, params, num_layers)
        numpy.testing.assert_allclose(emissions[row, :len(ids)], expected, rtol=1e-4, atol=1e-4)
