"""configs/nlp/lac_pku.yaml and the BiGRU-CRF options it uses (hashed character n-grams, lexicon features, dropout)."""
import os

import numpy
import pytest

import framework
from framework.config import load_config
from framework.engine import runner
from nlp.lac.model import BiGRUCRF
from zoo.catalog import ROOT

CONFIG = os.path.join(ROOT, "configs", "nlp", "lac_pku.yaml")


@pytest.fixture(scope="module")
def cfg():
    from zoo.api import register_everything
    register_everything()
    return load_config(CONFIG)


def test_config_builds_its_sizes_with_the_shipped_files_and_lac_learning_rates(cfg, monkeypatch):
    monkeypatch.chdir(ROOT)                      # the config names the shipped vocabulary relative to the root
    task = runner.build_task(cfg)
    model = task.model
    assert isinstance(model, BiGRUCRF) and model.num_tags == 85
    assert model.embedding.weight.shape == (cfg["model"]["vocab_size"], cfg["model"]["emb_dim"])
    assert model.gru.hidden_size == cfg["model"]["hidden"] and model.gru.num_layers == 2
    assert len(task.preprocessor.vocab) == cfg["model"]["vocab_size"]
    assert task.lexicon.num_features == model.lexicon_features == cfg["model"]["lexicon_features"]
    optimizer = runner.build_optimizer(cfg, model, None)
    rates = {id(p): group["learning_rate"] for group in optimizer.param_groups for p in group["params"]}
    assert rates[id(model.embedding.weight)] == 2.0 and rates[id(model.crf.transition)] == 1.0
    assert rates[id(model.emission.weight)] == 1.0
    if model.ngram_buckets:
        assert rates[id(model.ngram_embedding.weight)] == 2.0
    assert cfg["train"]["metric"] == "pos_f1"


def test_shipped_vocabulary_and_lexicons_are_the_train_splits_and_the_official_ones(cfg):
    from nlp.lac.data import char_vocab, train_lexicon
    from nlp.lac.lexicon import load_lexicon
    from nlp.data.vocab import Vocab
    from nlp.lac.official import official_words
    train = cfg["data"]["train"]
    shipped = Vocab.load(os.path.join(ROOT, cfg["task"]["vocab_file"]))
    assert shipped == char_vocab(train["min_freq"], official_chars=train["official_chars"])
    assert len(shipped) == cfg["model"]["vocab_size"]
    assert cfg["model"]["official_embedding_vocab"] == cfg["task"]["vocab_file"]
    train_words, official = [load_lexicon(os.path.join(ROOT, f)) for f in cfg["task"]["lexicon_file"]]
    assert train_words == train_lexicon(train["lexicon_min_freq"])
    assert train["official_lexicon"] and official == official_words(6)


def test_ngram_ids_hash_the_windows_around_each_position():
    model = BiGRUCRF(10, 5, emb_dim=4, hidden=3, ngram_buckets=1000, ngram_dim=2, ngram_orders=[2, 3])
    ids = model.ngram_ids(framework.to_tensor(numpy.array([[3, 4, 5]]))).numpy()[0]     # (T, 2 + 3)

    def hashed(*window):
        h = len(window)
        for a in window:
            h = (h * 1000003 + a) % 1000
        return h
    assert ids[0].tolist() == [hashed(0, 3), hashed(3, 4), hashed(0, 0, 3), hashed(0, 3, 4), hashed(3, 4, 5)]
    assert ids[2].tolist() == [hashed(4, 5), hashed(5, 0), hashed(3, 4, 5), hashed(4, 5, 0), hashed(5, 0, 0)]
    assert ids[0, 1] == ids[1, 0]                # the bigram (3, 4) is one row for both positions


def test_ngram_model_trains_every_parameter_and_round_trips(tmp_path):
    framework.seed(1)
    model = BiGRUCRF(12, 6, emb_dim=4, hidden=3, ngram_buckets=50, ngram_dim=2, ngram_orders=[2], dropout=0.2)
    assert model.gru.layers[0]["fw"].input_proj.weight.shape == (4 + 2 * 2, 9)
    tokens = framework.to_tensor(numpy.array([[2, 3, 4, 5], [6, 7, 0, 0]]))
    lengths = framework.to_tensor(numpy.array([4, 2]))
    labels = numpy.array([[0, 1, 2, 3], [4, 5, 0, 0]])
    model.train()
    model.crf(model(tokens, lengths), labels, lengths).sum().backward()
    for name, param in model.named_parameters():
        assert param.grad is not None and numpy.abs(param.grad.numpy()).sum() > 0, name
    used = numpy.unique(model.ngram_ids(tokens).numpy())
    grad = model.ngram_embedding.weight.grad.numpy()
    assert numpy.all(grad[numpy.setdiff1d(numpy.arange(50), used)] == 0)
    model.eval()
    first = model(tokens, lengths).numpy()
    assert numpy.array_equal(first, model(tokens, lengths).numpy())        # no dropout in eval
    framework.save(model.state_dict(), str(tmp_path / "m.npz"))
    copy = BiGRUCRF.from_state_dict(framework.load(str(tmp_path / "m.npz")), ngram_orders=[2])
    copy.eval()
    numpy.testing.assert_allclose(copy(tokens, lengths).numpy(), first, rtol=1e-6)


def test_default_network_is_the_official_one():
    model = BiGRUCRF(20, 5)
    names = [name for name, _ in model.named_parameters()]
    assert not any(name.startswith("ngram") for name in names) and len(names) == 20
    assert model.lexicon_features == 0 and model.gru.layers[0]["fw"].input_proj.weight.shape == (128, 384)
    with pytest.raises(ValueError, match="ngram"):
        BiGRUCRF(20, 5, ngram_buckets=10, ngram_orders=[1])


def _lexicon_features(words, max_len=4):
    from nlp.data.vocab import Vocab
    from nlp.lac.lexicon import LexiconFeatures
    vocab = Vocab(list("abcdefg"))
    return vocab, LexiconFeatures(words, vocab, max_len=max_len)


def test_lexicon_features_flag_where_known_words_start_end_and_cover():
    vocab, features = _lexicon_features(["ab", "bcd", "ｃｄ", "xy", "a", "abcdefg"])
    assert features.num_words == 3 and features.num_features == 3 * 4 - 4     # "xy" has unknown characters
    ids = numpy.array([vocab.encode("abcde").tolist(), vocab.encode("bcd").tolist() + [0, 0]])
    flags = features(ids)                               # columns: start 2..4, end 2..4, middle 3..4
    assert flags.shape == (2, 5, 8) and flags.dtype == numpy.float32
    start, end, middle = flags[..., 0:3], flags[..., 3:6], flags[..., 6:8]
    assert start[0, :, 0].tolist() == [1, 0, 1, 0, 0]    # "ab" at 0, "cd" (full-width in the lexicon) at 2
    assert end[0, :, 0].tolist() == [0, 1, 0, 1, 0]
    assert start[0, :, 1].tolist() == [0, 1, 0, 0, 0] and end[0, :, 1].tolist() == [0, 0, 0, 1, 0]   # "bcd"
    assert middle[0, :, 0].tolist() == [0, 0, 1, 0, 0] and not middle[0, :, 1].any()
    assert start[1, :, 1].tolist() == [1, 0, 0, 0, 0] and not flags[1, 3:].any()   # nothing in the padding
    assert not flags[..., 2].any() and not flags[..., 5].any()                       # no word of length 4


def test_lexicon_features_without_matches_and_in_short_rows():
    _, features = _lexicon_features([])
    assert features.num_words == 0 and features(numpy.array([[2, 3]])).shape == (1, 2, 8)
    _, features = _lexicon_features(["abcd"])
    assert not features(numpy.array([[2, 3, 4]])).any()        # shorter than every word
    with pytest.raises(ValueError, match="max_len"):
        _lexicon_features(["ab"], max_len=1)


def test_lexicon_file_round_trips_and_rejects_repeats(tmp_path):
    from nlp.data.text import TextFormatError
    from nlp.lac.lexicon import load_lexicon, save_lexicon
    save_lexicon(["中国", "发展"], str(tmp_path / "lex.txt"))
    assert load_lexicon(str(tmp_path / "lex.txt")) == ["中国", "发展"]
    (tmp_path / "bad.txt").write_text("中国\n发展\n中国\n", encoding="utf-8")
    with pytest.raises(TextFormatError, match="bad.txt:3"):
        load_lexicon(str(tmp_path / "bad.txt"))
    with pytest.raises(ValueError, match="twice"):
        save_lexicon(["a", "a"], str(tmp_path / "twice.txt"))


def test_train_lexicon_counts_the_train_splits_words(tmp_path):
    from nlp.lac.data import PeoplesDailyTagging, train_lexicon
    lines = ["北京/ns  是/v  首都/n", "测试/v  一/m", "上海/ns  是/v  城市/n"] * 2 + ["北京/ns  很/d  大/a"] * 8
    path = tmp_path / "corpus.txt"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")        # lines 0 and 1 (dev/test) are not counted
    assert train_lexicon(1, path=str(path)) == ["北京", "上海", "城市", "测试", "首都"]   # ties by code point
    assert train_lexicon(2, path=str(path)) == ["北京", "上海", "城市"]
    dataset = PeoplesDailyTagging("dev", corpus_file=str(path), lexicon_min_freq=2)
    assert dataset.lexicon() == train_lexicon(2, path=str(path))


def test_jackknife_features_match_each_sample_against_the_other_folds(tmp_path):
    from nlp.lac.data import PeoplesDailyTagging, jackknife_lexicons
    from nlp.lac.lexicon import LexiconFeatures
    from nlp.lac.task import TaggingCollator
    lines = [f"{w}/n  是/v  首都/n" for w in ("北京", "东京", "上海", "巴黎", "罗马", "柏林", "伦敦", "开罗", "华沙", "雅典")]
    path = tmp_path / "corpus.txt"
    path.write_text("\n".join(lines * 2) + "\n", encoding="utf-8")     # train lines 2..9 and 12..19
    lexicons = jackknife_lexicons(4, path=str(path))                      # fold (line % 10) % 4
    assert "上海" not in lexicons[2] and "巴黎" not in lexicons[3] and "上海" in lexicons[3]
    assert all("首都" in words for words in lexicons)
    dataset = PeoplesDailyTagging("train", corpus_file=str(path), lexicon_folds=4, max_len=0)
    assert len(dataset) == 16
    for index in range(len(dataset)):
        sample = dataset[index]
        fold = (int(dataset.lines[index]) % 10) % 4
        expected = LexiconFeatures(lexicons[fold], dataset.vocab)(sample["tokens"][None])[0]
        assert sample["lexicon"].shape == (5, 14) and numpy.array_equal(sample["lexicon"], expected)
    assert dataset[0]["lexicon"][:, 0].tolist() == [0, 0, 0, 1, 0]        # line 2: 上海 is in no other fold
    batch = TaggingCollator()([dataset[0], dataset[1]])
    assert batch["lexicon"].shape == (2, 5, 14) and batch["tokens"].shape == (2, 5)
    assert "lexicon" not in TaggingCollator()([{"tokens": numpy.array([2]), "labels": numpy.array([0])}])
    with pytest.raises(ValueError, match="train split"):
        PeoplesDailyTagging("dev", corpus_file=str(path), lexicon_folds=4)
    with pytest.raises(ValueError, match="2..8"):
        jackknife_lexicons(9, path=str(path))


def test_lexicon_model_reads_the_features_the_task_computes(tmp_path):
    from framework.config import ConfigError
    from framework.engine.task import to_tensors
    from nlp.data.vocab import Vocab
    from nlp.lac.lexicon import save_lexicon
    from nlp.lac.task import LexicalAnalysis
    vocab = Vocab(list("今天是好日子"))
    vocab.save(str(tmp_path / "vocab.txt"))
    save_lexicon(["今天", "日子"], str(tmp_path / "lex.txt"))
    framework.seed(0)
    model = BiGRUCRF(len(vocab), 5, emb_dim=4, hidden=3, lexicon_features=5, dropout=0.1)
    assert model.gru.layers[0]["fw"].input_proj.weight.shape == (4 + 5, 9)
    task = LexicalAnalysis(model, vocab_file=str(tmp_path / "vocab.txt"), lexicon_file=str(tmp_path / "lex.txt"),
                           lexicon_max_len=3, tag_names=["n-B", "n-I", "v-B", "v-I", "O"])
    batch = to_tensors(task.collate_fn([{"tokens": vocab.encode("今天是好日子"), "labels": numpy.arange(6) % 5}]))
    model.train()
    task.loss(batch).backward()
    for name, param in model.named_parameters():
        assert param.grad is not None and numpy.abs(param.grad.numpy()).sum() > 0, name
    model.eval()
    expected = model(batch["tokens"], batch["tokens_lengths"], lexicon=task.lexicon(batch["tokens"].numpy()))
    numpy.testing.assert_array_equal(task._emissions(batch).numpy(), expected.numpy())
    assert task.lexicon(batch["tokens"].numpy())[0, :, 0].tolist() == [1, 0, 0, 0, 1, 0]
    given = framework.to_tensor(numpy.ones((1, 6, 5), dtype=numpy.float32))     # a batch's own features win
    numpy.testing.assert_array_equal(task._emissions(dict(batch, lexicon=given)).numpy(),
                                     model(batch["tokens"], batch["tokens_lengths"], lexicon=given).numpy())
    assert ["".join(r["words"]) for r in task.predict_raw(["今天好", "日子"])] == ["今天好", "日子"]
    with pytest.raises(ValueError, match="forward got none"):
        model(batch["tokens"], batch["tokens_lengths"])
    with pytest.raises(ValueError, match="lexicon_features=0"):
        BiGRUCRF(len(vocab), 5)(batch["tokens"], batch["tokens_lengths"], lexicon=numpy.zeros((1, 6, 5)))
    with pytest.raises(ConfigError, match="model.lexicon_features: 5"):
        LexicalAnalysis(BiGRUCRF(len(vocab), 5), vocab_file=str(tmp_path / "vocab.txt"),
                        lexicon_file=str(tmp_path / "lex.txt"), lexicon_max_len=3)
    save_lexicon(["是好", "好日子"], str(tmp_path / "lex2.txt"))
    stacked = LexicalAnalysis(BiGRUCRF(len(vocab), 5, lexicon_features=10), vocab_file=str(tmp_path / "vocab.txt"),
                              lexicon_file=[str(tmp_path / "lex.txt"), str(tmp_path / "lex2.txt")],
                              lexicon_max_len=3, tag_names=["n-B", "n-I", "v-B", "v-I", "O"])
    features = stacked.lexicon(batch["tokens"].numpy())                          # (1, 6, 5 + 5)
    numpy.testing.assert_array_equal(features[..., :5], task.lexicon(batch["tokens"].numpy()))
    # the second lexicon's columns: start 2 (是好), start 3 (好日子), end 2, end 3, middle 3
    assert features[0, :, 5:].T.tolist() == [[0, 0, 1, 0, 0, 0], [0, 0, 0, 1, 0, 0], [0, 0, 0, 1, 0, 0],
                                             [0, 0, 0, 0, 0, 1], [0, 0, 0, 0, 1, 0]]
    with pytest.raises(ConfigError, match=r"\(2 lexicon\(s\)\).*model.lexicon_features: 10"):
        LexicalAnalysis(BiGRUCRF(len(vocab), 5, lexicon_features=5), vocab_file=str(tmp_path / "vocab.txt"),
                        lexicon_file=[str(tmp_path / "lex.txt"), str(tmp_path / "lex2.txt")], lexicon_max_len=3)
    with pytest.raises(ConfigError, match="a file path or a list of them"):
        LexicalAnalysis(model, vocab_file=str(tmp_path / "vocab.txt"), lexicon_file=[3], lexicon_max_len=3)
    copy = BiGRUCRF.from_state_dict(model.state_dict(), lexicon_features=5)
    copy.eval()
    numpy.testing.assert_array_equal(copy(batch["tokens"], batch["tokens_lengths"],
                                          lexicon=task.lexicon(batch["tokens"].numpy())).numpy(), expected.numpy())
