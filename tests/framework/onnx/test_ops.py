"""Parity of each converter group on small layers, through the exported file, at two batch sizes."""
import numpy
import pytest

import framework
import framework.nn.functional as F
from framework import jit, nn

from .parity import assert_exported_parity

RNG = numpy.random.default_rng(1)


def _param(*shape):
    return nn.Parameter(framework.to_tensor(RNG.standard_normal(shape).astype(numpy.float32) * 0.5).data)


_MASK = RNG.random((1, 5)) > 0.5


class Elementwise(nn.Layer):
    def forward(self, x):
        y = F.gelu(x) + F.gelu(x, approximate=True) + F.softplus(x, beta=2.0, threshold=1.0) + F.silu(x)
        y = y + F.leaky_relu(x, 0.1) + F.elu(x, 0.7) + F.hardswish(x) + F.sigmoid(x) * F.tanh(x)
        y = y + framework.clip(x, -0.5, None) + framework.maximum(x, framework.abs(x) * 0.5) - framework.exp(-x * x)
        y = y / (framework.sqrt(framework.abs(x) + 1.0) + framework.log(x * x + 2.0)) + x ** 2
        return framework.where(_MASK, y, -y)                            # comparisons are not traced ops


class Reductions(nn.Layer):
    def forward(self, x):                                                 # (N, 4, 5)
        parts = [x.sum(axis=1), x.mean(axis=(1, 2), keepdim=True).reshape((-1, 1)), x.max(axis=2),
                 x.min(axis=1), framework.var(x, axis=2), framework.logsumexp(x, axis=1)]
        return framework.concat(parts, axis=1), F.softmax(x, axis=1), F.log_softmax(x, axis=-1)


class Shapes(nn.Layer):
    def forward(self, x):                                                 # (N, 4, 6)
        a, b = framework.split(x, [2, 2], axis=1)
        y = framework.stack([a, framework.flip(b, 2)], axis=1)            # (N, 2, 2, 6)
        y = y.transpose((0, 3, 1, 2)).reshape((x.shape[0], 6, -1))        # (N, 6, 4)
        y = framework.pad(y, [(0, 0), (1, 2), (2, 1)], mode="reflect") + 1.0
        y = framework.pad(y, [1, 1], value=3.0)                           # last axis, constant
        z = y[:, 1:-1:2, ::-1][..., None, 0][:, -1]                       # basic indexing
        t = framework.tile(x[:, :1, :2], [1, 2, 3]) + framework.expand(x[:, :1, :1], [x.shape[0], 2, 6])
        return y, z, t, framework.matmul(x, x, transpose_y=True), framework.linear(x, _FIXED_W, _FIXED_B)


_FIXED_W = framework.to_tensor(RNG.standard_normal((6, 3)).astype(numpy.float32))
_FIXED_B = framework.to_tensor(RNG.standard_normal(3).astype(numpy.float32))


class Convolutions(nn.Layer):
    def __init__(self):
        super().__init__()
        self.w1, self.w3 = _param(6, 2, 3), _param(4, 3, 2, 3, 3)

    def forward(self, x):                                                 # (N, 4, 8)
        y = F.conv1d(x, self.w1, stride=2, padding=2, dilation=2, groups=2)        # (N, 6, 4)
        v = y.reshape((x.shape[0], 3, 2, 2, 2))
        z = F.conv3d(v, self.w3, padding=1)                                         # (N, 4, 2, 2, 2)
        pools = [F.avg_pool1d(y, 3, stride=2, padding=1, ceil_mode=True),
                 F.avg_pool1d(y, 3, stride=2, padding=1, exclusive=False),
                 F.max_pool1d(y, 2, ceil_mode=True), F.adaptive_avg_pool1d(y, 3)]
        return z, framework.concat(pools, axis=2), F.adaptive_avg_pool3d(z, (1, 2, 1))


class Norms(nn.Layer):
    def __init__(self):
        super().__init__()
        self.layer_norm = nn.LayerNorm(6)
        self.bn = nn.BatchNorm1D(4)
        self.bn.running_mean.data[...] = RNG.standard_normal(4)
        self.bn.running_var.data[...] = RNG.random(4) + 0.5

    def forward(self, x):                                                 # (N, 4, 6)
        return (self.layer_norm(x), F.group_norm(x, 2), F.normalize(x, axis=2), F.normalize(x, p=3, axis=1),
                self.bn(x))


class Recurrent(nn.Layer):
    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(3, 4, num_layers=2, direction="bidirect")
        self.gru = nn.GRU(3, 5, direction="reverse", origin_mode=True)

    def forward(self, x, lengths):                                        # (N, T, 3), (N,)
        out, (h, c) = self.lstm(x, lengths)
        g, last = self.gru(x, lengths)
        mask = F.sequence_mask(lengths, dtype="float32")                 # (N, max(lengths))
        padded = F.sequence_mask(lengths, maxlen=x.shape[1] + 1)          # (N, T + 1): a size-following maxlen
        return {"lstm": out, "h": h, "c": c, "gru": g, "gru_last": last, "mask": mask,
                "padded": framework.cast(padded, "int64")}


CASES = {"elementwise": (Elementwise, (4, 5)), "reductions": (Reductions, (4, 5)), "shapes": (Shapes, (4, 6)),
         "convolutions": (Convolutions, (4, 8)), "norms": (Norms, (4, 6))}


@pytest.mark.parametrize("case", sorted(CASES))
def test_op_group(tmp_path, case):
    cls, shape = CASES[case]
    feeds = [{"x": RNG.standard_normal((batch,) + shape).astype(numpy.float32)} for batch in (3, 1, 5)]
    assert_exported_parity(jit.trace(cls(), (feeds[0]["x"],)), feeds, tmp_path)


def test_recurrent_with_lengths(tmp_path):
    """Stacked bidirectional LSTM and a reverse GRU (origin_mode) inside each sequence's length, plus a mask."""
    def feed(lengths):
        lengths = numpy.asarray(lengths, dtype=numpy.int64)
        return {"x": RNG.standard_normal((len(lengths), int(lengths.max()), 3)).astype(numpy.float32),
                "lengths": lengths}
    feeds = [feed(lengths) for lengths in ([6, 2, 4], [3], [9, 1, 5, 9])]
    axes = {"x": {0: "batch", 1: "seq"}, "lengths": {0: "batch"}}
    assert_exported_parity(jit.trace(Recurrent(), feeds[0], axes), feeds, tmp_path)
