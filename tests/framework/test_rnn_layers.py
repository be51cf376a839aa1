"""GRU, LSTM, GRUCell and LSTMCell layers: shapes, parameters, lengths, directions."""
import numpy
import pytest

import framework
import framework.nn.functional as F
from framework import nn
from framework.testing import assert_allclose

from .specs.rnn import gru_reference, lstm_reference


def _tensor(rng, *shape):
    return framework.to_tensor(rng.uniform(-1, 1, shape).astype("float32"))


def _numpy_params(layer):
    return {name: p.numpy().astype(numpy.float64) for name, p in layer.named_parameters()}


def test_gru_has_lac_parameter_shapes():
    gru = nn.GRU(128, 128, num_layers=2, direction="bidirect")
    shapes = {name: p.shape for name, p in gru.named_parameters()}
    expected = {}
    for layer, in_size in ((0, 128), (1, 256)):
        for d in ("fw", "bw"):
            expected[f"layers.{layer}.{d}.input_proj.weight"] = (in_size, 384)
            expected[f"layers.{layer}.{d}.input_proj.bias"] = (384,)
            expected[f"layers.{layer}.{d}.weight_hh"] = (128, 384)
            expected[f"layers.{layer}.{d}.bias_hh"] = (1, 384)
    assert shapes == expected
    assert sum(p.size for p in gru.parameters()) == 2 * (128 * 384 + 256 * 384) + 4 * (384 + 128 * 384 + 384)
    assert list(gru.state_dict()) == [name for name, _ in gru.named_parameters()]


@pytest.mark.parametrize("direction,dirs", [("forward", 1), ("reverse", 1), ("bidirect", 2)])
@pytest.mark.parametrize("cls", [nn.GRU, nn.LSTM])
def test_output_and_state_shapes(cls, direction, dirs):
    rng = numpy.random.default_rng(0)
    layer = cls(5, 3, num_layers=2, direction=direction)
    out, states = layer(_tensor(rng, 4, 6, 5), [6, 1, 3, 6])
    assert out.shape == (4, 6, 3 * dirs)
    for s in (states,) if cls is nn.GRU else states:
        assert s.shape == (2 * dirs, 4, 3)
    assert numpy.all(out.numpy()[1, 1:] == 0) and numpy.all(out.numpy()[2, 3:] == 0)


def test_gru_matches_paddle_formula_with_projection():
    """One GRU direction = Linear projection then Paddle's gru op (flat-buffer weight), per sequence."""
    rng = numpy.random.default_rng(1)
    lengths = numpy.array([4, 2, 3])
    for direction, reverse in (("forward", False), ("reverse", True)):
        gru = nn.GRU(5, 3, direction=direction, origin_mode=True)
        x = _tensor(rng, 3, 4, 5)
        out, last = gru(x, lengths)
        name = "bw" if reverse else "fw"
        p = _numpy_params(gru)
        proj = x.numpy() @ p[f"layers.0.{name}.input_proj.weight"] + p[f"layers.0.{name}.input_proj.bias"]
        hidden, final = gru_reference(proj, lengths, p[f"layers.0.{name}.weight_hh"], p[f"layers.0.{name}.bias_hh"],
                                      numpy.zeros((3, 3)), reverse, True)
        assert_allclose(out, hidden, atol=1e-5)
        assert_allclose(last[0], final, atol=1e-5)


def test_lstm_matches_paddle_formula_with_projection():
    rng = numpy.random.default_rng(2)
    lengths = numpy.array([4, 1, 3])
    lstm = nn.LSTM(5, 3, direction="reverse")
    x = _tensor(rng, 3, 4, 5)
    out, (h, c) = lstm(x, lengths)
    p = _numpy_params(lstm)
    proj = x.numpy() @ p["layers.0.bw.input_proj.weight"] + p["layers.0.bw.input_proj.bias"]
    hidden, last_h, last_c = lstm_reference(proj, lengths, p["layers.0.bw.weight_hh"], p["layers.0.bw.bias_hh"],
                                            numpy.zeros((3, 3)), numpy.zeros((3, 3)), True)
    assert_allclose(out, hidden, atol=1e-5)
    assert_allclose(h[0], last_h, atol=1e-5)
    assert_allclose(c[0], last_c, atol=1e-5)


@pytest.mark.parametrize("cls", [nn.GRU, nn.LSTM])
def test_padding_after_a_sequence_does_not_change_it(cls):
    """Each sequence (both directions, two layers) gives the same outputs padded or alone."""
    rng = numpy.random.default_rng(3)
    layer = cls(4, 3, num_layers=2, direction="bidirect")
    x = rng.uniform(-1, 1, (3, 7, 4)).astype("float32")
    lengths = [7, 3, 5]
    out, _ = layer(framework.to_tensor(x), lengths)
    for i, length in enumerate(lengths):
        alone, _ = layer(framework.to_tensor(x[i:i + 1, :length]))
        assert_allclose(out[i:i + 1, :length], alone.numpy(), atol=1e-6)
        assert numpy.all(out.numpy()[i, length:] == 0)


def test_bidirect_is_concat_of_the_two_directions():
    rng = numpy.random.default_rng(4)
    bi = nn.GRU(4, 3, direction="bidirect")
    fw_only, bw_only = nn.GRU(4, 3, direction="forward"), nn.GRU(4, 3, direction="reverse")
    state = bi.state_dict()
    fw_only.set_state_dict({k: v for k, v in state.items() if ".fw." in k})
    bw_only.set_state_dict({k: v for k, v in state.items() if ".bw." in k})
    x, lengths = _tensor(rng, 3, 5, 4), [5, 2, 4]
    out, last = bi(x, lengths)
    out_fw, last_fw = fw_only(x, lengths)
    out_bw, last_bw = bw_only(x, lengths)
    assert_allclose(out, numpy.concatenate([out_fw.numpy(), out_bw.numpy()], axis=-1))
    assert_allclose(last, numpy.concatenate([last_fw.numpy(), last_bw.numpy()], axis=0))


@pytest.mark.parametrize("cls", [nn.GRU, nn.LSTM])
def test_initial_states_continue_a_sequence(cls):
    """Running T steps equals running the first half, then the rest from its final states."""
    rng = numpy.random.default_rng(5)
    layer = cls(4, 3, num_layers=2)
    x = _tensor(rng, 2, 6, 4)
    whole, _ = layer(x)
    first, states = layer(x[:, :3])
    second, _ = layer(x[:, 3:], initial_states=states)
    assert_allclose(first, whole.numpy()[:, :3], atol=1e-6)
    assert_allclose(second, whole.numpy()[:, 3:], atol=1e-6)


def test_cells_unrolled_equal_the_sequence_layers():
    rng = numpy.random.default_rng(6)
    x = _tensor(rng, 2, 4, 5)
    gru_cell, gru = nn.GRUCell(5, 3), nn.GRU(5, 3)
    gru.set_state_dict({f"layers.0.fw.{k}": v for k, v in gru_cell.state_dict().items()})
    lstm_cell, lstm = nn.LSTMCell(5, 3), nn.LSTM(5, 3)
    lstm.set_state_dict({f"layers.0.fw.{k}": v for k, v in lstm_cell.state_dict().items()})
    gru_out, _ = gru(x)
    lstm_out, _ = lstm(x)
    h, states = None, None
    for t in range(4):
        y, h = gru_cell(x[:, t], h)
        assert_allclose(y, gru_out.numpy()[:, t], atol=1e-6)
        y, states = lstm_cell(x[:, t], states)
        assert_allclose(y, lstm_out.numpy()[:, t], atol=1e-6)


@pytest.mark.parametrize("cls", [nn.GRU, nn.LSTM])
def test_every_parameter_gets_a_gradient(cls):
    rng = numpy.random.default_rng(7)
    layer = cls(4, 3, num_layers=2, direction="bidirect")
    out, _ = layer(_tensor(rng, 3, 5, 4), [5, 2, 4])
    (out * _tensor(rng, 3, 5, 6)).sum().backward()
    for name, p in layer.named_parameters():
        assert p.grad is not None and numpy.abs(p.grad.numpy()).max() > 0, name


def test_dropout_only_between_layers_and_only_in_training():
    rng = numpy.random.default_rng(8)
    plain, dropped = nn.GRU(4, 3, num_layers=2), nn.GRU(4, 3, num_layers=2, dropout=0.5)
    dropped.set_state_dict(plain.state_dict())
    x = _tensor(rng, 2, 5, 4)
    dropped.eval()
    assert_allclose(dropped(x)[0], plain(x)[0].numpy())
    dropped.train()
    assert not numpy.allclose(dropped(x)[0].numpy(), plain(x)[0].numpy())


def test_bad_arguments_raise():
    with pytest.raises(ValueError, match="direction"):
        nn.GRU(4, 3, direction="sideways")
    gru = nn.GRU(4, 3)
    with pytest.raises(ValueError, match=r"\(N, T, 4\)"):
        gru(framework.to_tensor(numpy.zeros((2, 5, 3), "float32")))
    with pytest.raises(framework.OpError, match="dynamic_gru.*lengths"):
        gru(framework.to_tensor(numpy.zeros((2, 5, 4), "float32")), [6, 2])
    with pytest.raises(framework.OpError, match="dynamic_gru.*lengths"):
        gru(framework.to_tensor(numpy.zeros((2, 5, 4), "float32")), [5, 2, 1])


def test_ops_reject_mismatched_shapes():
    x = framework.to_tensor(numpy.zeros((2, 5, 9), "float32"))
    with pytest.raises(framework.OpError, match=r"dynamic_gru.*\(2, 5, 9\).*\(3, 12\)"):
        nn.functional.dynamic_gru(x, None, framework.to_tensor(numpy.zeros((3, 12), "float32")))
    with pytest.raises(framework.OpError, match="dynamic_lstm.*h0"):
        nn.functional.dynamic_lstm(framework.to_tensor(numpy.zeros((2, 5, 12), "float32")), None,
                                   framework.to_tensor(numpy.zeros((3, 12), "float32")),
                                   h0=framework.to_tensor(numpy.zeros((3, 3), "float32")))


def _lstm_by_steps(x, lengths, weight, bias, h0, c0, reverse):
    """dynamic_lstm written with elementary framework ops, one sequence and one step at a time: an
    independent reference for the fused kernel's values and, through autograd, its gradients."""
    d = weight.shape[0]
    rows = []
    last_h, last_c = [], []
    for i, length in enumerate(lengths):
        h, c = h0[i:i + 1], c0[i:i + 1]
        outputs = [None] * x.shape[1]
        for t in (range(length - 1, -1, -1) if reverse else range(length)):
            a = x[i:i + 1, t] + bias + framework.matmul(h, weight)                  # (1, 4D)
            candidate, gate_i, gate_f, gate_o = (a[:, k * d:(k + 1) * d] for k in range(4))
            c = F.sigmoid(gate_f) * c + F.sigmoid(gate_i) * F.tanh(candidate)
            h = F.sigmoid(gate_o) * F.tanh(c)
            outputs[t] = h
        zero = framework.to_tensor(numpy.zeros((1, d)))
        rows.append(framework.stack([zero if o is None else o for o in outputs], axis=1))   # (1, T, D)
        last_h.append(h)
        last_c.append(c)
    return framework.concat(rows, axis=0), framework.concat(last_h, axis=0), framework.concat(last_c, axis=0)


def test_fused_bidirectional_lstm_equals_elementary_ops_to_1e_10():
    """Values and every gradient of dynamic_bilstm (ragged lengths, an empty sequence) against the step-by-step
    composition of framework ops, in float64."""
    rng = numpy.random.default_rng(7)
    n, steps, d = 4, 6, 3
    lengths = [6, 0, 4, 1]
    arrays = [rng.uniform(-1, 1, (n, steps, 4 * d)), rng.uniform(-1, 1, (n, steps, 4 * d)),
              rng.uniform(-1, 1, (d, 4 * d)), rng.uniform(-1, 1, (d, 4 * d)), rng.uniform(-.5, .5, (1, 4 * d)),
              rng.uniform(-.5, .5, (1, 4 * d))] + [rng.uniform(-1, 1, (n, d)) for _ in range(4)]
    weights = [rng.standard_normal((n, steps, 2 * d))] + [rng.standard_normal((n, d)) for _ in range(4)]

    def run(fused):
        tensors = [framework.to_tensor(a, requires_grad=True) for a in arrays]
        x_fw, x_bw, w_fw, w_bw, b_fw, b_bw, h_fw, h_bw, c_fw, c_bw = tensors
        if fused:
            outputs = F.dynamic_bilstm(x_fw, x_bw, lengths, w_fw, w_bw, b_fw, b_bw, h_fw, h_bw, c_fw, c_bw)
        else:
            hidden_fw, last_h_fw, last_c_fw = _lstm_by_steps(x_fw, lengths, w_fw, b_fw, h_fw, c_fw, False)
            hidden_bw, last_h_bw, last_c_bw = _lstm_by_steps(x_bw, lengths, w_bw, b_bw, h_bw, c_bw, True)
            outputs = (framework.concat([hidden_fw, hidden_bw], axis=-1), last_h_fw, last_h_bw, last_c_fw, last_c_bw)
        loss = sum((o * framework.to_tensor(w)).sum() for o, w in zip(outputs, weights))
        loss.backward()
        return [o.numpy() for o in outputs] + [t.grad.numpy() for t in tensors]

    for k, (got, want) in enumerate(zip(run(True), run(False))):
        numpy.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12, err_msg=f"array {k}")


def test_bidirectional_lstm_layer_runs_both_directions_in_one_op():
    """nn.LSTM(direction='bidirect') equals its two one-direction halves run separately."""
    rng = numpy.random.default_rng(8)
    framework.seed(0)
    layer = nn.LSTM(5, 3, direction="bidirect")
    x, lengths = _tensor(rng, 4, 6, 5), [6, 2, 0, 5]
    out, (h, c) = layer(x, lengths)
    for index, unit in enumerate((layer.layers[0]["fw"], layer.layers[0]["bw"])):
        hidden, (last_h, last_c) = unit.run(x, framework.to_tensor(numpy.array(lengths)))
        assert_allclose(out.numpy()[..., index * 3:(index + 1) * 3], hidden.numpy(), atol=1e-6)
        assert_allclose(h.numpy()[index], last_h.numpy(), atol=1e-6)
        assert_allclose(c.numpy()[index], last_c.numpy(), atol=1e-6)
