"""zoo.load refuses a card's files when any sha256 the card lists (weights, vocabulary, feature backbone)
differs from the file on disk."""
import pytest

import zoo
from zoo.api import WeightsError
from zoo.catalog import card


@pytest.mark.parametrize("name, key", [("senta_cnn", "sha256"), ("simnet_bow_pairwise", "sha256"),
                                       ("senta_cnn", "vocab_sha256"),
                                       ("attention_lstm_synth", "backbone_sha256")])
def test_files_that_differ_from_the_card_are_refused(name, key, monkeypatch):
    weights = card(name).weights
    if key == "sha256":
        weights = weights.replace(sha256="0" * 64)
    else:
        companion = key[:-len("_sha256")]
        assert companion in weights.companion_sha256
        weights = weights.replace(companion_sha256={**weights.companion_sha256, companion: "0" * 64})
    entry = card(name).replace(weights=weights)
    monkeypatch.setattr("zoo.resolver.zoo_card", lambda name: entry)
    with pytest.raises(WeightsError, match="refusing to load"):
        zoo.load(name)
