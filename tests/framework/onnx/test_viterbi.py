"""ONNX export of Viterbi decoding (two Scan loops): the same paths and scores as oar's kernel inside each
sequence's length, through the exported file, at several batch and sequence sizes (one step included)."""
import numpy

import framework
import framework.nn.functional as F
from framework import jit, nn

from .parity import assert_exported_parity

RNG = numpy.random.default_rng(5)
K = 6


class Decoder(nn.Layer):
    def __init__(self):
        super().__init__()
        self.transition = nn.Parameter(framework.to_tensor(RNG.standard_normal((K + 2, K)).astype(numpy.float32)).data)

    def forward(self, emissions, lengths):                                # (N, T, K), (N,)
        scores, paths = F.viterbi_decode(emissions, self.transition, lengths)
        return {"scores": scores, "paths": paths}


def test_viterbi_exports(tmp_path):
    def feed(lengths):
        lengths = numpy.asarray(lengths, dtype=numpy.int64)
        return {"emissions": RNG.standard_normal((len(lengths), int(lengths.max()), K)).astype(numpy.float32),
                "lengths": lengths}
    feeds = [feed(lengths) for lengths in ([6, 2, 4], [1], [9, 1, 5, 9], [3, 3])]
    axes = {"emissions": {0: "batch", 1: "seq"}, "lengths": {0: "batch"}}
    assert_exported_parity(jit.trace(Decoder(), feeds[0], axes), feeds, tmp_path)
