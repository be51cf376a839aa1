"""configs/nlp/lac_pku.yaml and the BiGRU-CRF options it uses (hashed character n-grams, dropout)."""
import os

import numpy
import pytest

import framework
from framework.config import load_config
from framework.engine import runner
from nlp.models.lac import BiGRUCRF
from zoo.catalog import ROOT

CONFIG = os.path.join(ROOT, "configs", "nlp", "lac_pku.yaml")


@pytest.fixture(scope="module")
def cfg():
    from zoo.commands import _register_everything
    _register_everything()
    return load_config(CONFIG)


def test_config_builds_the_official_sizes_with_lac_learning_rates(cfg, monkeypatch):
    monkeypatch.chdir(ROOT)                      # the config names the shipped vocabulary relative to the root
    task = runner.build_task(cfg)
    model = task.model
    assert isinstance(model, BiGRUCRF) and model.num_tags == 85
    assert model.embedding.weight.shape == (cfg["model"]["vocab_size"], 128)
    assert model.gru.hidden_size == 128 and model.gru.num_layers == 2
    assert len(task.preprocessor.vocab) == cfg["model"]["vocab_size"]
    optimizer = runner.build_optimizer(cfg, model, None)
    rates = {id(p): group["learning_rate"] for group in optimizer.param_groups for p in group["params"]}
    assert rates[id(model.embedding.weight)] == 2.0 and rates[id(model.crf.transition)] == 1.0
    assert rates[id(model.emission.weight)] == 1.0
    if model.ngram_buckets:
        assert rates[id(model.ngram_embedding.weight)] == 2.0
    assert cfg["train"]["metric"] == "pos_f1"


def test_shipped_vocabulary_is_the_train_splits(cfg):
    from nlp.data.peoples_daily import char_vocab
    from nlp.data.vocab import Vocab
    shipped = Vocab.load(os.path.join(ROOT, cfg["task"]["vocab_file"]))
    assert shipped == char_vocab(cfg["data"]["train"]["min_freq"])
    assert len(shipped) == cfg["model"]["vocab_size"]


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
    names = [name for name, _ in BiGRUCRF(20, 5).named_parameters()]
    assert not any(name.startswith("ngram") for name in names) and len(names) == 20
    with pytest.raises(ValueError, match="ngram"):
        BiGRUCRF(20, 5, ngram_buckets=10, ngram_orders=[1])


def test_train_step_benchmark_reports_both_frameworks():
    from nlp.lac.benchmarks import bench_train_step
    result = bench_train_step(batch=2, length=4, repeat=1)
    assert result["batch"] == 2 and result["oar"]["tokens_per_s"] > 0 and result["oar"]["tokens_per_cpu_s"] > 0
    try:
        import torch  # noqa: F401
    except ImportError:
        assert "torch" not in result
    else:
        assert result["torch"]["tokens_per_s"] > 0 and result["torch"]["threads"] >= 1
