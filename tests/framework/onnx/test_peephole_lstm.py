"""ONNX export of Paddle's peephole ``lstm`` (ONNX LSTM with P) inside each sequence's length, both directions,
with the default and with other activations, compared with the traced program through the exported file."""
import numpy
import pytest

import framework
import framework.nn.functional as F
from framework import jit, nn

from .parity import assert_exported_parity

RNG = numpy.random.default_rng(3)
D = 4


def _param(*shape):
    return nn.Parameter(framework.to_tensor(RNG.standard_normal(shape).astype(numpy.float32) * 0.5).data)


class PeepholeLayer(nn.Layer):
    """A projection, then a bidirectional peephole LSTM and a reverse one with ``activations``."""

    def __init__(self, activations):
        super().__init__()
        self.proj, self.proj_bias = _param(3, 4 * D), _param(4 * D)
        self.w_fw, self.w_bw, self.w_rev = _param(D, 4 * D), _param(D, 4 * D), _param(D, 4 * D)
        self.b_fw, self.b_bw, self.b_rev = _param(1, 7 * D), _param(1, 7 * D), _param(1, 7 * D)
        self.activations = dict(zip(("gate_activation", "cell_activation", "candidate_activation"), activations))

    def forward(self, x, lengths):                                        # (N, T, 3), (N,)
        p = F.sequence_linear(x, lengths, self.proj, self.proj_bias)
        both = F.dynamic_bilstm(p, p * 0.5, lengths, self.w_fw, self.w_bw, self.b_fw, self.b_bw, use_peepholes=True)
        rev = F.dynamic_lstm(p, lengths, self.w_rev, self.b_rev, reverse=True, use_peepholes=True,
                             **self.activations)
        return {"both": both[0], "last_c": both[3], "reverse": rev[0], "reverse_h": rev[1]}


@pytest.mark.parametrize("activations", [("sigmoid", "tanh", "tanh"), ("tanh", "relu", "sigmoid")])
def test_peephole_lstm_exports(tmp_path, activations):
    def feed(lengths):
        lengths = numpy.asarray(lengths, dtype=numpy.int64)
        return {"x": RNG.standard_normal((len(lengths), int(lengths.max()), 3)).astype(numpy.float32),
                "lengths": lengths}
    feeds = [feed(lengths) for lengths in ([6, 2, 4], [3], [9, 1, 5, 9])]
    axes = {"x": {0: "batch", 1: "seq"}, "lengths": {0: "batch"}}
    layer = PeepholeLayer(activations)
    layer.eval()
    assert_exported_parity(jit.trace(layer, feeds[0], axes), feeds, tmp_path)
