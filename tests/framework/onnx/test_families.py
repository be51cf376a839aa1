"""Parity of exported model families through the exported file, at two or more input sizes each."""
import numpy
import pytest

from framework import jit
from framework.registry import MODELS
import nlp.lac.model  # noqa: F401  (registers BiGRUCRF)
import video.models  # noqa: F401
import vision.models  # noqa: F401

from .parity import assert_exported_parity

RNG = numpy.random.default_rng(0)
LAC_AXES = {"tokens": {0: "batch", 1: "seq"}, "lengths": {0: "batch"}, "lexicon": {0: "batch", 1: "seq"}}


def _tagger_feed(lengths, vocab, lexicon):
    lengths = numpy.asarray(lengths, dtype=numpy.int64)
    steps = int(lengths.max())
    tokens = RNG.integers(1, vocab, (len(lengths), steps)) * (numpy.arange(steps) < lengths[:, None])
    return {"tokens": tokens.astype(numpy.int64), "lengths": lengths,
            "lexicon": RNG.random((len(lengths), steps, lexicon)).astype(numpy.float32)}


@pytest.mark.parametrize("origin_mode", [False, True])
def test_bigru_crf_tagger(tmp_path, origin_mode):
    """Embedding, hashed n-grams, size-following reshape, masked projections, both GRU directions with lengths."""
    model = MODELS.build({"type": "BiGRUCRF", "vocab_size": 40, "num_tags": 7, "emb_dim": 8, "hidden": 6,
                          "ngram_buckets": 97, "ngram_orders": [2, 3], "ngram_dim": 3, "lexicon_features": 4,
                          "origin_mode": origin_mode, "init_bound": 0.5})
    feeds = [_tagger_feed(lengths, 40, 4) for lengths in ([7, 4, 1], [5, 2], [11, 1, 6, 3, 11])]
    program = jit.trace(model, feeds[0], LAC_AXES)
    assert_exported_parity(program, feeds, tmp_path)


VIDEO = {"TSN": {"depth": 18, "base_channels": 4, "num_segments": 3},
         "TSM": {"depth": 18, "base_channels": 8, "num_segments": 4},
         "StNet": {"depth": 18, "base_channels": 4, "num_segments": 3, "seglen": 2},
         "NonLocalNet": {"depth": 18, "base_channels": 4, "mode": "i3d"}}
FRAMES = {"TSN": 3, "TSM": 4, "StNet": 6, "NonLocalNet": 4}


@pytest.mark.parametrize("family", sorted(VIDEO))
def test_frame_video_models(tmp_path, family):
    """Clips (B, T, 3, 32, 32) at two batch sizes: temporal shift, 3-D convolutions, non-local attention."""
    model = MODELS.build({"type": family, "num_classes": 5, **VIDEO[family]})
    feeds = [{"x": RNG.standard_normal((batch, FRAMES[family], 3, 32, 32)).astype(numpy.float32)}
             for batch in (2, 1, 3)]
    assert_exported_parity(jit.trace(model, (feeds[0]["x"],)), feeds, tmp_path)


VISION = {"resnet18": {"base_channels": 4}, "resnet50": {"base_channels": 4}, "mobilenet_v1": {"scale": 0.25},
          "mobilenet_v2": {"width_mult": 0.25}}


@pytest.mark.parametrize("name", sorted(VISION))
def test_vision_backbones(tmp_path, name):
    """Images (N, 3, 32, 32) at two batch sizes: grouped and strided convolutions, pooling, clipped ReLU."""
    model = MODELS.build({"type": name, "num_classes": 5, **VISION[name]})
    feeds = [{"x": RNG.standard_normal((batch, 3, 32, 32)).astype(numpy.float32)} for batch in (2, 1, 4)]
    assert_exported_parity(jit.trace(model, (feeds[0]["x"],)), feeds, tmp_path)
