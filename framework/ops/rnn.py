"""Recurrent sequence ops on padded batches with lengths: GRU and LSTM as in
PaddlePaddle's ``dynamic_gru`` / ``dynamic_lstm``.

Inputs are batch-major (N, T, *) with ``lengths`` (N,) int64 (None: every
sequence is T long). Outputs at positions t >= lengths[n] are 0 and receive no
gradient; the last states are taken at each sequence's own last valid step. A
reverse direction runs inside each sequence's own length, from position
lengths[n]-1 down to 0, and writes its outputs at their original positions.

Each op is one Function over the whole sequence: forward runs every time step
in ``framework.kernels`` and backward runs backpropagation through time there,
from the gates cached in forward.
"""
import numpy

from .. import backend
from ..kernels import gru as gru_kernel, lstm as lstm_kernel
from ..tensor import Function, Tensor, OpError
from .utils import check_float

__all__ = ["dynamic_gru", "dynamic_lstm"]


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


class _Sequence:
    """Gathers between batch-major (N, T, F) arrays and the kernels' time-major (T, N, F) runs.

    Step s of sequence n's run reads position index[n, s]. ``mask`` (T, N, 1)
    bool is True on valid steps; ``valid`` (N, T, 1) is the same as 0/1 of ``dtype``.
    """

    def __init__(self, lengths, num_steps, reverse, dtype):
        xp = backend.get_array_module(lengths)
        self.index = time_index(lengths, num_steps, reverse)
        self.rows = xp.arange(len(lengths))
        self.mask = (xp.arange(num_steps)[:, None] < lengths[None, :])[:, :, None]
        self.valid = self.mask.transpose(1, 0, 2).astype(dtype)

    def to_time_major(self, a):
        """(N, T, F) -> (T, N, F) in run order."""
        return a[self.rows[None, :], self.index.T]

    def to_batch_major(self, a):
        """(T, N, F) in run order -> (N, T, F) at the original positions."""
        return a[self.index, self.rows[:, None]]

    def outputs(self, states):
        """The kernels' states (T, N, D) as outputs (N, T, D), 0 at invalid positions."""
        out = self.to_batch_major(states)
        out *= self.valid
        return out

    def output_grad(self, grad):
        """The gradient of :meth:`outputs` (N, T, D) as the kernels' (T, N, D), 0 at invalid steps."""
        return self.to_time_major(grad * self.valid)


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


class DynamicGRU(Function):
    """GRU over a padded batch; attributes ``lengths``, ``reverse``, ``origin_mode``."""

    def forward(self, x, weight, bias, h0):
        d = weight.shape[0]
        seq = _Sequence(self.lengths, x.shape[1], self.reverse, x.dtype)
        flat = weight.reshape(-1)
        w_ur, w_c = flat[:2 * d * d].reshape(d, 2 * d), flat[2 * d * d:].reshape(d, d)
        x_tm = seq.to_time_major(x)
        x_tm += bias.reshape(1, 1, -1)
        states, gates, reset_h = gru_kernel.gru_forward(x_tm, seq.mask, w_ur, w_c, h0, self.origin_mode)
        self.saved = seq, states, gates, reset_h, w_ur, w_c, bias.shape
        return seq.outputs(states[1:]), states[-1].copy()

    def backward(self, grad_hidden, grad_last):
        seq, states, gates, reset_h, w_ur, w_c, bias_shape = self.saved
        grad_x, grad_w_ur, grad_w_c, grad_h0 = gru_kernel.gru_backward(
            states, gates, reset_h, seq.mask, w_ur, w_c, seq.output_grad(grad_hidden), grad_last, self.origin_mode)
        grad_weight = self.xp.concatenate([grad_w_ur.reshape(-1), grad_w_c.reshape(-1)]).reshape(w_c.shape[0], -1)
        grad_bias = grad_x.sum(axis=(0, 1)).reshape(bias_shape)
        return seq.to_batch_major(grad_x), grad_weight, grad_bias, grad_h0


class DynamicLSTM(Function):
    """LSTM over a padded batch; attributes ``lengths``, ``reverse``."""

    def forward(self, x, weight, bias, h0, c0):
        seq = _Sequence(self.lengths, x.shape[1], self.reverse, x.dtype)
        x_tm = seq.to_time_major(x)
        x_tm += bias.reshape(1, 1, -1)
        hidden, cells, gates = lstm_kernel.lstm_forward(x_tm, seq.mask, weight, h0, c0)
        self.saved = seq, hidden, cells, gates, weight, bias.shape
        return seq.outputs(hidden[1:]), hidden[-1].copy(), cells[-1].copy()

    def backward(self, grad_hidden, grad_last_h, grad_last_c):
        seq, hidden, cells, gates, weight, bias_shape = self.saved
        grad_x, grad_weight, grad_h0, grad_c0 = lstm_kernel.lstm_backward(
            hidden, cells, gates, seq.mask, weight, seq.output_grad(grad_hidden), grad_last_h, grad_last_c)
        grad_bias = grad_x.sum(axis=(0, 1)).reshape(bias_shape)
        return seq.to_batch_major(grad_x), grad_weight, grad_bias, grad_h0, grad_c0


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
    return DynamicGRU.apply(x_proj, weight, bias, h0, lengths=lengths, reverse=bool(reverse),
                            origin_mode=bool(origin_mode))


def dynamic_lstm(x_proj, lengths, weight, bias=None, h0=None, c0=None, reverse=False):
    """LSTM over a padded batch, as PaddlePaddle's ``dynamic_lstm`` without peepholes.

    ``x_proj`` is the input already projected by a separate linear layer; gate
    columns are in Paddle's order ``[candidate | input | forget | output]``, and
    ``weight`` (D, 4D) and ``bias`` use the same order. With
    a = x_proj[:, t] + bias + h_prev @ weight::

        c~ = tanh(a[:, :D]);  i = sigmoid(a[:, D:2D]);  f = sigmoid(a[:, 2D:3D]);  o = sigmoid(a[:, 3D:])
        c = f * c_prev + i * c~;  h = o * tanh(c)

    Args:
        x_proj: (N, T, 4D) float Tensor.
        lengths: (N,) int64 Tensor/array/list of valid lengths in [0, T], or None (all T).
        weight: (D, 4D) recurrent weight.
        bias: (1, 4D) or (4D,) bias, or None.
        h0, c0: (N, D) initial hidden and cell states, or None (zeros).
        reverse: run each sequence from its last valid position down to 0.

    Returns:
        (hidden (N, T, D), 0 at t >= lengths[n]; last_h (N, D); last_c (N, D)),
        the last states after each sequence's final step.
    """
    d = _check_recurrent("dynamic_lstm", x_proj, weight, bias, {"h0": h0, "c0": c0}, gates=4)
    lengths = sequence_lengths(lengths, x_proj, "dynamic_lstm")
    bias = _zeros(x_proj, (1, 4 * d)) if bias is None else bias
    h0 = _zeros(x_proj, (x_proj.shape[0], d)) if h0 is None else h0
    c0 = _zeros(x_proj, (x_proj.shape[0], d)) if c0 is None else c0
    return DynamicLSTM.apply(x_proj, weight, bias, h0, c0, lengths=lengths, reverse=bool(reverse))
