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
    entry = {**card(name)}
    entry["weights"] = {**entry["weights"], key: "0" * 64}
    monkeypatch.setattr("zoo.api.card", lambda name: entry)
    with pytest.raises(WeightsError, match="refusing to load"):
        zoo.load(name)
