"""Specs for framework/ops/rnn.py: sequence_linear, dynamic_gru, dynamic_bigru, dynamic_lstm and dynamic_bilstm
(plain, and Paddle's peephole ``lstm`` with its activations) on uneven lengths.

References are per-sequence Python loops over each sequence's valid steps
(reversed order for the reverse direction), written from Paddle's formulas.
"""
import numpy

import framework.nn.functional as F
from ..opspec import OpSpec

N, T, D = 3, 5, 4
LENGTHS = [5, 2, 4]


def _sigmoid(v):
    return 1.0 / (1.0 + numpy.exp(-v))


def _steps(length, reverse):
    return range(length - 1, -1, -1) if reverse else range(length)


def gru_reference(x, lengths, weight, bias, h0, reverse, origin_mode):
    """Per-sequence loop of Paddle's gru op (flat-buffer weight blocks)."""
    n, num_steps, width = x.shape
    d = width // 3
    w_ur = weight.reshape(-1)[:2 * d * d].reshape(d, 2 * d)
    w_c = weight.reshape(-1)[2 * d * d:].reshape(d, d)
    hidden, last = numpy.zeros((n, num_steps, d)), numpy.zeros((n, d))
    for i in range(n):
        h = h0[i].copy()
        for t in _steps(int(lengths[i]), reverse):
            g = x[i, t] + bias.reshape(-1)
            u = _sigmoid(g[:d] + h @ w_ur[:, :d])
            r = _sigmoid(g[d:2 * d] + h @ w_ur[:, d:])
            c = numpy.tanh(g[2 * d:] + (r * h) @ w_c)
            h = u * h + (1 - u) * c if origin_mode else (1 - u) * h + u * c
            hidden[i, t] = h
        last[i] = h
    return hidden, last


def lstm_reference(x, lengths, weight, bias, h0, c0, reverse):
    """Per-sequence loop of Paddle's lstm op, gate order [candidate | input | forget | output]."""
    n, num_steps, width = x.shape
    d = width // 4
    hidden, last_h, last_c = numpy.zeros((n, num_steps, d)), numpy.zeros((n, d)), numpy.zeros((n, d))
    for i in range(n):
        h, c = h0[i].copy(), c0[i].copy()
        for t in _steps(int(lengths[i]), reverse):
            a = x[i, t] + bias.reshape(-1) + h @ weight
            candidate, gate_i, gate_f, gate_o = (a[:d], a[d:2 * d], a[2 * d:3 * d], a[3 * d:])
            c = _sigmoid(gate_f) * c + _sigmoid(gate_i) * numpy.tanh(candidate)
            h = _sigmoid(gate_o) * numpy.tanh(c)
            hidden[i, t] = h
        last_h[i], last_c[i] = h, c
    return hidden, last_h, last_c


ACTIVATIONS = {"sigmoid": _sigmoid, "tanh": numpy.tanh, "relu": lambda v: numpy.maximum(v, 0.0),
               "identity": lambda v: v}


def peephole_lstm_reference(x, lengths, weight, bias, h0, c0, reverse, activations=("sigmoid", "tanh", "tanh")):
    """Per-sequence loop of Paddle's lstm op with use_peepholes: bias (1, 7D) = 4D gate biases, then w_ic, w_fc,
    w_oc; the output gate peeks at the new cell; activations (gate, cell, candidate)."""
    gate, cell, candidate = (ACTIVATIONS[name] for name in activations)
    n, num_steps, width = x.shape
    d = width // 4
    b = bias.reshape(-1)
    w_ic, w_fc, w_oc = b[4 * d:5 * d], b[5 * d:6 * d], b[6 * d:]
    hidden, last_h, last_c = numpy.zeros((n, num_steps, d)), numpy.zeros((n, d)), numpy.zeros((n, d))
    for s in range(n):
        h, c = h0[s].copy(), c0[s].copy()
        for t in _steps(int(lengths[s]), reverse):
            a = x[s, t] + b[:4 * d] + h @ weight
            input_gate = gate(a[d:2 * d] + w_ic * c)
            forget_gate = gate(a[2 * d:3 * d] + w_fc * c)
            c = forget_gate * c + input_gate * candidate(a[:d])
            h = gate(a[3 * d:] + w_oc * c) * cell(c)
            hidden[s, t] = h
        last_h[s], last_c[s] = h, c
    return hidden, last_h, last_c


def _peephole_spec(reverse, activations=("sigmoid", "tanh", "tanh"), lengths=LENGTHS):
    names = dict(zip(("gate_activation", "cell_activation", "candidate_activation"), activations))

    def make(rng):
        return [rng.uniform(-1, 1, (N, T, 4 * D)), numpy.array(lengths, dtype=numpy.int64),
                rng.uniform(-1, 1, (D, 4 * D)), rng.uniform(-0.5, 0.5, (1, 7 * D)),
                rng.uniform(-1, 1, (N, D)), rng.uniform(-1, 1, (N, D))]
    return OpSpec(
        "dynamic_lstm",
        lambda x, lengths, w, b, h0, c0: F.dynamic_lstm(x, lengths, w, b, h0, c0, reverse=reverse,
                                                        use_peepholes=True, **names),
        make, lambda x, lengths, w, b, h0, c0: peephole_lstm_reference(x, lengths, w, b, h0, c0, reverse, activations),
        id=f"rnn.dynamic_lstm[peepholes,reverse={reverse},activations={activations},lengths={lengths}]")


def _peephole_bilstm_spec(lengths):
    """Both peephole directions in one op (the rank model's layer): the references side by side."""
    def make(rng):
        return [rng.uniform(-1, 1, (N, T, 4 * D)), rng.uniform(-1, 1, (N, T, 4 * D)),
                numpy.array(lengths, dtype=numpy.int64), rng.uniform(-1, 1, (D, 4 * D)),
                rng.uniform(-1, 1, (D, 4 * D)), rng.uniform(-0.5, 0.5, (1, 7 * D)), rng.uniform(-0.5, 0.5, (7 * D,)),
                *(rng.uniform(-1, 1, (N, D)) for _ in range(4))]

    def ref(x_fw, x_bw, lengths, w_fw, w_bw, b_fw, b_bw, h0_fw, h0_bw, c0_fw, c0_bw):
        hidden_fw, h_fw, c_fw = peephole_lstm_reference(x_fw, lengths, w_fw, b_fw, h0_fw, c0_fw, False)
        hidden_bw, h_bw, c_bw = peephole_lstm_reference(x_bw, lengths, w_bw, b_bw, h0_bw, c0_bw, True)
        return numpy.concatenate([hidden_fw, hidden_bw], axis=-1), h_fw, h_bw, c_fw, c_bw

    return OpSpec("dynamic_bilstm",
                  lambda x_fw, x_bw, lengths, *rest: F.dynamic_bilstm(x_fw, x_bw, lengths, *rest, use_peepholes=True),
                  make, ref, id=f"rnn.dynamic_bilstm[peepholes,lengths={lengths}]")


def _gru_inputs(lengths, bias_shape=(1, 3 * D)):
    def make(rng):
        return [rng.uniform(-1, 1, (N, T, 3 * D)), numpy.array(lengths, dtype=numpy.int64),
                rng.uniform(-1, 1, (D, 3 * D)), rng.uniform(-0.5, 0.5, bias_shape), rng.uniform(-1, 1, (N, D))]
    return make


def _lstm_inputs(rng):
    return [rng.uniform(-1, 1, (N, T, 4 * D)), numpy.array(LENGTHS, dtype=numpy.int64),
            rng.uniform(-1, 1, (D, 4 * D)), rng.uniform(-0.5, 0.5, (1, 4 * D)),
            rng.uniform(-1, 1, (N, D)), rng.uniform(-1, 1, (N, D))]


def _gru_spec(reverse, origin_mode, lengths=LENGTHS, bias_shape=(1, 3 * D)):
    return OpSpec(
        "dynamic_gru",
        lambda x, lengths, w, b, h0: F.dynamic_gru(x, lengths, w, b, h0, reverse=reverse, origin_mode=origin_mode),
        _gru_inputs(lengths, bias_shape),
        lambda x, lengths, w, b, h0: gru_reference(x, lengths, w, b, h0, reverse, origin_mode),
        id=f"rnn.dynamic_gru[reverse={reverse},origin_mode={origin_mode},lengths={lengths}]")


def _gru_defaults_spec():
    """No lengths, bias or h0: full-length sequences from a zero state."""
    def ref(x, w):
        return gru_reference(x, [T] * N, w, numpy.zeros(3 * D), numpy.zeros((N, D)), False, False)
    return OpSpec("dynamic_gru", lambda x, w: F.dynamic_gru(x, None, w),
                  lambda rng: [rng.uniform(-1, 1, (N, T, 3 * D)), rng.uniform(-1, 1, (D, 3 * D))], ref,
                  id="rnn.dynamic_gru[defaults]")


def _bigru_spec(origin_mode, lengths):
    """Both directions in one op: the two single-direction references side by side."""
    def make(rng):
        return [rng.uniform(-1, 1, (N, T, 3 * D)), rng.uniform(-1, 1, (N, T, 3 * D)),
                numpy.array(lengths, dtype=numpy.int64), rng.uniform(-1, 1, (D, 3 * D)),
                rng.uniform(-1, 1, (D, 3 * D)), rng.uniform(-0.5, 0.5, (1, 3 * D)), rng.uniform(-0.5, 0.5, (3 * D,)),
                rng.uniform(-1, 1, (N, D)), rng.uniform(-1, 1, (N, D))]

    def ref(x_fw, x_bw, lengths, w_fw, w_bw, b_fw, b_bw, h0_fw, h0_bw):
        hidden_fw, last_fw = gru_reference(x_fw, lengths, w_fw, b_fw, h0_fw, False, origin_mode)
        hidden_bw, last_bw = gru_reference(x_bw, lengths, w_bw, b_bw, h0_bw, True, origin_mode)
        return numpy.concatenate([hidden_fw, hidden_bw], axis=-1), last_fw, last_bw

    return OpSpec("dynamic_bigru",
                  lambda x_fw, x_bw, lengths, *rest: F.dynamic_bigru(x_fw, x_bw, lengths, *rest,
                                                                     origin_mode=origin_mode),
                  make, ref, id=f"rnn.dynamic_bigru[origin_mode={origin_mode},lengths={lengths}]")


def _sequence_linear_spec(lengths):
    def ref(x, lengths, w, b):
        valid = numpy.arange(x.shape[1])[None, :, None] < numpy.asarray(lengths)[:, None, None]
        return numpy.where(valid, x @ w + b, 0.0)
    return OpSpec("sequence_linear", lambda x, lengths, w, b: F.sequence_linear(x, lengths, w, b),
                  lambda rng: [rng.uniform(-1, 1, (N, T, 4)), numpy.array(lengths, dtype=numpy.int64),
                               rng.uniform(-1, 1, (4, 6)), rng.uniform(-1, 1, (6,))],
                  ref, id=f"rnn.sequence_linear[lengths={lengths}]")


def _lstm_spec(reverse):
    return OpSpec(
        "dynamic_lstm",
        lambda x, lengths, w, b, h0, c0: F.dynamic_lstm(x, lengths, w, b, h0, c0, reverse=reverse),
        _lstm_inputs,
        lambda x, lengths, w, b, h0, c0: lstm_reference(x, lengths, w, b, h0, c0, reverse),
        id=f"rnn.dynamic_lstm[reverse={reverse}]")


def _bilstm_spec(lengths):
    """Both LSTM directions in one op: the two single-direction references side by side."""
    def make(rng):
        return [rng.uniform(-1, 1, (N, T, 4 * D)), rng.uniform(-1, 1, (N, T, 4 * D)),
                numpy.array(lengths, dtype=numpy.int64), rng.uniform(-1, 1, (D, 4 * D)),
                rng.uniform(-1, 1, (D, 4 * D)), rng.uniform(-0.5, 0.5, (1, 4 * D)), rng.uniform(-0.5, 0.5, (4 * D,)),
                *(rng.uniform(-1, 1, (N, D)) for _ in range(4))]

    def ref(x_fw, x_bw, lengths, w_fw, w_bw, b_fw, b_bw, h0_fw, h0_bw, c0_fw, c0_bw):
        hidden_fw, h_fw, c_fw = lstm_reference(x_fw, lengths, w_fw, b_fw, h0_fw, c0_fw, False)
        hidden_bw, h_bw, c_bw = lstm_reference(x_bw, lengths, w_bw, b_bw, h0_bw, c0_bw, True)
        return numpy.concatenate([hidden_fw, hidden_bw], axis=-1), h_fw, h_bw, c_fw, c_bw

    return OpSpec("dynamic_bilstm", lambda x_fw, x_bw, lengths, *rest: F.dynamic_bilstm(x_fw, x_bw, lengths, *rest),
                  make, ref, id=f"rnn.dynamic_bilstm[lengths={lengths}]")


SPECS = [_gru_spec(reverse, origin) for reverse in (False, True) for origin in (False, True)]
SPECS += [
    _gru_spec(True, False, lengths=[3, 0, 5], bias_shape=(3 * D,)),
    _gru_defaults_spec(),
    _bigru_spec(False, LENGTHS),
    _sequence_linear_spec(LENGTHS),
    _sequence_linear_spec([T] * N),
    _bigru_spec(True, [3, 0, 5]),
    _lstm_spec(False),
    _lstm_spec(True),
    _bilstm_spec(LENGTHS),
    _bilstm_spec([3, 0, 5]),
    _peephole_spec(False),
    _peephole_spec(True),
    _peephole_spec(True, ("tanh", "relu", "identity"), lengths=[3, 0, 5]),
    _peephole_bilstm_spec(LENGTHS),
    _peephole_bilstm_spec([3, 0, 5]),
]
