"""Converters of the sequence ops: masked linear maps, GRU and LSTM runs with lengths, pooling over the valid
positions, hashed n-grams.

**GRU.** oar's ``DynamicGRU`` (Paddle's ``gru`` op) takes inputs already
projected, gate columns ``[u | r | c]``, adds its bias and computes
``c = tanh(x_c + (r * h) @ W_c)`` (the reset before the product: ONNX
``linear_before_reset=0``). Its update mixes ``h = (1 - u) h' + u c``
(``origin_mode`` False) where ONNX has ``h = (1 - z) c + z h'``, so ONNX's
``z`` is ``1 - u = sigmoid(-a_u)``: the update rows of W, R and the bias are
negated (``origin_mode`` True: ``z = u``, no negation). Each run becomes one
ONNX ``GRU`` (``forward`` or ``reverse``) whose W is the gate permutation (the
projection already happened), R the recurrent weight's blocks in ``zrh`` order,
and ``sequence_lens`` the lengths: ONNX reverses a reverse run inside each
sequence's own length, as oar does, and writes zeros past it.

**LSTM.** oar's gate order ``[c~ | i | f | o]`` is permuted into ONNX's ``iofc``; Paddle's peepholes
(``[w_ic | w_fc | w_oc]`` after the gate biases) into ONNX's P (``iof``), and its activations (gate, cell,
candidate) into ONNX's (f, h, g).
"""
import numpy

from ..ops.common import HashedNgrams
from ..ops.pooling import SequencePool
from ..ops.rnn import DynamicGRU, DynamicLSTM, SequenceLinear
from .errors import UnsupportedOpError
from .graph import INT64_MAX, converts


def _valid(g, x, lengths):
    """(N, T, 1) bool: position t of sequence n is below lengths[n] (``x`` is (N, T, *))."""
    steps = g.squeeze(g.dim(x, 1), [0])
    positions = g.op("Range", [g.const(numpy.int64(0)), steps, g.const(numpy.int64(1))])
    mask = g.op("Less", [g.unsqueeze(positions, [0]), g.unsqueeze(g.cast(lengths, numpy.int64), [1])])
    return g.unsqueeze(mask, [2])


@converts(SequenceLinear)
def sequence_linear(g, node, inputs):
    """x @ weight + bias, zero at the positions past each length."""
    x, weight, bias = inputs
    y = g.op("Add", [g.op("MatMul", [x, weight]), bias])
    lengths = g.ref(node.attrs["lengths"])
    if lengths is None:
        return y
    zero = g.const(numpy.zeros((), dtype=g.dtype(node.inputs[0])))
    return g.op("Where", [_valid(g, x, lengths), y, zero])


@converts(SequencePool)
def sequence_pool(g, node, inputs):
    """The max (padding as -inf) and / or the mean (padding as 0, over max(length, 1)) over axis 1; an empty
    sequence's max is 0."""
    x, = inputs
    dtype = g.dtype(node.inputs[0])
    lengths = g.ref(node.attrs["lengths"])
    valid, pool_type, pools = _valid(g, x, lengths), node.attrs["pool_type"], []
    if pool_type != "average":
        scores = g.op("Where", [valid, x, g.const(numpy.array(-numpy.inf, dtype=dtype))])
        top = g.reduce("ReduceMax", scores, [1], False)
        some = g.unsqueeze(g.op("Greater", [lengths, g.const(numpy.int64(0))]), [1])
        pools.append(g.op("Where", [some, top, g.const(numpy.zeros((), dtype=dtype))]))
    if pool_type != "max":
        total = g.reduce("ReduceSum", g.op("Where", [valid, x, g.const(numpy.zeros((), dtype=dtype))]), [1], False)
        count = g.op("Max", [g.cast(lengths, dtype), g.const(numpy.ones((), dtype=dtype))])
        pools.append(g.op("Div", [total, g.unsqueeze(count, [1])]))
    return pools[0] if len(pools) == 1 else g.op("Concat", pools, axis=1)


def _recurrent(g, op_type, x, w, r, bias, states, lengths, reverse, peepholes=None, **attributes):
    """One ONNX GRU/LSTM run over batch-major ``x`` (N, T, F): the outputs (N, T, D) and last states (N, D);
    ``peepholes`` (3D,) in ``iof`` order is an LSTM's P input."""
    dtype = w.dtype
    hidden = r.shape[-1]
    inputs = [g.op("Transpose", [x], perm=[1, 0, 2]), g.const(w[None], hint=f"{op_type}_W"),
              g.const(r[None], hint=f"{op_type}_R"),
              g.const(numpy.concatenate([bias, numpy.zeros_like(bias)])[None].astype(dtype), hint=f"{op_type}_B"),
              g.cast(lengths, numpy.int32)] + [g.unsqueeze(s, [0]) for s in states]
    if peepholes is not None:
        inputs.append(g.const(peepholes[None].astype(dtype), hint=f"{op_type}_P"))
    outputs = g.op(op_type, inputs, outputs=1 + len(states), hidden_size=int(hidden),
                   direction="reverse" if reverse else "forward", **attributes)
    sequence = g.op("Transpose", [g.squeeze(outputs[0], [1])], perm=[1, 0, 2])     # (T, 1, N, D) -> (N, T, D)
    return sequence, [g.squeeze(s, [0]) for s in outputs[1:]]


@converts(DynamicGRU)
def dynamic_gru(g, node, inputs):
    """S runs (module docstring): hidden (N, T, S*D) side by side, then each run's last state."""
    reverses = node.attrs["reverses"]
    runs = len(reverses)
    xs, weights, biases, h0s = (inputs[i * runs:(i + 1) * runs] for i in range(4))
    lengths = g.ref(node.attrs["lengths"])
    sign = 1.0 if node.attrs["origin_mode"] else -1.0
    sequences, lasts = [], []
    for x, weight, bias, h0, reverse in zip(xs, weights, biases, h0s, reverses):
        recurrent = g.constant(weight, "GRU recurrent weight")                 # (D, 3D), used as a flat buffer
        d, flat = recurrent.shape[0], recurrent.reshape(-1)
        w_ur, w_c = flat[:2 * d * d].reshape(d, 2 * d), flat[2 * d * d:].reshape(d, d)
        gates = numpy.ones(3 * d, dtype=flat.dtype)
        gates[:d] = sign
        w = numpy.eye(3 * d, dtype=flat.dtype) * gates[:, None]                    # z from u (signed), r, h from c
        r = numpy.concatenate([w_ur[:, :d].T * sign, w_ur[:, d:].T, w_c.T])       # (3D, D) in zrh order
        b = g.constant(bias, "GRU bias").reshape(-1) * gates
        sequence, (last,) = _recurrent(g, "GRU", x, w, r, b, [h0], lengths, reverse, linear_before_reset=0)
        sequences.append(sequence)
        lasts.append(last)
    hidden = sequences[0] if runs == 1 else g.op("Concat", sequences, axis=-1)
    return (hidden, *lasts)


def _lstm_activations(node):
    """The ONNX ``activations`` attribute (f, g, h) of a DynamicLSTM node, or {} for the defaults."""
    gate, cell, candidate = node.attrs.get("activations", ("sigmoid", "tanh", "tanh"))
    if (gate, cell, candidate) == ("sigmoid", "tanh", "tanh"):
        return {}
    if "identity" in (gate, cell, candidate):
        raise UnsupportedOpError("an LSTM with an identity activation is not exported (ONNX Runtime's LSTM "
                                 "has none)")
    names = {"sigmoid": "Sigmoid", "tanh": "Tanh", "relu": "Relu"}
    return {"activations": [names[gate], names[candidate], names[cell]]}


@converts(DynamicLSTM)
def dynamic_lstm(g, node, inputs):
    """S runs: hidden (N, T, S*D) side by side, zero past the lengths, then each run's last hidden state, then
    each run's last cell state. Peepholes (the last 3D values of Paddle's (1, 7D) bias, ``[w_ic | w_fc |
    w_oc]``) become ONNX's P in ``iof`` order; the output gate peeks at the new cell in both."""
    reverses = node.attrs["reverses"]
    runs = len(reverses)
    xs, weights, biases, h0s, c0s = (inputs[i * runs:(i + 1) * runs] for i in range(5))
    lengths = g.ref(node.attrs["lengths"])
    activations = _lstm_activations(node)
    sequences, last_h, last_c = [], [], []
    for x, weight, bias, h0, c0, reverse in zip(xs, weights, biases, h0s, c0s, reverses):
        recurrent = g.constant(weight, "LSTM recurrent weight")
        d = recurrent.shape[0]
        order = numpy.concatenate([numpy.arange(d) + k * d for k in (1, 3, 2, 0)])    # [c~ i f o] -> i o f c
        w = numpy.eye(4 * d, dtype=recurrent.dtype)[order]
        flat = g.constant(bias, "LSTM bias").reshape(-1)
        b = flat[:4 * d][order]
        peepholes = {}
        if node.attrs.get("peepholes"):
            w_ic, w_fc, w_oc = flat[4 * d:].reshape(3, d)
            peepholes = {"peepholes": numpy.concatenate([w_ic, w_oc, w_fc])}
        sequence, (h, c) = _recurrent(g, "LSTM", x, w, recurrent.T[order], b, [h0, c0], lengths, reverse,
                                      **peepholes, **activations)
        sequences.append(sequence)
        last_h.append(h)
        last_c.append(c)
    hidden = sequences[0] if runs == 1 else g.op("Concat", sequences, axis=-1)
    return (hidden, *last_h, *last_c)


@converts(HashedNgrams)
def hashed_ngrams(g, node, inputs):
    """The int64 hash of each window (h = (h * 1000003 + id) % buckets, from h = order), ids zero-padded by
    max(orders) - 1 on both sides; same wrap-around and floor-modulo as NumPy's int64."""
    orders, buckets, ending = node.attrs["orders"], node.attrs["buckets"], node.attrs["ending"]
    edge = max(orders) - 1
    padded = g.op("Pad", [g.cast(inputs[0], numpy.int64), g.ints([0, edge, 0, edge])])
    prime, modulus = g.const(numpy.int64(1000003)), g.const(numpy.int64(buckets))
    columns = []
    for order in orders:
        for first in range(edge - order + 1, edge - order + 2 if ending else edge + 1):
            h = g.const(numpy.int64(order))
            for i in range(order):
                end = first + i - 2 * edge
                window = g.slice(padded, [first + i], [end if end else INT64_MAX], [1])
                h = g.op("Mod", [g.op("Add", [g.op("Mul", [h, prime]), window]), modulus], fmod=0)
            columns.append(g.unsqueeze(h, [2]))
    return columns[0] if len(columns) == 1 else g.op("Concat", columns, axis=2)
