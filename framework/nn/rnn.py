"""Recurrent layers: GRU and LSTM (stacked; forward, reverse or bidirectional)
and their single-step cells GRUCell and LSTMCell.

Structure (that of Baidu's LAC BiGRU): every layer and direction has its own
input projection ``Linear(in, G*H)`` (G = 3 for GRU, 4 for LSTM; applied at the
valid positions only, :func:`framework.nn.functional.sequence_linear`) feeding
PaddlePaddle's ``dynamic_gru`` / ``dynamic_lstm`` op
(:func:`framework.nn.functional.dynamic_gru`), whose recurrent weight is
(H, G*H) and bias (1, G*H). Layer k > 0 reads the previous layer's output,
``concat([forward, backward], axis=-1)`` when bidirectional. A bidirectional
GRU layer runs both directions in one time loop
(:func:`framework.nn.functional.dynamic_bigru`).

Parameter names (k = layer index; ``fw`` = forward direction, ``bw`` = the
reverse one; direction 'forward' has only ``fw``, 'reverse' only ``bw``,
'bidirect' both)::

    layers.{k}.fw.input_proj.weight   (in_k, G*H)    in_0 = input_size, in_k = H * num_directions
    layers.{k}.fw.input_proj.bias     (G*H,)
    layers.{k}.fw.weight_hh           (H, G*H)       gate columns as in the op: GRU [u | r | c]
    layers.{k}.fw.bias_hh             (1, G*H)       (flat-buffer weight), LSTM [c~ | i | f | o]

The cells hold ``input_proj.weight``, ``input_proj.bias``, ``weight_hh`` and
``bias_hh``. LAC's ``fc_0``/``gru_0`` are ``layers.0.fw``, ``fc_1``/``gru_1``
``layers.0.bw``, ``fc_2``/``gru_2`` ``layers.1.fw`` and ``fc_3``/``gru_3``
``layers.1.bw`` (``.w_0`` -> ``input_proj.weight`` / ``weight_hh``, ``.b_0`` ->
``input_proj.bias`` / ``bias_hh``). Every parameter starts
Uniform(-1/sqrt(H), 1/sqrt(H)), as Paddle 2's recurrent layers.
"""
import math

from .. import ops
from ..ops.rnn import sequence_lengths
from . import functional as F
from . import initializer as init
from .layer import Layer, LayerDict, LayerList
from .layers import Dropout, Linear

__all__ = ["GRU", "LSTM", "GRUCell", "LSTMCell"]

_GATES = {"gru": 3, "lstm": 4}
_STATES = {"gru": 1, "lstm": 2}
_DIRECTIONS = {"forward": ("fw",), "reverse": ("bw",), "bidirect": ("fw", "bw"), "bidirectional": ("fw", "bw")}


class _RecurrentUnit(Layer):
    """One direction of one layer: input projection, then the whole-sequence recurrent op.

    ``mode`` is 'gru' or 'lstm'. :meth:`run` maps x (N, T, C) to
    (hidden (N, T, H), final states): ``(h,)`` for GRU, ``(h, c)`` for LSTM.
    """

    def __init__(self, mode, input_size, hidden_size, reverse=False, origin_mode=False):
        super().__init__()
        self.mode, self.reverse, self.origin_mode = mode, bool(reverse), bool(origin_mode)
        self.input_size, self.hidden_size = int(input_size), int(hidden_size)
        width = _GATES[mode] * self.hidden_size
        bound = 1.0 / math.sqrt(self.hidden_size)
        uniform = init.Uniform(-bound, bound)
        self.input_proj = Linear(self.input_size, width, weight_attr=uniform, bias_attr=uniform)
        self.weight_hh = self.create_parameter([self.hidden_size, width], default_initializer=uniform)
        self.bias_hh = self.create_parameter([1, width], default_initializer=uniform, is_bias=True)

    def run(self, x, lengths=None, states=None):
        """x (N, T, C), lengths (N,) or None, states: None or (h0,) / (h0, c0) each (N, H)."""
        proj = F.sequence_linear(x, lengths, self.input_proj.weight, self.input_proj.bias)    # (N, T, G*H)
        if self.mode == "gru":
            h0 = None if states is None else states[0]
            hidden, last = F.dynamic_gru(proj, lengths, self.weight_hh, self.bias_hh, h0,
                                         reverse=self.reverse, origin_mode=self.origin_mode)
            return hidden, (last,)
        h0, c0 = (None, None) if states is None else states
        hidden, last_h, last_c = F.dynamic_lstm(proj, lengths, self.weight_hh, self.bias_hh, h0, c0,
                                                reverse=self.reverse)
        return hidden, (last_h, last_c)

    def step(self, x, states):
        """One time step: x (N, C), states as in :meth:`run`; returns the new states."""
        _, new_states = self.run(x.unsqueeze(1), None, states)     # a length-1 sequence
        return new_states

    def extra_repr(self):
        extra = ", reverse=True" if self.reverse else ""
        extra += ", origin_mode=True" if self.origin_mode else ""
        return f"{self.input_size}, {self.hidden_size}{extra}"


class _RNNBase(Layer):
    """Stacked recurrent layers shared by GRU and LSTM; see the module docstring."""

    def __init__(self, mode, input_size, hidden_size, num_layers, direction, dropout, origin_mode=False):
        super().__init__()
        if direction not in _DIRECTIONS:
            raise ValueError(f"{type(self).__name__}: direction must be one of {sorted(_DIRECTIONS)}, "
                             f"got {direction!r}")
        if num_layers < 1 or not 0.0 <= dropout < 1.0:
            raise ValueError(f"{type(self).__name__}: need num_layers >= 1 and 0 <= dropout < 1, "
                             f"got {num_layers} and {dropout}")
        self.mode, self.direction = mode, direction
        self.input_size, self.hidden_size, self.num_layers = int(input_size), int(hidden_size), int(num_layers)
        self.directions = _DIRECTIONS[direction]
        self.layers = LayerList()
        for k in range(self.num_layers):
            width = self.input_size if k == 0 else self.hidden_size * len(self.directions)
            self.layers.append(LayerDict({name: _RecurrentUnit(mode, width, self.hidden_size, reverse=name == "bw",
                                                               origin_mode=origin_mode)
                                          for name in self.directions}))
        self.dropout = Dropout(dropout) if dropout > 0 else None

    def _run(self, x, lengths, initial_states):
        """x (N, T, C) -> (output (N, T, H * dirs), list of each unit's final states in layer-major order)."""
        if x.ndim != 3 or x.shape[2] != self.input_size:
            raise ValueError(f"{type(self).__name__}: expected input (N, T, {self.input_size}), got {x.shape}")
        lengths = sequence_lengths(lengths, x, f"dynamic_{self.mode}")          # checked once, named after the op
        finals = []
        for k, layer in enumerate(self.layers):
            if k > 0 and self.dropout is not None:
                x = self.dropout(x)
            if len(self.directions) == 2:
                x = self._bidirectional(layer, x, lengths, k, initial_states, finals)
                continue
            outputs = []
            for d, name in enumerate(self.directions):
                index = k * len(self.directions) + d
                states = None if initial_states is None else tuple(s[index] for s in initial_states)
                hidden, last = layer[name].run(x, lengths, states)
                outputs.append(hidden)
                finals.append(last)
            x = outputs[0] if len(outputs) == 1 else ops.concat(outputs, axis=-1)   # (N, T, H * dirs)
        return x, finals

    def _bidirectional(self, layer, x, lengths, k, initial_states, finals):
        """Layer k run both directions in one time loop; appends the final states of each direction."""
        fw, bw = layer["fw"], layer["bw"]
        projected = [F.sequence_linear(x, lengths, unit.input_proj.weight, unit.input_proj.bias) for unit in (fw, bw)]
        states = [None] * 2 * _STATES[self.mode]         # per kind of state (h, then c): forward, backward
        if initial_states is not None:
            states = [kind[2 * k + d] for kind in initial_states for d in (0, 1)]
        if self.mode == "gru":
            hidden, last_fw, last_bw = F.dynamic_bigru(*projected, lengths, fw.weight_hh, bw.weight_hh, fw.bias_hh,
                                                       bw.bias_hh, *states, origin_mode=fw.origin_mode)
            finals.extend([(last_fw,), (last_bw,)])
        else:
            hidden, h_fw, h_bw, c_fw, c_bw = F.dynamic_bilstm(*projected, lengths, fw.weight_hh, bw.weight_hh,
                                                              fw.bias_hh, bw.bias_hh, *states)
            finals.extend([(h_fw, c_fw), (h_bw, c_bw)])
        return hidden                                                        # (N, T, 2H)

    def extra_repr(self):
        return (f"{self.input_size}, {self.hidden_size}, num_layers={self.num_layers}, "
                f"direction={self.direction!r}")


class GRU(_RNNBase):
    """Stacked GRU over padded batches, PaddlePaddle ``dynamic_gru`` convention (loads LAC's weights).

    Args:
        input_size: C, features of each input step.
        hidden_size: H.
        num_layers: stacked layers; each direction of each layer has its own input projection.
        direction: 'forward', 'reverse' or 'bidirect' ('bidirectional' is the same).
        origin_mode: the GRU update rule (see :func:`framework.nn.functional.dynamic_gru`).
        dropout: dropout probability on the input of every layer but the first, while training.

    Shape:
        forward(x (N, T, C), lengths (N,) int64 or None, initial_states (num_layers * dirs, N, H) or None)
        -> (output (N, T, H * dirs), 0 beyond each length; final states (num_layers * dirs, N, H)),
        states ordered layer by layer, forward direction first.
    """

    def __init__(self, input_size, hidden_size, num_layers=1, direction="forward", origin_mode=False, dropout=0.0):
        super().__init__("gru", input_size, hidden_size, num_layers, direction, dropout, origin_mode)
        self.origin_mode = bool(origin_mode)

    def forward(self, x, lengths=None, initial_states=None):
        output, finals = self._run(x, lengths, None if initial_states is None else (initial_states,))
        return output, ops.stack([h for (h,) in finals], axis=0)

    def extra_repr(self):
        return super().extra_repr() + (", origin_mode=True" if self.origin_mode else "")


class LSTM(_RNNBase):
    """Stacked LSTM over padded batches, PaddlePaddle ``dynamic_lstm`` convention (no peepholes).

    Args: as :class:`GRU`, without ``origin_mode``.

    Shape:
        forward(x (N, T, C), lengths (N,) or None, initial_states (h0, c0) each (num_layers * dirs, N, H) or None)
        -> (output (N, T, H * dirs), (h, c) each (num_layers * dirs, N, H)).
    """

    def __init__(self, input_size, hidden_size, num_layers=1, direction="forward", dropout=0.0):
        super().__init__("lstm", input_size, hidden_size, num_layers, direction, dropout)

    def forward(self, x, lengths=None, initial_states=None):
        output, finals = self._run(x, lengths, initial_states)
        return output, (ops.stack([h for h, _ in finals], axis=0), ops.stack([c for _, c in finals], axis=0))


class GRUCell(_RecurrentUnit):
    """One GRU step with the same parameters and math as one direction of :class:`GRU`.

    Shape: forward(inputs (N, C), states (N, H) or None) -> (h, h), h (N, H) (Paddle 2's cell interface).
    """

    def __init__(self, input_size, hidden_size, origin_mode=False):
        super().__init__("gru", input_size, hidden_size, origin_mode=origin_mode)

    def forward(self, inputs, states=None):
        (h,) = self.step(inputs, None if states is None else (states,))
        return h, h


class LSTMCell(_RecurrentUnit):
    """One LSTM step with the same parameters and math as one direction of :class:`LSTM`.

    Shape: forward(inputs (N, C), states (h, c) each (N, H) or None) -> (h, (h, c)).
    """

    def __init__(self, input_size, hidden_size):
        super().__init__("lstm", input_size, hidden_size)

    def forward(self, inputs, states=None):
        h, c = self.step(inputs, states)
        return h, (h, c)
