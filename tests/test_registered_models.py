"""Every registered model, reached through the registry and built small: the output shape its arguments give,
finite outputs, a non-zero gradient on every trainable parameter, and its state dict round trip (into a new
instance, and through ``framework.save``/``load`` as ``.npz``) giving identical outputs.

``CASES`` holds, per ``MODELS`` name, the small constructor arguments, a function making example inputs (the
positional arguments of ``forward``) and the expected output shape. A registered model without an entry fails
``test_every_registered_model_has_a_case``, which lists the missing names.

A name that fixes a full-size architecture (the YouTube-8M feature models: 40-90 million weights at any
``num_classes``, seconds to build and to round-trip each) cannot be built small; its entry names the family
it fixes, whose own small case runs the checks above, and ``test_full_size_variants`` checks that it takes
the family's arguments minus the fixed ones and that a shipped config builds it (``tests/test_configs.py``
builds every config's model at full size).
"""
import fnmatch
import functools
import glob
import inspect
import os
from dataclasses import dataclass, field
from typing import Callable, Optional

import numpy
import pytest

import framework
from framework.config import load_config
from framework.registry import MODELS
from zoo.api import register_everything

register_everything()

BATCH = 2


@dataclass(frozen=True)
class Case:
    """How to test one registered model small.

    kwargs: the constructor arguments (``MODELS.build({"type": name, **kwargs})``).
    inputs: rng -> the positional arguments of ``forward`` (Tensors, or lists of Tensors).
    output: the expected output shape.
    loss: (model, output, inputs) -> a scalar Tensor whose gradient must reach every trainable parameter;
        None: the output weighted by fixed random numbers, summed.
    zero_grad: parameter-name glob -> why the gradient of those parameters is exactly zero by design
        (the test asserts that it is).
    """
    kwargs: dict
    inputs: Callable
    output: tuple
    loss: Optional[Callable] = None
    zero_grad: dict = field(default_factory=dict)


@dataclass(frozen=True)
class FullSize:
    """A registered name that fixes a full-size architecture of ``family`` (a name in CASES): ``fixed`` are
    the family's arguments it sets."""
    family: str
    fixed: tuple


def _tensor(array):
    return framework.to_tensor(array)


def _ids(rng, vocab, lengths):
    """(N, max(lengths)) int64 ids in [1, vocab) with 0 (padding) past each length, and the lengths."""
    lengths = numpy.asarray(lengths, dtype=numpy.int64)
    ids = rng.integers(1, vocab, size=(len(lengths), int(lengths.max()))).astype(numpy.int64)
    ids[numpy.arange(ids.shape[1])[None, :] >= lengths[:, None]] = 0
    return _tensor(ids), _tensor(lengths)


def text(vocab, lengths=(7, 3)):
    """Inputs (ids, lengths) of a text model."""
    return lambda rng: _ids(rng, vocab, lengths)


def text_pair(vocab, a_lengths=(5, 2), b_lengths=(3, 4)):
    """Inputs (a_ids, a_lengths, b_ids, b_lengths) of a matching model."""
    return lambda rng: _ids(rng, vocab, a_lengths) + _ids(rng, vocab, b_lengths)


def tagger(vocab, lengths=(6, 3), lexicon=0):
    """Inputs (tokens, lengths[, lexicon (N, T, F) in {0, 1}]) of a sequence tagger."""
    def make(rng):
        tokens, lens = _ids(rng, vocab, lengths)
        if not lexicon:
            return tokens, lens
        return tokens, lens, _tensor((rng.random((len(lengths), max(lengths), lexicon)) < 0.5).astype("float32"))
    return make


def vectors(width):
    """Inputs (x (N, width),)."""
    return lambda rng: (_tensor(rng.standard_normal((BATCH, width)).astype("float32")),)


def images(size=32, channels=3):
    """Inputs (x (N, C, H, W),)."""
    return lambda rng: (_tensor(rng.standard_normal((BATCH, channels, size, size)).astype("float32")),)


def clips(frames, size=32):
    """Inputs (clips (N, T, 3, H, W),)."""
    return lambda rng: (_tensor(rng.standard_normal((BATCH, frames, 3, size, size)).astype("float32")),)


def stacked_clips(frames, channels, size=32):
    """Inputs (clips (N, T, channels, H, W),): RGB and motion channels stacked, as a two-stream model takes."""
    return lambda rng: (_tensor(rng.standard_normal((BATCH, frames, channels, size, size)).astype("float32")),)


def features(dims, frames=5, lengths=(5, 3)):
    """Inputs ([(N, T, D) per modality], lengths) of a feature model; frames past a length are zeros."""
    def make(rng):
        valid = numpy.arange(frames)[None, :, None] < numpy.asarray(lengths)[:, None, None]
        return ([_tensor((rng.standard_normal((len(lengths), frames, d)) * valid).astype("float32")) for d in dims],
                _tensor(numpy.asarray(lengths, dtype=numpy.int64)))
    return make


def crf_loss(model, emissions, inputs):
    """The tagger's CRF negative log-likelihood of fixed tags (the CRF's transitions are used only by the loss)."""
    tokens, lengths = inputs[0], inputs[1]
    tags = numpy.random.default_rng(3).integers(0, emissions.shape[-1], size=tokens.shape).astype(numpy.int64)
    return model.crf(emissions, tags, lengths).mean()


V, TAGS, CLASSES = 30, 7, 5
_BEHIND_ZERO_SCALE = "behind the non-local block's output BatchNorm, whose scale starts at 0 (the block starts as " \
    "the identity), so no gradient reaches it before that scale moves; the BatchNorm's own scale and shift do get one"
NONLOCAL_INSIDE = {f"*.nonlocal_block.{conv}.*": _BEHIND_ZERO_SCALE for conv in ("theta", "phi", "g", "out")}
SENTA = {"vocab_size": V, "emb_dim": 6, "hidden": 5, "hidden2": 4, "num_classes": 3}

CASES = {
    # NLP: lexical analysis (the same class under two names: the official network, and one with n-grams,
    # lexicon features and dropout)
    "BiGRUCRF": Case({"vocab_size": V, "num_tags": TAGS, "emb_dim": 6, "hidden": 5}, tagger(V), (2, 6, TAGS),
                     loss=crf_loss),
    "lac": Case({"vocab_size": V, "num_tags": TAGS, "emb_dim": 6, "hidden": 5, "num_layers": 1,
                 "ngram_buckets": 50, "ngram_dim": 3, "ngram_orders": [2, 3], "lexicon_features": 4,
                 "dropout": 0.1}, tagger(V, lexicon=4), (2, 6, TAGS), loss=crf_loss),
    # NLP: sentiment
    "LacEncoder": Case({"vocab_size": V, "layers": 2, "pretrained": False, "emb_dim": 6, "hidden": 5}, text(V),
                       (2, 7, 10)),
    "SentaBOW": Case({**SENTA, "ngrams": 2, "buckets": 40}, text(V), (2, 3)),
    "SentaCNN": Case({"vocab_size": V, "emb_dim": 6, "filters": 5, "window": 3, "hidden2": 4, "num_classes": 3},
                     text(V), (2, 3)),
    "SentaGRU": Case(SENTA, text(V), (2, 3)),
    "SentaLSTM": Case({**SENTA, "pooling": "attention"}, text(V), (2, 3)),
    "SentaBiLSTM": Case(SENTA, text(V), (2, 3)),
    # NLP: matching (pointwise: two-class scores (N, 2); pairwise: a cosine (N,))
    "SimNetBOW": Case({"vocab_size": V, "emb_dim": 6, "hidden": 5}, text_pair(V), (2, 2)),
    "SimNetCNN": Case({"vocab_size": V, "emb_dim": 6, "filters": 4, "windows": [1, 3], "hidden": 5,
                       "head": "pairwise"}, text_pair(V), (2,)),
    "SimNetGRU": Case({"vocab_size": V, "emb_dim": 6, "hidden_size": 4, "hidden": 5, "bidirectional": True},
                      text_pair(V), (2, 2)),
    "SimNetLSTM": Case({"vocab_size": V, "emb_dim": 6, "hidden_size": 4, "hidden": 5, "head": "pairwise"},
                       text_pair(V), (2,)),
    # vision
    "ResNet": Case({"block": "bottleneck", "layers": [1, 2, 1, 1], "base_channels": 4, "num_classes": CLASSES},
                   images(), (BATCH, CLASSES)),
    "resnet18": Case({"base_channels": 4, "num_classes": CLASSES}, images(), (BATCH, CLASSES)),
    "resnet34": Case({"base_channels": 4, "num_classes": CLASSES}, images(), (BATCH, CLASSES)),
    "resnet50": Case({"base_channels": 4, "num_classes": CLASSES}, images(), (BATCH, CLASSES)),
    "resnet101": Case({"base_channels": 2, "num_classes": CLASSES}, images(), (BATCH, CLASSES)),
    "mobilenet_v1": Case({"scale": 0.25, "num_classes": CLASSES}, images(), (BATCH, CLASSES)),
    # 64 px: maps 8, 4, 2 (blocks 5, 11, 13) and two extras at 1, with 4 + 6 + 6 + 6 + 6 priors a cell: 388
    "ssd_mobilenet_v1": Case({"num_classes": CLASSES, "scale": 0.25, "image_size": 64, "source_blocks": [5, 11, 13],
                              "extra_channels": [64, 64]}, images(64), (BATCH, 388, 4 + CLASSES + 1)),
    "mobilenet_v2": Case({"width_mult": 0.25, "num_classes": CLASSES}, images(), (BATCH, CLASSES)),
    # video: frame models (clips of T frames: TSN/TSM one per segment, StNet num_segments x seglen)
    "TSN": Case({"depth": 18, "base_channels": 4, "num_segments": 3, "num_classes": CLASSES}, clips(3),
                (BATCH, CLASSES)),
    "TwoStreamTSN": Case({"rgb": {"depth": 18, "base_channels": 4, "num_segments": 3, "num_classes": CLASSES},
                          "motion": {"depth": 18, "base_channels": 4, "num_segments": 3, "num_classes": CLASSES,
                                     "in_channels": 4}}, stacked_clips(3, 3 + 4), (BATCH, CLASSES)),
    "TSM": Case({"depth": 18, "base_channels": 8, "num_segments": 4, "num_classes": CLASSES}, clips(4),
                (BATCH, CLASSES)),
    "StNet": Case({"depth": 18, "base_channels": 4, "num_segments": 3, "seglen": 2, "num_classes": CLASSES},
                  clips(6), (BATCH, CLASSES)),
    "NonLocalNet": Case({"depth": 18, "base_channels": 4, "mode": "i3d", "num_classes": CLASSES}, clips(4),
                        (BATCH, CLASSES), zero_grad=NONLOCAL_INSIDE),
    # video: feature models
    "AttentionCluster": Case({"feature_dims": [6, 4], "num_clusters": [3, 2], "hidden_sizes": [8],
                              "num_classes": CLASSES}, features([6, 4]), (2, CLASSES)),
    "AttentionLSTM": Case({"feature_dims": [6, 4], "embedding_size": 5, "lstm_size": 4, "hidden_sizes": [8, 6],
                           "num_classes": CLASSES}, features([6, 4]), (2, CLASSES)),
    "NeXtVLAD": Case({"feature_dims": [6, 4], "num_clusters": 4, "expansion": 2, "groups": 2, "hidden_size": 8,
                      "gating_reduction": 2, "num_classes": CLASSES}, features([6, 4]), (2, CLASSES)),
    "attention_cluster_youtube8m": FullSize("AttentionCluster", ("feature_dims", "num_clusters", "hidden_sizes")),
    "attention_lstm_youtube8m": FullSize("AttentionLSTM", ("feature_dims", "embedding_size", "lstm_size",
                                                           "hidden_sizes")),
    "nextvlad_youtube8m": FullSize("NeXtVLAD", ("feature_dims", "num_clusters", "expansion", "groups", "hidden_size",
                                                "gating_reduction")),
    # the skeleton's toy model
    "MLP": Case({"in_features": 3, "hidden": 8, "num_classes": CLASSES, "dropout": 0.1}, vectors(3),
                (BATCH, CLASSES)),
}


SMALL = sorted(name for name, case in CASES.items() if isinstance(case, Case))
FULL_SIZE = sorted(name for name, case in CASES.items() if isinstance(case, FullSize))
CONFIGS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "configs")


def test_every_registered_model_has_a_case():
    missing = sorted(set(MODELS.names()) - set(CASES))
    assert not missing, f"registered models without an entry in CASES: {', '.join(missing)}"
    stale = sorted(set(CASES) - set(MODELS.names()))
    assert not stale, f"CASES entries that name no registered model: {', '.join(stale)}"


def _build(name, seed):
    framework.seed(seed)
    return MODELS.build({"type": name, **CASES[name].kwargs})


def _outputs(model, inputs):
    with framework.no_grad():
        return model(*inputs).numpy()


@pytest.mark.parametrize("name", SMALL)
def test_forward_gradients_and_state_dict_round_trip(name, tmp_path):
    case = CASES[name]
    rng = numpy.random.default_rng(0)
    model = _build(name, seed=0).train()
    inputs = case.inputs(rng)

    out = model(*inputs)
    assert tuple(out.shape) == case.output
    assert numpy.isfinite(out.numpy()).all()

    loss = case.loss(model, out, inputs) if case.loss else \
        (out * _tensor(rng.standard_normal(out.shape).astype("float32"))).sum()
    assert numpy.isfinite(loss.item())
    loss.backward()
    named = dict(model.named_parameters())
    unmatched = [glob for glob in case.zero_grad if not fnmatch.filter(named, glob)]
    assert not unmatched, f"zero_grad globs that match no parameter: {unmatched}"
    without = []
    for key, param in named.items():
        if not param.trainable:
            assert param.grad is None, f"{key} is frozen but got a gradient"
            continue
        assert param.grad is not None, f"{key} got no gradient"
        grad = param.grad.numpy()
        assert numpy.isfinite(grad).all(), f"{key}: the gradient is not finite"
        if any(fnmatch.fnmatch(key, glob) for glob in case.zero_grad):
            assert not grad.any(), f"{key}: listed as zero by design, got a non-zero gradient"
        elif not grad.any():
            without.append(key)
    assert not without, f"zero gradient on {without}"

    model.eval()
    expected = _outputs(model, inputs)
    assert numpy.isfinite(expected).all()
    state = {key: value.numpy().copy() for key, value in model.state_dict().items()}
    path = str(tmp_path / "weights.npz")
    framework.save(model.state_dict(), path)
    loaded = framework.load(path)
    assert list(loaded) == list(state)
    for key, value in state.items():
        assert loaded[key].dtype == value.dtype, key
        numpy.testing.assert_array_equal(loaded[key], value, err_msg=key)

    for seed, source in ((1, state), (2, loaded)):   # in memory, then from the .npz file
        twin = _build(name, seed=seed).eval()
        assert not numpy.array_equal(_outputs(twin, inputs), expected)   # another initialisation differs
        twin.set_state_dict(source)
        numpy.testing.assert_array_equal(_outputs(twin, inputs), expected)


@functools.lru_cache(maxsize=None)
def _model_types_of_configs():
    types = set()
    for path in glob.glob(os.path.join(CONFIGS, "**", "*.yaml"), recursive=True):
        if os.sep + "_base_" + os.sep not in path:
            types.add(load_config(path).get("model", {}).get("type"))
    return types


@pytest.mark.parametrize("name", FULL_SIZE)
def test_full_size_variants(name):
    variant = CASES[name]
    assert isinstance(CASES.get(variant.family), Case), f"{name}: its family {variant.family} needs a small case"
    family = inspect.signature(MODELS.get(variant.family)).parameters
    assert set(variant.fixed) <= set(family)
    assert list(inspect.signature(MODELS.get(name)).parameters) == [p for p in family if p not in variant.fixed]
    assert name in _model_types_of_configs(), f"{name}: no shipped config builds it"
