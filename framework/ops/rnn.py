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
in the same time loop. Which kernel runs is chosen in one place,
:mod:`framework.kernels.recurrence` (on the CPU the compiled kernels by default,
``OAR_KERNELS=numpy`` the NumPy ones); when no gradient is wanted (inference)
the compiled path keeps nothing for backward.
"""
import numpy

from .. import backend
from ..kernels import recurrence
from ..kernels.peephole_lstm import ACTIVATIONS
from ..kernels.providers import matmul
from ..kernels.recurrence import DEFAULT_LSTM_ACTIVATIONS
from ..tensor import Function, Tensor, OpError
from .utils import check_float

__all__ = ["sequence_linear", "dynamic_gru", "dynamic_bigru", "dynamic_lstm", "dynamic_bilstm"]

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
        y = matmul(rows, weight)
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
            gx_rows = matmul(g, weight.T)
            if self.positions is None:
                gx = gx_rows.reshape(n, num_steps, -1)
            else:
                gx = self.xp.zeros((n * num_steps, weight.shape[0]), dtype=gy.dtype)
                gx[self.positions] = gx_rows
                gx = gx.reshape(n, num_steps, -1)
        return gx, matmul(rows.T, g), g.sum(axis=0)


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


class DynamicGRU(Function):
    """S GRU runs over one padded batch in one time loop (the directions of a layer).

    Inputs: x_1..x_S (N, T, 3D), weight_1..S (D, 3D), bias_1..S, h0_1..S (N, D);
    attributes ``lengths``, ``reverses`` (one bool per run) and ``origin_mode``.
    Outputs: hidden (N, T, S*D), the runs' states side by side (0 past each
    length), then each run's last state (N, D). The kernel is
    :func:`framework.kernels.recurrence.gru_forward`'s choice.
    """

    def forward(self, *arrays):
        runs = len(self.reverses)
        xs, weights, biases, h0s = (arrays[i * runs:(i + 1) * runs] for i in range(4))
        outputs, self.saved = recurrence.gru_forward(xs, weights, biases, h0s, self.lengths, self.reverses,
                                                     self.origin_mode, save=bool(self.needs_input_grad))
        return outputs

    def backward(self, grad_hidden, *grad_last):
        return recurrence.gru_backward(self.saved, grad_hidden, grad_last)


class DynamicLSTM(Function):
    """S LSTM runs over one padded batch in one time loop (the directions of a layer).

    Inputs: x_1..x_S (N, T, 4D), weight_1..S (D, 4D), bias_1..S, h0_1..S, c0_1..S (N, D);
    attributes ``lengths``, ``reverses`` (one bool per run) and, for Paddle's
    peephole ``lstm``, ``peepholes`` (the biases are then (1, 7D): the gate biases,
    then w_ic, w_fc, w_oc) and ``activations`` (gate, cell, candidate; absent:
    sigmoid, tanh, tanh). Outputs: hidden (N, T, S*D), the runs' states side by
    side (0 past each length), then each run's last hidden state, then each
    run's last cell state (N, D). The kernel is :func:`framework.kernels.recurrence.lstm_forward`'s choice.
    """

    def forward(self, *arrays):
        runs = len(self.reverses)
        xs, weights, biases, h0s, c0s = (arrays[i * runs:(i + 1) * runs] for i in range(5))
        outputs, self.saved = recurrence.lstm_forward(
            xs, weights, biases, h0s, c0s, self.lengths, self.reverses, getattr(self, "peepholes", False),
            getattr(self, "activations", DEFAULT_LSTM_ACTIVATIONS), save=bool(self.needs_input_grad))
        return outputs

    def backward(self, grad_hidden, *grad_last):
        return recurrence.lstm_backward(self.saved, grad_hidden, grad_last)


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
        if name not in ACTIVATIONS:
            raise OpError(f"{op}: activation {name!r} is not one of {', '.join(ACTIVATIONS)}")
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
