"""LAC's trunk (nlp.lac.encoder): its tokens are the official reader's, its official weights give the official
network's BiGRU states, freezing stops exactly the named parts, and a Senta or SimNet model on it runs the same
eager, traced and through ONNX."""
import numpy
import pytest

import framework
from framework import jit
from framework.config import ConfigError
from nlp.lac.encoder import LacEncoder, LacTokens
from nlp.lac.task import load_official
from nlp.senta.model import SentaBOW, SentaGRU
from nlp.simnet.model import SimNetBOW, SimNetCNN, SimNetLSTM
from nlp.simnet.task import TextMatching
from tests.framework.onnx.parity import assert_exported_parity

TEXTS = ["五星好评，物流很快", "推荐购买", "ＡＢＣ百度是一家高科技公司", "  好评 "]
AXES = {"ids": {0: "batch", 1: "seq"}, "lengths": {0: "batch"}}


@pytest.fixture(scope="module")
def tokens():
    return LacTokens()


def _batch(tokens, texts):
    vocab = tokens.vocabulary()
    rows = [vocab.encode(t) for t in tokens.tokenize_batch(texts)]
    lengths = numpy.array([len(r) for r in rows], dtype=numpy.int64)
    ids = numpy.zeros((len(rows), lengths.max()), dtype=numpy.int64)
    for i, row in enumerate(rows):
        ids[i, :len(row)] = row
    return ids, lengths


def test_tokens_are_the_official_readers_words_and_characters(tokens):
    assert tokens.tokenize_batch(TEXTS) == [["五星", "好评", ",", "物流", "很", "快"], ["推荐", "购买"],
                                            ["A", "B", "C", "百度", "是", "一家", "高科技", "公司"], ["好评"]]
    assert tokens.tokenize_batch([]) == [] and tokens.tokenize("") == []
    vocab = tokens.vocabulary()
    assert len(vocab) == 58224 and vocab.tokens[:2] == ["<pad>", "<unk>"] and "OOV" not in vocab
    assert vocab.encode(["OOV"]).tolist() == [vocab.UNK_ID]


def test_official_weights_give_the_official_bigru_states(tokens):
    official, reader, _ = load_official()
    texts = TEXTS[:3]
    ids, lengths = _batch(tokens, texts)
    encoder = LacEncoder()
    encoder.use_vocabulary(tokens.vocabulary().tokens)
    assert encoder.init_weights() == 58223                                   # every row but pad
    encoder.eval()
    ours = encoder(framework.to_tensor(ids), framework.to_tensor(lengths)).numpy()
    assert ours.shape == (3, 8, 256) and encoder.width == 256
    for i, text in enumerate(texts):
        official_ids, _ = reader.encode(text)
        tokens_in = framework.to_tensor(numpy.array([official_ids], dtype=numpy.int64))
        length = framework.to_tensor(numpy.array([len(official_ids)], dtype=numpy.int64))
        states, _ = official.gru(official.embedding(tokens_in), length)
        numpy.testing.assert_allclose(ours[i, :lengths[i]], states.numpy()[0], rtol=1e-5, atol=1e-6)
        assert not ours[i, lengths[i]:].any()                                  # zero past the length
    embeddings = LacEncoder(layers=0)
    embeddings.use_vocabulary(tokens.vocabulary().tokens)
    embeddings.init_weights()
    first = embeddings(framework.to_tensor(ids[:1])).numpy()[0, 0]
    numpy.testing.assert_array_equal(first, official.embedding.weight.numpy()[reader.encode("五星")[0][0]])


def test_freeze_stops_exactly_the_named_parts():
    def trainable(**options):
        return sorted({n.split(".")[0] + ("." + n.split(".")[2] if n.startswith("gru") else "")
                       for n, p in LacEncoder(100, emb_dim=4, hidden=3, **options).named_parameters()
                       if p.requires_grad})
    assert trainable() == ["embedding", "gru.0", "gru.1"]
    assert trainable(freeze=["embedding", "gru.layers.0"]) == ["gru.1"]
    assert trainable(freeze="all") == []
    with pytest.raises(ConfigError, match="freeze names 'rnn', which is no part of embedding, gru.layers.0.bw"):
        LacEncoder(100, emb_dim=4, hidden=3, freeze=["rnn"])
    with pytest.raises(ConfigError, match="layers must be 0, 1 or 2"):
        LacEncoder(100, layers=3)
    with pytest.raises(ValueError, match="a trunk takes no pretrained vectors"):
        SentaBOW(100, pretrained="lac", trunk={"pretrained": False})


@pytest.mark.parametrize("model", [
    lambda: SentaGRU(40, hidden=5, hidden2=4, num_classes=3, pooling="maxmean",
                     trunk={"pretrained": False, "emb_dim": 6, "hidden": 4, "freeze": ["embedding"]}),
    lambda: SentaBOW(40, hidden=5, hidden2=4, trunk={"pretrained": False, "layers": 0, "emb_dim": 6}),
    lambda: SentaBOW(40, hidden=5, hidden2=4, pooling="sqrt", ngrams=2, buckets=30,
                     trunk={"pretrained": False, "layers": 0, "emb_dim": 6}),
])
def test_a_senta_model_on_the_trunk_runs_the_same_traced_and_through_onnx(model, tmp_path):
    rng = numpy.random.default_rng(0)
    feeds = []
    for lengths in ([5, 2, 7], [3], [9, 1]):
        lengths = numpy.array(lengths, dtype=numpy.int64)
        ids = rng.integers(1, 40, (len(lengths), lengths.max())) * (numpy.arange(lengths.max()) < lengths[:, None])
        feeds.append({"ids": ids.astype(numpy.int64), "lengths": lengths})
    _assert_traced_and_exported_equal_eager(model().eval(), feeds, AXES, tmp_path)


def test_a_simnet_model_starts_its_trunk_from_the_official_rows(tokens):
    official, reader, _ = load_official()
    net = SimNetBOW(58224, head="pairwise", trunk={"layers": 0})
    net.use_vocabulary(tokens.vocabulary().tokens)
    assert net.init_weights() == 58223 and not hasattr(net, "embedding")
    row = tokens.vocabulary().encode(["好评"])[0]
    numpy.testing.assert_array_equal(net.trunk.embedding.weight.numpy()[row],
                                     official.embedding.weight.numpy()[reader.encode("好评")[0][0]])
    assert SimNetBOW(10).init_weights() == 0


@pytest.mark.parametrize("model", [
    lambda: SimNetBOW(40, head="pairwise", hidden=5, trunk={"pretrained": False, "layers": 0, "emb_dim": 6}),
    lambda: SimNetCNN(40, filters=4, windows=[1, 3], hidden=5,
                      trunk={"pretrained": False, "emb_dim": 6, "hidden": 3}),
    lambda: SimNetLSTM(40, hidden_size=4, hidden=5, head="pairwise",
                       trunk={"pretrained": False, "emb_dim": 6, "hidden": 3, "freeze": "all"}),
])
def test_a_simnet_model_on_the_trunk_honours_lengths_and_runs_the_same_traced_and_through_onnx(model, tmp_path):
    net, rng = model().eval(), numpy.random.default_rng(1)
    feeds = []
    for a_lengths, b_lengths in (([5, 2, 7], [3, 6, 1]), ([3], [8]), ([9, 1], [2, 2])):   # one width, as the task pads
        a_lengths, b_lengths = numpy.array(a_lengths), numpy.array(b_lengths)
        width = max(a_lengths.max(), b_lengths.max())
        feeds.append({"a_ids": rng.integers(1, 40, (len(a_lengths), width)), "a_lengths": a_lengths,
                      "b_ids": rng.integers(1, 40, (len(b_lengths), width)), "b_lengths": b_lengths})
    ids, lengths = feeds[0]["a_ids"], feeds[0]["a_lengths"]
    repadded = numpy.where(numpy.arange(ids.shape[1]) < lengths[:, None], ids, 0)
    vectors = [net.encode(framework.to_tensor(i), framework.to_tensor(lengths)).numpy() for i in (ids, repadded)]
    numpy.testing.assert_allclose(vectors[0], vectors[1], rtol=1e-6, atol=1e-7)   # past a length: no effect
    _assert_traced_and_exported_equal_eager(net, feeds, TextMatching.dynamic_axes, tmp_path)


def _assert_traced_and_exported_equal_eager(net, feeds, axes, tmp_path):
    """The traced program of ``net`` equals eager on every feed (a dict of the inputs in ``net``'s argument
    order), and its ONNX export equals the program."""
    pytest.importorskip("onnxruntime")
    program = jit.trace(net, feeds[0], axes)
    for feed in feeds:
        eager = net(*(framework.to_tensor(array) for array in feed.values())).numpy()
        traced = program(**feed)
        traced = traced.numpy() if hasattr(traced, "numpy") else numpy.asarray(traced)
        numpy.testing.assert_allclose(traced, eager, rtol=1e-5, atol=1e-6)
    assert_exported_parity(program, feeds, tmp_path)
