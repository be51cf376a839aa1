"""Parity of exported model families through the exported file, at two or more input sizes each."""
import numpy
import pytest

from framework import jit
from framework.registry import MODELS

from ..family_examples import FAMILIES, leaf_feed
from .parity import assert_exported_parity

RNG = numpy.random.default_rng(0)


@pytest.mark.parametrize("origin_mode", [False, True])
def test_bigru_crf_tagger(tmp_path, origin_mode):
    """Embedding, hashed n-grams, size-following reshape, masked projections, both GRU directions with lengths."""
    config, axes, feeds = FAMILIES["BiGRUCRF"]
    model = MODELS.build({**config, "origin_mode": origin_mode})
    feeds = feeds(RNG)
    assert_exported_parity(jit.trace(model, feeds[0], axes), feeds, tmp_path)


@pytest.mark.parametrize("family", ["TSN", "TSM", "StNet", "NonLocalNet", "resnet18", "resnet50", "mobilenet_v1",
                                    "mobilenet_v2"])
def test_frame_video_models_and_vision_backbones(tmp_path, family):
    """Clips (B, T, 3, 32, 32) and images (N, 3, 32, 32) at several batch sizes: temporal shift, 3-D and grouped
    convolutions, non-local attention, pooling, clipped ReLU."""
    config, _, feeds = FAMILIES[family]
    feeds = feeds(RNG)
    assert_exported_parity(jit.trace(MODELS.build(config), (feeds[0]["x"],)), feeds, tmp_path)


@pytest.mark.parametrize("family", ["resnet18", "mobilenet_v1"])
def test_a_program_with_fused_batch_norms_exports(tmp_path, family):
    """A program traced as ``zoo.load`` runs it (batch norms, and the ReLUs after them, as ChannelAffine ops)."""
    config, _, feeds = FAMILIES[family]
    feeds = feeds(RNG)
    program = jit.trace(MODELS.build(config).eval(), (feeds[0]["x"],), passes=jit.INFERENCE_PASSES)
    assert "ChannelAffine" in program.op_counts()
    assert_exported_parity(program, feeds, tmp_path)


@pytest.mark.parametrize("family", ["SentaBOW", "SentaCNN", "SentaGRU", "SentaLSTM", "SentaBiLSTM", "SimNetBOW",
                                    "SimNetCNN", "SimNetGRU", "SimNetLSTM", "AttentionCluster", "AttentionLSTM",
                                    "NeXtVLAD"])
def test_text_and_feature_models(tmp_path, family):
    """Ids with lengths (n-gram hashing, masks, LSTM/GRU inside each length, side stacking) and frame features
    with lengths (attention pooling, packed frames, VLAD) at several batch and sequence sizes."""
    config, axes, feeds = FAMILIES[family]
    model = MODELS.build(config)
    model.eval()
    feeds = feeds(RNG)
    assert_exported_parity(jit.trace(model, feeds[0], axes), [leaf_feed(feed) for feed in feeds], tmp_path)
