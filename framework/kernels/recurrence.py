"""The GRU and LSTM kernel families' one entry each: :func:`gru_forward` / :func:`gru_backward` and
:func:`lstm_forward` / :func:`lstm_backward`, called by the ops (:mod:`framework.ops.rnn`) and nothing else.

Each entry takes the op's batch-major arrays and picks the kernel from the device, the settings and what
is installed:

- NumPy arrays with the compiled kernels enabled (:func:`framework.kernels.cpu.enabled`: Numba installed,
  ``OAR_KERNELS`` unset or ``numba``): :mod:`framework.kernels.cpu.recurrent` (GRU, LSTM) or
  :mod:`framework.kernels.cpu.peephole` (LSTM with peepholes; other activations have no compiled kernel).
  Their GEMMs go through the provider when one is active (:mod:`framework.kernels.providers`).
- otherwise the array-module loops, NumPy (the reference) or CuPy (one kernel launch per sequence where the
  state fits, :mod:`framework.kernels.recurrent_cuda`): :mod:`framework.kernels.gru`,
  :mod:`framework.kernels.lstm`, :mod:`framework.kernels.peephole_lstm`, over the sorted, time-major runs
  of :class:`~framework.kernels.runs.SortedRuns`.

Either backward follows either forward (they save the same arrays), so the choice is made again at
backward time. A forward without ``save`` (inference) keeps nothing on the compiled path. The compiled backward
reads the output's gradient and writes the inputs' gradients batch-major itself, at each row's own positions,
and sums the bias gradients as it goes; the loops gather through :class:`~framework.kernels.runs.SortedRuns`.
"""
import numpy

from . import cpu, gru as gru_loop, lstm as lstm_loop, peephole_lstm as peephole_loop
from .. import backend
from .runs import SortedRuns

__all__ = ["DEFAULT_LSTM_ACTIVATIONS", "gru_forward", "gru_backward", "lstm_forward", "lstm_backward"]

#: Paddle's ``lstm`` op defaults: (gate_activation, cell_activation, candidate_activation).
DEFAULT_LSTM_ACTIVATIONS = ("sigmoid", "tanh", "tanh")


def _compiled(xp):
    """Whether arrays of module ``xp`` run the compiled CPU kernels now."""
    return xp is numpy and cpu.enabled()


def _compiled_row_order(lengths, num_steps, reverses, save):
    """``(runs or None, row order, active rows per step)`` for a compiled recurrence: with ``save`` (a gradient
    is wanted) the :class:`SortedRuns` backward reads too, else only the kernel's order."""
    from .cpu import recurrent
    if save:
        seq = SortedRuns(lengths, num_steps, reverses)
        return seq, seq.order, recurrent.active_counts(lengths, num_steps)
    return (None, *recurrent.row_order(lengths, num_steps))


def _side_by_side(xp, outputs):
    """S arrays (N, T, D) -> (N, T, S*D)."""
    return outputs[0] if len(outputs) == 1 else xp.concatenate(outputs, axis=-1)


def _gru_blocks(xp, weights, d):
    """S flat-buffer weights (D, 3D) -> (w_ur (S, D, 2D), w_c (S, D, D))."""
    flat = xp.stack(weights).reshape(len(weights), -1)                               # (S, 3D*D)
    return flat[:, :2 * d * d].reshape(-1, d, 2 * d), flat[:, 2 * d * d:].reshape(-1, d, d)


def gru_forward(xs, weights, biases, h0s, lengths, reverses, origin_mode, save):
    """S GRU runs (the directions of a layer) over one padded batch, as :func:`framework.ops.rnn.dynamic_gru`.

    Shapes: xs S x (N, T, 3D) projected inputs, weights S x (D, 3D) (flat-buffer layout), biases S x (1, 3D)
    or (3D,), h0s S x (N, D), lengths (N,) int64, reverses S bools.
    Returns ``(outputs, saved)``: outputs = (hidden (N, T, S*D), 0 past each length, then each run's last
    state (N, D)); saved is what :func:`gru_backward` reads (None when not ``save``).
    """
    xp, runs, d = backend.get_array_module(xs[0]), len(reverses), weights[0].shape[0]
    bias_shapes = [b.shape for b in biases]
    if _compiled(xp):
        from .cpu import recurrent
        seq, order, active = _compiled_row_order(lengths, xs[0].shape[1], reverses, save)
        hidden, last, kept = recurrent.gru_forward(xs, biases, weights, h0s, lengths, reverses, origin_mode,
                                                   order, active, save)
        return (hidden, *last), ((seq, *kept, *_gru_blocks(xp, weights, d), bias_shapes, origin_mode)
                                 if save else None)
    seq = SortedRuns(lengths, xs[0].shape[1], reverses)
    w_ur, w_c = _gru_blocks(xp, weights, d)
    bias = xp.stack([b.reshape(-1) for b in biases])[:, None, :]                     # (S, 1, 3D)
    x_ur = seq.to_runs(xs, slice(0, 2 * d))                                          # (T, S, N, 2D)
    x_ur += bias[..., :2 * d]
    x_c = seq.to_runs(xs, slice(2 * d, 3 * d))                                       # (T, S, N, D)
    x_c += bias[..., 2 * d:]
    states, ur, c, reset_h = gru_loop.gru_forward(x_ur, x_c, seq.active, w_ur, w_c,
                                                  seq.sort_rows(xp.stack(h0s)), origin_mode)
    outputs = (_side_by_side(xp, seq.from_runs(states, offset=1)), *seq.last(states))
    return outputs, ((seq, states, ur, c, reset_h, w_ur, w_c, bias_shapes, origin_mode) if save else None)


def gru_backward(saved, grad_hidden, grad_last):
    """Backpropagation through :func:`gru_forward`: ``saved`` as it returned, grad_hidden (N, T, S*D),
    grad_last S x (N, D). Returns the gradients in the forward's argument order: S x (N, T, 3D) inputs,
    S x (D, 3D) weights, S biases (each its own shape), S x (N, D) initial states."""
    seq, states, ur, c, reset_h, w_ur, w_c, bias_shapes, origin_mode = saved
    xp, runs, d = backend.get_array_module(states), len(bias_shapes), w_c.shape[-1]
    grad_last = seq.sort_rows(xp.stack(grad_last))
    if _compiled(xp):
        from .cpu import recurrent
        grad_xs, grad_w_ur, grad_w_c, grad_biases, grad_h0 = recurrent.gru_backward(
            states, ur, c, reset_h, w_ur, w_c, seq, grad_hidden, grad_last, origin_mode)
    else:
        grad_states = seq.to_runs([grad_hidden[..., s * d:(s + 1) * d] for s in range(runs)])
        grad_ur, grad_c, grad_w_ur, grad_w_c, grad_h0 = gru_loop.gru_backward(
            states, ur, c, reset_h, seq.active, w_ur, w_c, grad_states, grad_last, origin_mode)
        grad_xs = [xp.concatenate([a, b], axis=-1) for a, b in zip(seq.from_runs(grad_ur), seq.from_runs(grad_c))]
        grad_biases = xp.concatenate([grad_ur.sum(axis=(0, 2)), grad_c.sum(axis=(0, 2))], axis=-1)   # (S, 3D)
    grad_weights = xp.concatenate([grad_w_ur.reshape(runs, -1), grad_w_c.reshape(runs, -1)], axis=1)
    return (*grad_xs, *grad_weights.reshape(runs, d, 3 * d),
            *(g.reshape(shape) for g, shape in zip(grad_biases, bias_shapes)), *seq.unsort_rows(grad_h0))


def lstm_forward(xs, weights, biases, h0s, c0s, lengths, reverses, peepholes, activations, save):
    """S LSTM runs (the directions of a layer) over one padded batch, as :func:`framework.ops.rnn.dynamic_lstm`.

    Shapes: xs S x (N, T, 4D), weights S x (D, 4D), biases S x (1, 4D) or (4D,) ((1, 7D) or (7D,) with
    ``peepholes``: the gate biases, then w_ic, w_fc, w_oc), h0s and c0s S x (N, D), lengths (N,) int64,
    reverses S bools; activations (gate, cell, candidate) names.
    Returns ``(outputs, saved)``: outputs = (hidden (N, T, S*D), 0 past each length, then each run's last
    hidden state, then each run's last cell (N, D)); saved is what :func:`lstm_backward` reads (None when
    not ``save``).
    """
    xp, d = backend.get_array_module(xs[0]), weights[0].shape[0]
    activations = tuple(activations)
    bias_shapes = [b.shape for b in biases]
    general = peepholes or activations != DEFAULT_LSTM_ACTIVATIONS
    flat = xp.stack([b.reshape(-1) for b in biases])                                # (S, 4D) or (S, 7D)
    peep = None
    if general:
        if flat.shape[1] == 4 * d:                                                   # zero peepholes
            flat = xp.concatenate([flat, xp.zeros((len(xs), 3 * d), dtype=flat.dtype)], axis=1)
        peep = flat[:, 4 * d:].reshape(-1, 3, d)                                     # (S, 3, D)
    extra = (peep, bias_shapes, peepholes, activations)
    if _compiled(xp) and activations == DEFAULT_LSTM_ACTIVATIONS:
        from .cpu import peephole, recurrent
        seq, order, active = _compiled_row_order(lengths, xs[0].shape[1], reverses, save)
        run = peephole.peephole_lstm_forward if general else recurrent.lstm_forward
        hidden, last_h, last_c, kept = run(xs, list(flat), weights, h0s, c0s, lengths, reverses, order, active,
                                           save)
        return (hidden, *last_h, *last_c), ((seq, *kept, numpy.stack(weights), *extra) if save else None)
    seq = SortedRuns(lengths, xs[0].shape[1], reverses)
    x = seq.to_runs(xs)                                                              # (T, S, N, 4D)
    x += flat[:, None, :4 * d]
    weight = xp.stack(weights)                                                       # (S, D, 4D)
    h0, c0 = seq.sort_rows(xp.stack(h0s)), seq.sort_rows(xp.stack(c0s))
    if general:
        states, cells, gates, act_c = peephole_loop.peephole_lstm_forward(x, seq.active, weight, peep, h0, c0,
                                                                          activations)
    else:
        states, cells, gates, act_c = lstm_loop.lstm_forward(x, seq.active, weight, h0, c0)
    outputs = (_side_by_side(xp, seq.from_runs(states, offset=1)), *seq.last(states), *seq.last(cells))
    return outputs, ((seq, states, cells, gates, act_c, weight, *extra) if save else None)


def lstm_backward(saved, grad_hidden, grad_last):
    """Backpropagation through :func:`lstm_forward`: ``saved`` as it returned, grad_hidden (N, T, S*D),
    grad_last the S last-hidden then S last-cell gradients (N, D). Returns the gradients in the forward's
    argument order: S x (N, T, 4D) inputs, S x (D, 4D) weights, S biases (each its own shape), S x (N, D)
    initial hidden states, S x (N, D) initial cells."""
    seq, hidden, cells, gates, act_c, weight, peep, bias_shapes, peepholes, activations = saved
    xp, runs, d = backend.get_array_module(gates), len(bias_shapes), weight.shape[1]
    grad_last_h, grad_last_c = seq.sort_rows(xp.stack(grad_last[:runs])), seq.sort_rows(xp.stack(grad_last[runs:]))
    if peep is None and _compiled(xp):
        from .cpu import recurrent
        grad_xs, grad_w, grad_biases, grad_h0, grad_c0 = recurrent.lstm_backward(
            hidden, cells, gates, act_c, weight, seq, grad_hidden, grad_last_h, grad_last_c)
    else:
        grad_states = seq.to_runs([grad_hidden[..., s * d:(s + 1) * d] for s in range(runs)])
        if peep is not None:
            grad_x, grad_w, grad_peep, grad_h0, grad_c0 = peephole_loop.peephole_lstm_backward(
                hidden, cells, gates, act_c, seq.active, weight, peep, grad_states, grad_last_h, grad_last_c,
                activations)
        else:
            grad_x, grad_w, grad_h0, grad_c0 = lstm_loop.lstm_backward(hidden, cells, gates, act_c, seq.active,
                                                                       weight, grad_states, grad_last_h, grad_last_c)
        grad_xs, grad_biases = seq.from_runs(grad_x), grad_x.sum(axis=(0, 2))         # (S, 4D)
        if peepholes:
            grad_biases = xp.concatenate([grad_biases, grad_peep.reshape(runs, -1)], axis=1)   # (S, 7D)
    return (*grad_xs, *grad_w, *(g.reshape(shape) for g, shape in zip(grad_biases, bias_shapes)),
            *seq.unsort_rows(grad_h0), *seq.unsort_rows(grad_c0))
