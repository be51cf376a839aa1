"""The official LAC model's characters, embedding rows and dictionary words as resources for a tagger trained here."""
import os

import numpy
import pytest

from framework.engine import runner
from nlp.data.vocab import Vocab
from nlp.lac.data import char_vocab
from nlp.lac.model import BiGRUCRF
from nlp.lac.official import official_char_vectors, official_words


@pytest.fixture(scope="module")
def vectors():
    return official_char_vectors()


def test_official_characters_are_normalised_single_characters_with_128_wide_rows(vectors):
    assert len(vectors) > 8000 and all(len(c) == 1 and not c.isspace() for c in vectors)
    assert "A" in vectors and "Ａ" not in vectors              # full-width forms normalise to half-width
    assert {v.shape for v in vectors.values()} == {(128,)} and vectors["中"].dtype == numpy.float32
    assert not numpy.allclose(vectors["中"], vectors["国"])


def test_official_words_are_the_dictionaries_multi_character_words():
    words = official_words(4)
    assert {"中国", "人民", "高科技"} <= set(words)
    assert all(2 <= len(w) <= 4 and not any(c.isspace() for c in w) for w in words)
    assert words == sorted(set(words)) and len(official_words(6)) > len(words)


def test_official_characters_follow_the_train_characters_in_the_vocabulary(vectors):
    base, extended = char_vocab(2), char_vocab(2, official_chars=True)
    assert extended.tokens[:len(base)] == base.tokens
    extra = extended.tokens[len(base):]
    assert extra == sorted(extra) and len(extra) > 1000
    assert all(c in vectors and c not in base for c in extra)
    assert char_vocab(2, official_chars=True) is extended       # built once per process


def test_init_weights_starts_the_known_characters_from_the_official_rows(tmp_path, vectors):
    path = str(tmp_path / "vocab.txt")
    Vocab(["中", "国", "\U0001F600"]).save(path)                  # the emoji is not an official character
    model = BiGRUCRF(vocab_size=5, num_tags=3, hidden=8, official_embedding_vocab=path)
    before = model.embedding.weight.numpy().copy()
    assert model.init_weights() == 2
    after = model.embedding.weight.numpy()
    numpy.testing.assert_array_equal(after[2], vectors["中"])
    numpy.testing.assert_array_equal(after[3], vectors["国"])
    numpy.testing.assert_array_equal(after[[0, 1, 4]], before[[0, 1, 4]])
    assert BiGRUCRF(vocab_size=5, num_tags=3, hidden=8).init_weights() == 0
    with pytest.raises(ValueError, match="has 5 entries but the embedding has 7 rows"):
        BiGRUCRF(vocab_size=7, num_tags=3, hidden=8, official_embedding_vocab=path).init_weights()
    with pytest.raises(ValueError, match="emb_dim is 16"):
        BiGRUCRF(vocab_size=5, num_tags=3, emb_dim=16, hidden=8, official_embedding_vocab=path).init_weights()


def test_training_calls_init_weights_once_before_the_first_step(tmp_path, monkeypatch):
    import zoo.toy  # noqa: F401  (registers the tiny task)
    from framework.config import load_config
    from zoo.catalog import ROOT
    build, calls = runner.build_task, []

    def build_task(cfg):
        task = build(cfg)
        task.model.init_weights = lambda: calls.append(task.model.training)
        return task

    monkeypatch.setattr(runner, "build_task", build_task)
    tiny = os.path.join(ROOT, "configs", "_test", "tiny.yaml")
    runner.train(load_config(tiny, ["train.max_steps=2"]), output_dir=str(tmp_path), progress=False)
    assert len(calls) == 1
