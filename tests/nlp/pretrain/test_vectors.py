"""Pretrained vectors: the vectors file round trip and its errors, the start of an embedding from it (by token,
rescaled to the table's spread), a Senta model started through its task, and skip-gram on a tiny text."""
import numpy
import pytest

from framework import nn
from framework.errors import MissingFileError
from framework.registry import MODELS
import nlp.senta.model  # noqa: F401  (registers the models)
from nlp.data.vocab import Vocab
from nlp.pretrain.skipgram import train_skipgram
from nlp.pretrain.store import load_vectors, save_vectors
from nlp.pretrain.vectors import start_embedding


def test_vectors_file_round_trip_and_errors(tmp_path):
    path = save_vectors(str(tmp_path / "v.npz"), ["好", "差"], numpy.arange(6).reshape(2, 3))
    vectors = load_vectors(path)
    assert sorted(vectors) == ["好", "差"] and vectors["差"].tolist() == [3.0, 4.0, 5.0]
    with pytest.raises(MissingFileError, match="not found"):
        load_vectors(str(tmp_path / "none.npz"))
    numpy.savez(tmp_path / "bad.npz", words=numpy.array(["a"]))
    with pytest.raises(ValueError, match="holds 'tokens' and 'vectors'"):
        load_vectors(str(tmp_path / "bad.npz"))
    with pytest.raises(ValueError, match=r"must be \(K,\) and \(K, E\)"):
        save_vectors(str(tmp_path / "w.npz"), ["a"], numpy.zeros((2, 3)))


def test_start_embedding_sets_the_known_tokens_rows_at_the_tables_spread(tmp_path):
    rng = numpy.random.default_rng(0)
    path = save_vectors(str(tmp_path / "v.npz"), ["好", "差", "x"], rng.normal(0, 5, (3, 8)))
    table = nn.Embedding(5, 8)
    before = table.weight.numpy().copy()
    assert start_embedding(table.weight, ["<pad>", "<unk>", "差", "好", "棒"], path) == 2
    after, given = table.weight.numpy(), load_vectors(path)
    scale = after[2] / given["差"]
    numpy.testing.assert_allclose(after[3] / given["好"], scale, rtol=1e-2)          # one scale for every row
    assert abs(scale[0] - before.std() / numpy.stack([given["差"], given["好"]]).std()) < 1e-2
    numpy.testing.assert_array_equal(after[[0, 1, 4]], before[[0, 1, 4]])             # the others are untouched
    with pytest.raises(ValueError, match="3 columns, the embedding 8"):
        start_embedding(table.weight, ["a"] * 5, save_vectors(str(tmp_path / "n.npz"), ["a"], numpy.ones((1, 3))))


def test_senta_model_starts_from_vectors_through_its_vocabulary(tmp_path):
    path = save_vectors(str(tmp_path / "v.npz"), ["好"], numpy.ones((1, 6)))
    model = MODELS.build({"type": "SentaBOW", "vocab_size": 5, "emb_dim": 6, "hidden": 4, "hidden2": 3,
                          "pretrained": path})
    with pytest.raises(ValueError, match="needs the vocabulary's tokens"):
        model.init_weights()
    model.use_vocabulary(Vocab(["差", "好"]).tokens)
    assert model.init_weights() == 1
    row = model.embedding.weight.numpy()[3]
    assert numpy.allclose(row, row[0]) and row[0] > 0
    plain = MODELS.build({"type": "SentaCNN", "vocab_size": 5, "emb_dim": 6, "filters": 4, "hidden2": 3})
    assert plain.init_weights() == 0


def test_skipgram_learns_which_characters_share_contexts():
    texts = ["好棒好棒好棒赞", "差烂差烂差烂糟"] * 30 + ["好赞棒", "差糟烂"] * 30
    tokens, vectors, loss = train_skipgram(texts, dim=8, window=2, negatives=3, min_count=1, epochs=8,
                                           batch_size=64, learning_rate=0.05, progress=False)
    assert sorted(tokens) == sorted("好棒赞差烂糟") and vectors.shape == (6, 8) and loss < 1.2
    v = {t: r / numpy.linalg.norm(r) for t, r in zip(tokens, vectors)}
    assert v["好"] @ v["棒"] > v["好"] @ v["烂"]
