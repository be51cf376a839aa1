"""Small instances of every zoo model family and inputs for them, shared by the static-graph and ONNX tests.

``FAMILIES[name]`` is ``(model config for framework.registry.MODELS, dynamic_axes or None, feeds(rng))``:
the feeds are two or more input dicts of different sizes (the first is the example to trace on).
"""
import numpy

import nlp.lac.model  # noqa: F401  (registers the models)
import nlp.senta.model  # noqa: F401
import nlp.simnet.model  # noqa: F401
import video.models  # noqa: F401
import vision.models  # noqa: F401

LAC_AXES = {"tokens": {0: "batch", 1: "seq"}, "lengths": {0: "batch"}, "lexicon": {0: "batch", 1: "seq"}}
TEXT_AXES = {"ids": {0: "batch", 1: "seq"}, "lengths": {0: "batch"}}
PAIR_AXES = {"a_ids": {0: "batch", 1: "seq"}, "a_lengths": {0: "batch"}, "b_ids": {0: "batch", 1: "seq"},
             "b_lengths": {0: "batch"}}
FEATURE_AXES = {"features": {0: "batch", 1: "frames"}, "lengths": {0: "batch"}}


def leaf_feed(feed):
    """A feed with each list input spread into its arrays ``name.0``, ``name.1`` … (a program's inputs)."""
    flat = {}
    for name, value in feed.items():
        flat.update({f"{name}.{i}": v for i, v in enumerate(value)} if isinstance(value, list) else {name: value})
    return flat


def padded_ids(rng, lengths, vocab):
    """(ids (N, max length) int64 with 0 past each length, lengths (N,) int64)."""
    lengths = numpy.asarray(lengths, dtype=numpy.int64)
    steps = int(lengths.max())
    return (rng.integers(1, vocab, (len(lengths), steps)) * (numpy.arange(steps) < lengths[:, None])), lengths


def tagger_feed(rng, lengths, vocab, lexicon):
    tokens, lengths = padded_ids(rng, lengths, vocab)
    return {"tokens": tokens, "lengths": lengths,
            "lexicon": rng.random((len(lengths), tokens.shape[1], lexicon)).astype(numpy.float32)}


def _text_feeds(rng):
    return [dict(zip(("ids", "lengths"), padded_ids(rng, lengths, 30))) for lengths in ([5, 2, 7], [3], [9, 1])]


def _pair_feeds(rng):
    feeds = []
    for a, b in (([4, 2], [3, 4]), ([6], [2]), ([1, 5, 3], [5, 2, 1])):
        a_ids, a_len = padded_ids(rng, a + [max(a + b)], 30)
        b_ids, b_len = padded_ids(rng, b + [max(a + b)], 30)
        feeds.append({"a_ids": a_ids[:-1], "a_lengths": a_len[:-1], "b_ids": b_ids[:-1], "b_lengths": b_len[:-1]})
    return feeds


def _feature_feeds(rng, dims):
    return [{"features": [rng.standard_normal((len(lengths), max(lengths), d)).astype(numpy.float32) for d in dims],
             "lengths": numpy.asarray(lengths, dtype=numpy.int64)} for lengths in ([6, 3], [4], [8, 1, 5])]


def _clips(frames, size=32):
    return lambda rng: [{"x": rng.standard_normal((batch, frames, 3, size, size)).astype(numpy.float32)}
                        for batch in (2, 1, 3)]


def _images(rng):
    return [{"x": rng.standard_normal((batch, 3, 32, 32)).astype(numpy.float32)} for batch in (2, 1, 4)]


TAGGER = {"type": "BiGRUCRF", "vocab_size": 40, "num_tags": 7, "emb_dim": 8, "hidden": 6, "ngram_buckets": 97,
          "ngram_orders": [2, 3], "ngram_dim": 3, "lexicon_features": 4, "init_bound": 0.5}
FAMILIES = {
    "BiGRUCRF": (TAGGER, LAC_AXES,
                 lambda rng: [tagger_feed(rng, lengths, 40, 4) for lengths in ([7, 4, 1], [5, 2], [11, 1, 6, 3, 11])]),
    **{senta: ({"type": senta, "vocab_size": 30, "emb_dim": 8, "hidden2": 5, "ngrams": 3, "buckets": 31,
                **({"filters": 6} if senta == "SentaCNN" else {"hidden": 6})}, TEXT_AXES, _text_feeds)
       for senta in ("SentaBOW", "SentaCNN", "SentaGRU", "SentaLSTM", "SentaBiLSTM")},
    **{simnet: ({"type": simnet, "vocab_size": 30, "emb_dim": 8, "head": head}, PAIR_AXES, _pair_feeds)
       for simnet, head in (("SimNetBOW", "pointwise"), ("SimNetCNN", "pairwise"), ("SimNetGRU", "pointwise"),
                            ("SimNetLSTM", "pairwise"))},
    "TSN": ({"type": "TSN", "num_classes": 5, "depth": 18, "base_channels": 4, "num_segments": 3}, None, _clips(3)),
    "TSM": ({"type": "TSM", "num_classes": 5, "depth": 18, "base_channels": 8, "num_segments": 4}, None, _clips(4)),
    "StNet": ({"type": "StNet", "num_classes": 5, "depth": 18, "base_channels": 4, "num_segments": 3, "seglen": 2},
              None, _clips(6)),
    "NonLocalNet": ({"type": "NonLocalNet", "num_classes": 5, "depth": 18, "base_channels": 4, "mode": "i3d"}, None,
                    _clips(4)),
    "AttentionCluster": ({"type": "AttentionCluster", "feature_dims": [6, 4], "num_classes": 5, "num_clusters": [2, 3],
                          "hidden_sizes": [6, 5]},
                         FEATURE_AXES, lambda rng: _feature_feeds(rng, [6, 4])),
    "AttentionLSTM": ({"type": "AttentionLSTM", "feature_dims": [6, 4], "num_classes": 5, "lstm_size": 5},
                      FEATURE_AXES, lambda rng: _feature_feeds(rng, [6, 4])),
    "NeXtVLAD": ({"type": "NeXtVLAD", "feature_dims": [8, 4], "num_classes": 5, "num_clusters": 4,
                  "hidden_size": 6, "groups": 2, "expansion": 2, "gating_reduction": 2}, FEATURE_AXES, lambda rng: _feature_feeds(rng, [8, 4])),
    "resnet18": ({"type": "resnet18", "num_classes": 5, "base_channels": 4}, None, _images),
    "resnet50": ({"type": "resnet50", "num_classes": 5, "base_channels": 4}, None, _images),
    "mobilenet_v1": ({"type": "mobilenet_v1", "num_classes": 5, "scale": 0.25}, None, _images),
    "mobilenet_v2": ({"type": "mobilenet_v2", "num_classes": 5, "width_mult": 0.25}, None, _images),
}
