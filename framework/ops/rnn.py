"""Recurrent sequence ops on padded batches with lengths: GRU and LSTM as in
PaddlePaddle's ``dynamic_gru`` / ``dynamic_lstm``.

Inputs are batch-major (N, T, *) with ``lengths`` (N,) int64 (None: every
sequence is T long). :func:`sequence_linear` is a linear map computed at the
valid positions only (as Paddle's ``fc`` on a LoD tensor), so padding costs
no GEMM work. Outputs at positions t >= lengths[n] are 0 and receive no
gradient; the last states are taken at each sequence's own last valid step. A
reverse direction runs inside each sequence's own length, from position
lengths[n]-1 down to 0, and writes its outputs at their original positions.

Each op is one Function over the whole sequence: forward runs every time step
in ``framework.kernels`` and backward runs backpropagation through time there,
from the gates cached in forward. Both kernels run the rows sorted by
decreasing length and compute only the rows still running at each step, and
:func:`dynamic_bigru` / :func:`dynamic_bilstm` run both directions of a layer
in the same time loop. On the CPU the compiled kernels of
:mod:`framework.kernels.cpu.recurrent` run by default (``OAR_KERNELS=numpy``
selects the NumPy ones): they read the projections batch-major and write the
outputs in place, so no gathers are needed, and when no gradient is wanted
(inference) nothing is kept for backward.
"""
import numpy

from .. import backend
from ..kernels import cpu, gru as gru_kernel, lstm as lstm_kernel, peephole_lstm as peephole_kernel
from ..tensor import Function, Tensor, OpError
from .utils import check_float

__all__ = ["sequence_linear", "dynamic_gru", "dynamic_bigru", "dynamic_lstm", "dynamic_bilstm"]

#: Paddle's ``lstm`` op defaults: (gate_activation, cell_activation, candidate_activation).
DEFAULT_LSTM_ACTIVATIONS = ("sigmoid", "tanh", "tanh")


def sequence_lengths(lengths, x, op, minimum=0):
    """``lengths`` (Tensor, array, list or None) as an int64 array on ``x``'s device.

    ``x`` is a (N, T, *) Tensor; None means every sequence is T long. Raises
    OpError naming ``op`` unless lengths is (N,) integers in [minimum, T].
    """
    xp = backend.get_array_module(x.data)
    n, num_steps = x.shape[:2]
    if lengths is None:
        return xp.full((n,), num_steps, dtype=xp.int64)
    data = array_on_device(lengths, x)
    if data.dtype.kind not in "iu" or tuple(data.shape) != (n,):
        raise OpError(f"{op}: lengths must be ({n},) integers for input {x.shape}, "
                      f"got {tuple(data.shape)} {data.dtype}")
    if n and (int(data.min()) < minimum or int(data.max()) > num_steps):
        raise OpError(f"{op}: lengths must lie in [{minimum}, {num_steps}] for input {x.shape}, "
                      f"got min {int(data.min())} max {int(data.max())}")
    return data.astype(xp.int64, copy=False)


def array_on_device(data, x):
    """``data`` (Tensor, NumPy/CuPy array or list) as an array on Tensor ``x``'s device."""
    data = data.data if isinstance(data, Tensor) else data
    if isinstance(data, (list, tuple)):
        data = numpy.asarray(data)
    return backend.to_device(data, backend.device_of(x.data))


def time_index(lengths, num_steps, reverse):
    """(N, T) int64 source positions of the run's steps: t, or lengths-1-t inside each length when reversed.

    The map is its own inverse, so it also puts a run's step s back at its position.
    """
    xp = backend.get_array_module(lengths)
    steps = xp.arange(num_steps, dtype=xp.int64)[None, :]
    if not reverse:
        return xp.broadcast_to(steps, (len(lengths), num_steps))
    return xp.where(steps < lengths[:, None], lengths[:, None] - 1 - steps, steps)


def _check_recurrent(op, x, weight, bias, states, gates):
    """Validate x (N, T, G*D), weight (D, G*D), bias (1, G*D) or (G*D,), states (N, D); returns D."""
    check_float(x, op)
    if x.ndim != 3 or weight.ndim != 2 or weight.shape[1] != gates * weight.shape[0] \
            or x.shape[2] != weight.shape[1]:
        raise OpError(f"{op}: expected x (N, T, {gates}D) and weight (D, {gates}D), "
                      f"got x {x.shape} and weight {weight.shape}")
    d = weight.shape[0]
    if bias is not None and bias.shape not in ((1, gates * d), (gates * d,)):
        raise OpError(f"{op}: bias must be (1, {gates * d}) for weight {weight.shape}, got {bias.shape}")
    for name, state in states.items():
        if state is not None and state.shape != (x.shape[0], d):
            raise OpError(f"{op}: {name} must be ({x.shape[0]}, {d}) for x {x.shape}, got {state.shape}")
    for t in (weight, bias, *states.values()):
        if t is not None and t.dtype != x.dtype:
            raise OpError(f"{op}: dtype mismatch, x is {x.dtype} but a parameter or state is {t.dtype}")
    return d


def _zeros(like, shape):
    """A constant zero Tensor of ``shape`` on ``like``'s device and dtype."""
    return Tensor(backend.get_array_module(like.data).zeros(shape, dtype=like.dtype))


class SequenceLinear(Function):
    """y = x @ weight + bias at the valid positions, 0 elsewhere; attribute ``lengths`` (N,) int64, or None
    when every position is valid."""

    def forward(self, x, weight, bias):
        xp = self.xp
        n, num_steps, width = x.shape
        rows = x.reshape(-1, width)
        self.positions = None                     # the valid positions' flat indices n * T + t, when some are not
        if self.lengths is not None and n and int(self.lengths.min()) < num_steps:
            self.positions = xp.flatnonzero(xp.arange(num_steps)[None, :] < self.lengths[:, None])
            rows = rows.take(self.positions, axis=0)                                 # (M, C)
        self.saved = rows, weight
        y = rows @ weight
        y += bias
        if self.positions is None:
            return y.reshape(n, num_steps, -1)
        out = xp.zeros((n * num_steps, weight.shape[1]), dtype=y.dtype)
        out[self.positions] = y
        return out.reshape(n, num_steps, -1)

    def backward(self, gy):
        rows, weight = self.saved
        n, num_steps, width = gy.shape
        g = gy.reshape(-1, width)
        if self.positions is not None:
            g = g.take(self.positions, axis=0)                                       # (M, F)
        gx = None
        if self.needs_input_grad[0]:
            gx_rows = g @ weight.T
            if self.positions is None:
                gx = gx_rows.reshape(n, num_steps, -1)
            else:
                gx = self.xp.zeros((n * num_steps, weight.shape[0]), dtype=gy.dtype)
                gx[self.positions] = gx_rows
                gx = gx.reshape(n, num_steps, -1)
        return gx, rows.T @ g, g.sum(axis=0)


def sequence_linear(x, lengths, weight, bias):
    """A linear map at the valid positions of a padded batch: y[n, t] = x[n, t] @ weight + bias for
    t < lengths[n], and 0 at t >= lengths[n] (which gets no gradient).

    Only the valid positions are multiplied, so a batch of uneven lengths costs
    the GEMM of its real positions; with ``lengths`` None (or all equal to T) it
    is the plain linear map.

    Shapes: x (N, T, C), lengths (N,) int64 or None, weight (C, F), bias (F,) -> y (N, T, F).
    """
    check_float(x, "sequence_linear")
    if x.ndim != 3 or weight.ndim != 2 or x.shape[2] != weight.shape[0] or bias.shape != (weight.shape[1],):
        raise OpError(f"sequence_linear: expected x (N, T, C), weight (C, F) and bias (F,), got x {x.shape}, "
                      f"weight {weight.shape} and bias {bias.shape}")
    if weight.dtype != x.dtype or bias.dtype != x.dtype:
        raise OpError(f"sequence_linear: dtype mismatch, x {x.dtype}, weight {weight.dtype}, bias {bias.dtype}")
    lengths = None if lengths is None else sequence_lengths(lengths, x, "sequence_linear")
    return SequenceLinear.apply(x, weight, bias, lengths=lengths)


def _compiled_row_order(lengths, num_steps, reverses, save):
    """``(runs or None, row order, active rows per step)`` for a compiled recurrence: with ``save`` (a gradient
    is wanted) the :class:`_SortedRuns` backward reads too, else only the kernel's order."""
    from ..kernels.cpu import recurrent
    if save:
        seq = _SortedRuns(lengths, num_steps, reverses)
        return seq, seq.order, recurrent.active_counts(lengths, num_steps)
    return (None, *recurrent.row_order(lengths, num_steps))


class _SortedRuns:
    """Gathers between batch-major (N, T, F) arrays and the GRU kernel's sorted, time-major runs (T, S, N, F).

    The kernel's row i is sequence ``order[i]`` (rows by decreasing length) and
    its step t of run s reads position ``index[s][n, t]`` of sequence n (t, or
    lengths-1-t inside the length for a reverse run); ``active[t]`` (host ints)
    counts the rows still running at step t. The position map is its own
    inverse and ``rank`` inverts ``order``, so one gather serves both ways.
    """

    def __init__(self, lengths, num_steps, reverses):
        xp = backend.get_array_module(lengths)
        self.lengths = lengths
        self.order = xp.argsort(-lengths)
        self.rank = xp.empty_like(self.order)
        self.rank[self.order] = xp.arange(len(lengths))
        host = numpy.asarray(backend.to_device(lengths, "cpu"))
        self.active = (host[None, :] > numpy.arange(num_steps)[:, None]).sum(axis=1).tolist()
        self.index = [time_index(lengths, num_steps, reverse) for reverse in reverses]

    def to_runs(self, arrays, columns=slice(None)):
        """S arrays (N, T, F) -> (T, S, N, F') in run order, F' the given ``columns`` of F."""
        xp = backend.get_array_module(arrays[0])
        n, num_steps = arrays[0].shape[:2]
        width = len(range(arrays[0].shape[2])[columns])
        out = xp.empty((num_steps, len(arrays), n, width), dtype=arrays[0].dtype)
        for s, a in enumerate(arrays):
            out[:, s] = a[self.order[None, :], self.index[s][self.order].T, columns]
        return out

    def from_runs(self, runs, offset=0):
        """(T', S, N, F) in run order -> S arrays (N, T, F), reading step t at ``runs[t + offset, s]``."""
        return [runs[index + offset, s, self.rank[:, None]] for s, index in enumerate(self.index)]

    def last(self, states):
        """Each run's state after each row's last step, (S, N, D) in batch order, from states (T+1, S, N, D)."""
        xp = backend.get_array_module(states)
        return xp.stack([states[self.lengths, s, self.rank] for s in range(len(self.index))])

    def sort_rows(self, a):
        """(S, N, F) in batch order -> run order."""
        return a[:, self.order]

    def unsort_rows(self, a):
        """(S, N, F) in run order -> batch order."""
        return a[:, self.rank]


class DynamicGRU(Function):
    """S GRU runs over one padded batch in one time loop (the directions of a layer).

    Inputs: x_1..x_S (N, T, 3D), weight_1..S (D, 3D), bias_1..S, h0_1..S (N, D);
    attributes ``lengths``, ``reverses`` (one bool per run) and ``origin_mode``.
    Outputs: hidden (N, T, S*D), the runs' states side by side (0 past each
    length), then each run's last state (N, D).
    """

    def forward(self, *arrays):
        xp, runs = self.xp, len(self.reverses)
        xs, weights, biases, h0s = (arrays[i * runs:(i + 1) * runs] for i in range(4))
        d = weights[0].shape[0]
        if xp is numpy and cpu.enabled():
            return self._forward_compiled(xs, weights, biases, h0s, d)
        seq = _SortedRuns(self.lengths, xs[0].shape[1], self.reverses)
        flat = xp.stack(weights).reshape(runs, -1)                                   # (S, 3D*D)
        w_ur, w_c = flat[:, :2 * d * d].reshape(runs, d, 2 * d), flat[:, 2 * d * d:].reshape(runs, d, d)
        bias = xp.stack([b.reshape(-1) for b in biases])[:, None, :]                 # (S, 1, 3D)
        x_ur = seq.to_runs(xs, slice(0, 2 * d))                                      # (T, S, N, 2D)
        x_ur += bias[..., :2 * d]
        x_c = seq.to_runs(xs, slice(2 * d, 3 * d))                                   # (T, S, N, D)
        x_c += bias[..., 2 * d:]
        states, ur, c, reset_h = gru_kernel.gru_forward(x_ur, x_c, seq.active, w_ur, w_c,
                                                        seq.sort_rows(xp.stack(h0s)), self.origin_mode)
        self.saved = seq, states, ur, c, reset_h, w_ur, w_c, [b.shape for b in biases]
        hidden = seq.from_runs(states, offset=1)                                     # S x (N, T, D)
        return (hidden[0] if runs == 1 else xp.concatenate(hidden, axis=-1), *seq.last(states))

    def _forward_compiled(self, xs, weights, biases, h0s, d):
        """The forward on the compiled CPU kernel; keeps what backward needs only when a gradient is wanted."""
        from ..kernels.cpu import recurrent
        runs, num_steps = len(self.reverses), xs[0].shape[1]
        save = bool(self.needs_input_grad)
        seq, order, active = _compiled_row_order(self.lengths, num_steps, self.reverses, save)
        hidden, last, saved = recurrent.gru_forward(xs, biases, weights, h0s, self.lengths, self.reverses,
                                                    self.origin_mode, order, active, save)
        if save:
            flat = numpy.stack(weights).reshape(runs, -1)                            # (S, 3D*D)
            w_ur, w_c = flat[:, :2 * d * d].reshape(runs, d, 2 * d), flat[:, 2 * d * d:].reshape(runs, d, d)
            self.saved = (seq, *saved, w_ur, w_c, [b.shape for b in biases])
        return (hidden, *last)

    def backward(self, grad_hidden, *grad_last):
        xp = self.xp
        seq, states, ur, c, reset_h, w_ur, w_c, bias_shapes = self.saved
        runs, d = len(self.reverses), w_c.shape[-1]
        grad_states = seq.to_runs([grad_hidden[..., s * d:(s + 1) * d] for s in range(runs)])
        kernel = gru_kernel
        if xp is numpy and cpu.enabled():
            from ..kernels.cpu import recurrent as kernel
        grad_ur, grad_c, grad_w_ur, grad_w_c, grad_h0 = kernel.gru_backward(
            states, ur, c, reset_h, seq.active, w_ur, w_c, grad_states, seq.sort_rows(xp.stack(grad_last)),
            self.origin_mode)
        grad_xs = [xp.concatenate([a, b], axis=-1) for a, b in zip(seq.from_runs(grad_ur), seq.from_runs(grad_c))]
        grad_weights = xp.concatenate([grad_w_ur.reshape(runs, -1), grad_w_c.reshape(runs, -1)], axis=1)
        grad_biases = xp.concatenate([grad_ur.sum(axis=(0, 2)), grad_c.sum(axis=(0, 2))], axis=-1)   # (S, 3D)
        return (*grad_xs, *grad_weights.reshape(runs, d, 3 * d),
                *(g.reshape(shape) for g, shape in zip(grad_biases, bias_shapes)), *seq.unsort_rows(grad_h0))


class DynamicLSTM(Function):
    """S LSTM runs over one padded batch in one time loop (the directions of a layer).

    Inputs: x_1..x_S (N, T, 4D), weight_1..S (D, 4D), bias_1..S, h0_1..S, c0_1..S (N, D);
    attributes ``lengths``, ``reverses`` (one bool per run) and, for Paddle's
    peephole ``lstm``, ``peepholes`` (the biases are then (1, 7D): the gate biases,
    then w_ic, w_fc, w_oc) and ``activations`` (gate, cell, candidate; absent:
    sigmoid, tanh, tanh). Outputs: hidden (N, T, S*D), the runs' states side by
    side (0 past each length), then each run's last hidden state, then each
    run's last cell state (N, D).
    """

    def forward(self, *arrays):
        xp, runs = self.xp, len(self.reverses)
        xs, weights, biases, h0s, c0s = (arrays[i * runs:(i + 1) * runs] for i in range(5))
        if self._general():
            return self._forward_peephole(xs, weights, biases, h0s, c0s)
        if xp is numpy and cpu.enabled():
            return self._forward_compiled(xs, weights, biases, h0s, c0s)
        seq = _SortedRuns(self.lengths, xs[0].shape[1], self.reverses)
        x = seq.to_runs(xs)                                                          # (T, S, N, 4D)
        x += xp.stack([b.reshape(-1) for b in biases])[:, None, :]
        weight = xp.stack(weights)                                                   # (S, D, 4D)
        hidden, cells, gates, tanh_c = lstm_kernel.lstm_forward(
            x, seq.active, weight, seq.sort_rows(xp.stack(h0s)), seq.sort_rows(xp.stack(c0s)))
        self.saved = seq, hidden, cells, gates, tanh_c, weight, [b.shape for b in biases]
        outputs = seq.from_runs(hidden, offset=1)                                    # S x (N, T, D)
        return (outputs[0] if runs == 1 else xp.concatenate(outputs, axis=-1), *seq.last(hidden),
                *seq.last(cells))

    def _forward_compiled(self, xs, weights, biases, h0s, c0s):
        """The forward on the compiled CPU kernel; keeps what backward needs only when a gradient is wanted."""
        from ..kernels.cpu import recurrent
        num_steps = xs[0].shape[1]
        save = bool(self.needs_input_grad)
        seq, order, active = _compiled_row_order(self.lengths, num_steps, self.reverses, save)
        hidden, last_h, last_c, saved = recurrent.lstm_forward(xs, biases, weights, h0s, c0s, self.lengths,
                                                               self.reverses, order, active, save)
        if save:
            self.saved = (seq, *saved, numpy.stack(weights), [b.shape for b in biases])
        return (hidden, *last_h, *last_c)

    def _general(self):
        """Whether this op runs the peephole kernels: with peepholes, or activations other than the defaults
        (the plain kernels hard-wire sigmoid, tanh, tanh)."""
        return getattr(self, "peepholes", False) or \
            tuple(getattr(self, "activations", DEFAULT_LSTM_ACTIVATIONS)) != DEFAULT_LSTM_ACTIVATIONS

    def _forward_peephole(self, xs, weights, biases, h0s, c0s):
        """The peephole forward (zero peepholes without them): the compiled CPU kernel for the default
        activations, else the xp loop (:mod:`framework.kernels.peephole_lstm`); keeps what backward needs only
        when a gradient is wanted."""
        xp, num_steps = self.xp, xs[0].shape[1]
        activations = tuple(getattr(self, "activations", DEFAULT_LSTM_ACTIVATIONS))
        save = bool(self.needs_input_grad)
        bias_shapes = [b.shape for b in biases]
        flat = xp.stack([b.reshape(-1) for b in biases])                            # (S, 7D) or (S, 4D)
        d = weights[0].shape[0]
        if flat.shape[1] == 4 * d:
            flat = xp.concatenate([flat, xp.zeros((len(xs), 3 * d), dtype=flat.dtype)], axis=1)
            biases = list(flat)
        peep = flat[:, 4 * d:].reshape(-1, 3, d)                                     # (S, 3, D): w_ic, w_fc, w_oc
        if xp is numpy and cpu.enabled() and activations == DEFAULT_LSTM_ACTIVATIONS:
            from ..kernels.cpu import peephole
            seq, order, active = _compiled_row_order(self.lengths, num_steps, self.reverses, save)
            hidden, last_h, last_c, saved = peephole.peephole_lstm_forward(
                xs, biases, weights, h0s, c0s, self.lengths, self.reverses, order, active, save)
            if save:
                self.saved = (seq, *saved, numpy.stack(weights), peep, bias_shapes)
            return (hidden, *last_h, *last_c)
        seq = _SortedRuns(self.lengths, num_steps, self.reverses)
        x = seq.to_runs(xs)                                                          # (T, S, N, 4D)
        x += flat[None, :, None, :4 * d]
        weight = xp.stack(weights)                                                   # (S, D, 4D)
        states, cells, gates, act_c = peephole_kernel.peephole_lstm_forward(
            x, seq.active, weight, peep, seq.sort_rows(xp.stack(h0s)), seq.sort_rows(xp.stack(c0s)), activations)
        self.saved = seq, states, cells, gates, act_c, weight, peep, bias_shapes
        outputs = seq.from_runs(states, offset=1)                                    # S x (N, T, D)
        return (outputs[0] if len(xs) == 1 else xp.concatenate(outputs, axis=-1), *seq.last(states),
                *seq.last(cells))

    def _backward_peephole(self, grad_hidden, grad_last):
        xp = self.xp
        seq, hidden, cells, gates, act_c, weight, peep, bias_shapes = self.saved
        runs, d = len(self.reverses), weight.shape[1]
        grad_states = seq.to_runs([grad_hidden[..., s * d:(s + 1) * d] for s in range(runs)])
        grad_x, grad_w, grad_peep, grad_h0, grad_c0 = peephole_kernel.peephole_lstm_backward(
            hidden, cells, gates, act_c, seq.active, weight, peep, grad_states,
            seq.sort_rows(xp.stack(grad_last[:runs])), seq.sort_rows(xp.stack(grad_last[runs:])),
            tuple(getattr(self, "activations", DEFAULT_LSTM_ACTIVATIONS)))
        grad_biases = grad_x.sum(axis=(0, 2))                                        # (S, 4D)
        if getattr(self, "peepholes", False):
            grad_biases = xp.concatenate([grad_biases, grad_peep.reshape(runs, -1)], axis=1)       # (S, 7D)
        return (*seq.from_runs(grad_x), *grad_w,
                *(g.reshape(shape) for g, shape in zip(grad_biases, bias_shapes)),
                *seq.unsort_rows(grad_h0), *seq.unsort_rows(grad_c0))

    def backward(self, grad_hidden, *grad_last):
        if self._general():
            return self._backward_peephole(grad_hidden, grad_last)
        xp = self.xp
        seq, hidden, cells, gates, tanh_c, weight, bias_shapes = self.saved
        runs, d = len(self.reverses), weight.shape[1]
        grad_states = seq.to_runs([grad_hidden[..., s * d:(s + 1) * d] for s in range(runs)])
        kernel = lstm_kernel
        if xp is numpy and cpu.enabled():
            from ..kernels.cpu import recurrent as kernel
        grad_x, grad_w, grad_h0, grad_c0 = kernel.lstm_backward(
            hidden, cells, gates, tanh_c, seq.active, weight, grad_states,
            seq.sort_rows(xp.stack(grad_last[:runs])), seq.sort_rows(xp.stack(grad_last[runs:])))
        grad_biases = grad_x.sum(axis=(0, 2))                                        # (S, 4D)
        return (*seq.from_runs(grad_x), *grad_w,
                *(g.reshape(shape) for g, shape in zip(grad_biases, bias_shapes)),
                *seq.unsort_rows(grad_h0), *seq.unsort_rows(grad_c0))


def dynamic_gru(x_proj, lengths, weight, bias=None, h0=None, reverse=False, origin_mode=False):
    """GRU over a padded batch, exactly as PaddlePaddle's ``dynamic_gru`` (``gru`` op).

    ``x_proj`` is the input already projected by a separate linear layer, gate
    columns ``[u | r | c]``. The recurrent ``weight`` (D, 3D) is used through its
    flat buffer: ``W_ur = weight.ravel()[:2D*D].reshape(D, 2D)``,
    ``W_c = weight.ravel()[2D*D:].reshape(D, D)``. With g = x_proj[:, t] + bias::

        [u | r] = sigmoid(g[:, :2D] + h_prev @ W_ur)
        c = tanh(g[:, 2D:] + (r * h_prev) @ W_c)
        h = (1 - u) * h_prev + u * c      (origin_mode=False, Paddle's default)
        h = u * h_prev + (1 - u) * c      (origin_mode=True)

    sigmoid and tanh are the plain functions (Paddle's CPU kernels clip their
    arguments; that changes no LAC tag).

    Args:
        x_proj: (N, T, 3D) float Tensor.
        lengths: (N,) int64 Tensor/array/list of valid lengths in [0, T], or None (all T).
        weight: (D, 3D) recurrent weight.
        bias: (1, 3D) or (3D,) bias, or None.
        h0: (N, D) initial state, or None (zeros).
        reverse: run each sequence from its last valid position down to 0.
        origin_mode: the update rule above.

    Returns:
        (hidden, last): hidden (N, T, D), 0 at t >= lengths[n]; last (N, D),
        the state after each sequence's final step (position lengths-1, or 0
        when reversed; h0 for an empty sequence).
    """
    d = _check_recurrent("dynamic_gru", x_proj, weight, bias, {"h0": h0}, gates=3)
    lengths = sequence_lengths(lengths, x_proj, "dynamic_gru")
    bias = _zeros(x_proj, (1, 3 * d)) if bias is None else bias
    h0 = _zeros(x_proj, (x_proj.shape[0], d)) if h0 is None else h0
    return DynamicGRU.apply(x_proj, weight, bias, h0, lengths=lengths, reverses=(bool(reverse),),
                            origin_mode=bool(origin_mode))


def dynamic_bigru(x_fw, x_bw, lengths, weight_fw, weight_bw, bias_fw=None, bias_bw=None, h0_fw=None, h0_bw=None,
                  origin_mode=False):
    """Both directions of a bidirectional GRU layer in one time loop: :func:`dynamic_gru` forward on ``x_fw``
    and reversed on ``x_bw``, each with its own weights, outputs side by side.

    Equal to ``concat([dynamic_gru(x_fw, lengths, weight_fw, bias_fw, h0_fw)[0],
    dynamic_gru(x_bw, lengths, weight_bw, bias_bw, h0_bw, reverse=True)[0]], axis=-1)``
    (and the two last states), but each time step runs both directions in one
    batched GEMM and one set of elementwise kernels.

    Args:
        x_fw, x_bw: (N, T, 3D) float Tensors, the inputs projected for each direction.
        lengths: (N,) int64 Tensor/array/list of valid lengths in [0, T], or None (all T).
        weight_fw, weight_bw: (D, 3D) recurrent weights (flat-buffer layout, see :func:`dynamic_gru`).
        bias_fw, bias_bw: (1, 3D) or (3D,) biases, or None.
        h0_fw, h0_bw: (N, D) initial states, or None (zeros).
        origin_mode: the update rule (see :func:`dynamic_gru`).

    Returns:
        (hidden, last_fw, last_bw): hidden (N, T, 2D), ``[forward | backward]``
        states, 0 at t >= lengths[n]; last_fw and last_bw (N, D), each
        direction's state after its final step (position lengths-1, resp. 0).
    """
    d = _check_recurrent("dynamic_bigru", x_fw, weight_fw, bias_fw, {"h0_fw": h0_fw}, gates=3)
    _check_recurrent("dynamic_bigru", x_bw, weight_bw, bias_bw, {"h0_bw": h0_bw}, gates=3)
    if x_bw.shape != x_fw.shape or weight_bw.shape != weight_fw.shape:
        raise OpError(f"dynamic_bigru: both directions need the same shapes, got x {x_fw.shape} and {x_bw.shape}, "
                      f"weight {weight_fw.shape} and {weight_bw.shape}")
    lengths = sequence_lengths(lengths, x_fw, "dynamic_bigru")
    bias_fw = _zeros(x_fw, (1, 3 * d)) if bias_fw is None else bias_fw
    bias_bw = _zeros(x_fw, (1, 3 * d)) if bias_bw is None else bias_bw
    h0_fw = _zeros(x_fw, (x_fw.shape[0], d)) if h0_fw is None else h0_fw
    h0_bw = _zeros(x_fw, (x_fw.shape[0], d)) if h0_bw is None else h0_bw
    return DynamicGRU.apply(x_fw, x_bw, weight_fw, weight_bw, bias_fw, bias_bw, h0_fw, h0_bw, lengths=lengths,
                            reverses=(False, True), origin_mode=bool(origin_mode))


def _lstm_options(op, x, d, biases, use_peepholes, activations):
    """The DynamicLSTM attributes beyond lengths and reverses, after checking ``biases`` (Tensors or None) for
    ``use_peepholes`` ((1, 7D) or (7D,) with peepholes, else (1, 4D) or (4D,)) and the activation names."""
    width = 7 * d if use_peepholes else 4 * d
    for bias in biases:
        if bias is not None and (bias.shape not in ((1, width), (width,)) or bias.dtype != x.dtype):
            raise OpError(f"{op}: bias must be (1, {width}) {x.dtype} for use_peepholes={bool(use_peepholes)} and "
                          f"hidden size {d}, got {bias.shape} {bias.dtype}")
    for name in activations:
        if name not in peephole_kernel.ACTIVATIONS:
            raise OpError(f"{op}: activation {name!r} is not one of {', '.join(peephole_kernel.ACTIVATIONS)}")
    if not use_peepholes and tuple(activations) == DEFAULT_LSTM_ACTIVATIONS:
        return {}
    return {"peepholes": bool(use_peepholes), "activations": tuple(activations)}


def dynamic_lstm(x_proj, lengths, weight, bias=None, h0=None, c0=None, reverse=False, use_peepholes=False,
                 gate_activation="sigmoid", cell_activation="tanh", candidate_activation="tanh"):
    """LSTM over a padded batch, exactly as PaddlePaddle's ``dynamic_lstm`` (``lstm`` op).

    ``x_proj`` is the input already projected by a separate linear layer; gate
    columns are in Paddle's order ``[candidate | input | forget | output]``, and
    ``weight`` (D, 4D) and ``bias`` use the same order. With
    a = x_proj[:, t] + bias[:4D] + h_prev @ weight and act_g, act_c, act_cand the
    gate, cell and candidate activations (default sigmoid, tanh, tanh)::

        c~ = act_cand(a[:, :D])
        i = act_g(a[:, D:2D] + w_ic * c_prev);  f = act_g(a[:, 2D:3D] + w_fc * c_prev)
        c = f * c_prev + i * c~
        o = act_g(a[:, 3D:] + w_oc * c);  h = o * act_c(c)

    where, with ``use_peepholes``, the peephole weights w_ic, w_fc, w_oc are the
    last 3D values of the (1, 7D) bias (Paddle's layout), and are 0 without.

    Args:
        x_proj: (N, T, 4D) float Tensor.
        lengths: (N,) int64 Tensor/array/list of valid lengths in [0, T], or None (all T).
        weight: (D, 4D) recurrent weight.
        bias: (1, 4D) or (4D,) bias ((1, 7D) or (7D,) with ``use_peepholes``), or None.
        h0, c0: (N, D) initial hidden and cell states, or None (zeros).
        reverse: run each sequence from its last valid position down to 0.
        use_peepholes: the bias holds the peephole weights (above).
        gate_activation, cell_activation, candidate_activation: ``"sigmoid"``, ``"tanh"``, ``"relu"`` or
            ``"identity"``.

    Returns:
        (hidden (N, T, D), 0 at t >= lengths[n]; last_h (N, D); last_c (N, D)),
        the last states after each sequence's final step.
    """
    d = _check_recurrent("dynamic_lstm", x_proj, weight, None, {"h0": h0, "c0": c0}, gates=4)
    options = _lstm_options("dynamic_lstm", x_proj, d, [bias], use_peepholes,
                            (gate_activation, cell_activation, candidate_activation))
    lengths = sequence_lengths(lengths, x_proj, "dynamic_lstm")
    bias = _zeros(x_proj, (1, (7 if use_peepholes else 4) * d)) if bias is None else bias
    h0 = _zeros(x_proj, (x_proj.shape[0], d)) if h0 is None else h0
    c0 = _zeros(x_proj, (x_proj.shape[0], d)) if c0 is None else c0
    return DynamicLSTM.apply(x_proj, weight, bias, h0, c0, lengths=lengths, reverses=(bool(reverse),), **options)


def dynamic_bilstm(x_fw, x_bw, lengths, weight_fw, weight_bw, bias_fw=None, bias_bw=None, h0_fw=None, h0_bw=None,
                   c0_fw=None, c0_bw=None, use_peepholes=False, gate_activation="sigmoid", cell_activation="tanh",
                   candidate_activation="tanh"):
    """Both directions of a bidirectional LSTM layer in one time loop: :func:`dynamic_lstm` forward on ``x_fw``
    and reversed on ``x_bw``, each with its own weights, outputs side by side.

    Equal to ``concat([dynamic_lstm(x_fw, lengths, weight_fw, bias_fw, h0_fw, c0_fw)[0],
    dynamic_lstm(x_bw, lengths, weight_bw, bias_bw, h0_bw, c0_bw, reverse=True)[0]], axis=-1)`` (and the
    last states), but each time step runs both directions in one batched GEMM and one set of elementwise calls.

    Args:
        x_fw, x_bw: (N, T, 4D) float Tensors, the inputs projected for each direction.
        lengths: (N,) int64 Tensor/array/list of valid lengths in [0, T], or None (all T).
        weight_fw, weight_bw: (D, 4D) recurrent weights (gate columns as :func:`dynamic_lstm`).
        bias_fw, bias_bw: (1, 4D) or (4D,) biases ((1, 7D) or (7D,) with ``use_peepholes``), or None.
        h0_fw, h0_bw, c0_fw, c0_bw: (N, D) initial states, or None (zeros).
        use_peepholes, gate_activation, cell_activation, candidate_activation: as :func:`dynamic_lstm`.

    Returns:
        (hidden, last_h_fw, last_h_bw, last_c_fw, last_c_bw): hidden (N, T, 2D), ``[forward | backward]``
        states, 0 at t >= lengths[n]; the last states (N, D) of each direction after its final step
        (position lengths-1, resp. 0).
    """
    d = _check_recurrent("dynamic_bilstm", x_fw, weight_fw, None, {"h0_fw": h0_fw, "c0_fw": c0_fw}, gates=4)
    _check_recurrent("dynamic_bilstm", x_bw, weight_bw, None, {"h0_bw": h0_bw, "c0_bw": c0_bw}, gates=4)
    if x_bw.shape != x_fw.shape or weight_bw.shape != weight_fw.shape:
        raise OpError(f"dynamic_bilstm: both directions need the same shapes, got x {x_fw.shape} and "
                      f"{x_bw.shape}, weight {weight_fw.shape} and {weight_bw.shape}")
    options = _lstm_options("dynamic_bilstm", x_fw, d, [bias_fw, bias_bw], use_peepholes,
                            (gate_activation, cell_activation, candidate_activation))
    lengths = sequence_lengths(lengths, x_fw, "dynamic_bilstm")
    biases = [_zeros(x_fw, (1, (7 if use_peepholes else 4) * d)) if b is None else b for b in (bias_fw, bias_bw)]
    states = [_zeros(x_fw, (x_fw.shape[0], d)) if s is None else s for s in (h0_fw, h0_bw, c0_fw, c0_bw)]
    return DynamicLSTM.apply(x_fw, x_bw, weight_fw, weight_bw, *biases, *states, lengths=lengths,
                             reverses=(False, True), **options)
