"""Own-data runs of the text tasks are self-contained: the run directory holds config.yaml and the vocabulary,
tag set or tokeniser model the task built, and eval/infer use them without the training overrides."""
import json
import os

import numpy
import pytest
import yaml

from framework.config import load_config
from framework.engine import CheckpointError, runner
from framework.registry import MODELS, TASKS
import nlp.lac.model  # noqa: F401  (registers the models)
import nlp.senta.model  # noqa: F401
import nlp.simnet.model  # noqa: F401
import nlp.lac.data  # noqa: F401  (registers the datasets)
import nlp.senta.data  # noqa: F401
import nlp.lac.task  # noqa: F401  (registers the tasks)
import nlp.simnet.task  # noqa: F401
import nlp.senta.task  # noqa: F401
from nlp.data.vocab import TagSet, Vocab
from tests.nlp.toy_reviews import write_toy_reviews

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SENTIMENT = os.path.join(ROOT, "configs", "examples", "sentiment_own_data.yaml")
TAGGER = os.path.join(ROOT, "configs", "examples", "lac_own_data.yaml")
TEXTS = ["书好", "手机差", "质量好快", "慢慢的差评", "物流很快，包装很用心"]


def _reviews(path, size, seed=0):
    """``label<TAB>text`` reviews with a header line (see ``write_toy_reviews``)."""
    return write_toy_reviews(path, size, numpy.random.default_rng(seed), header=True)


@pytest.fixture
def in_repo(tmp_path, monkeypatch):
    monkeypatch.chdir(ROOT)                          # the example configs name shipped files relative to the root
    monkeypatch.setenv("OAR_HOME", str(tmp_path / "home"))
    return tmp_path


def test_sentiment_infer_without_the_training_overrides_uses_the_runs_vocabulary(in_repo, capsys):
    own = _reviews(in_repo / "my.tsv", 200)
    run = str(in_repo / "run")
    trainer, summary = runner.train(load_config(SENTIMENT, [f"data.train.path={own}", "train.epochs=4"]),
                                    output_dir=run, progress=False)
    assert summary["best"] >= 0.9
    best = os.path.join(run, "best.npz")
    runner.load_weights(trainer.task.model, best)
    expected = trainer.task.predict(TEXTS)                  # what the trained model gives
    assert [r["label"] for r in expected[:4]] == ["positive", "negative", "positive", "negative"]

    written = yaml.safe_load(open(os.path.join(run, "config.yaml"), encoding="utf-8"))
    assert written["task"]["vocab"] == "vocab.txt" and written["task"]["corpus"] == own
    assert written["data"]["eval"]["path"] == own          # ${data.train.path} resolved
    vocab = Vocab.load(os.path.join(run, "vocab.txt"))
    assert vocab.tokens == trainer.task.vocab.tokens and len(vocab) == 11     # pad, unk and 9 characters of my.tsv

    plain = load_config(SENTIMENT)                          # `oar infer -c …` without the -o of the training run
    shipped = runner.build_task(plain)                      # what inference used to do: rebuild from the example file
    assert shipped.vocab.tokens != vocab.tokens
    with pytest.raises(CheckpointError) as info:            # … and now refuses, naming both sides
        runner.infer(plain, best, TEXTS, progress=False)
    assert os.path.join(run, "vocab.txt") in str(info.value) and "task.vocab" in str(info.value)

    capsys.readouterr()
    cfg = runner.run_config(plain, run)
    note = capsys.readouterr().err
    assert "task.corpus" in note and own in note and note.count("\n") == 1
    predictions = runner.infer(cfg, best, TEXTS, progress=False)
    assert [p["label"] for p in predictions] == [e["label"] for e in expected]
    assert [p["score"] for p in predictions] == pytest.approx([e["score"] for e in expected], rel=1e-6)
    metrics = runner.evaluate_config(cfg, best, split="eval", progress=False)   # the given config's data
    assert 0.0 <= metrics["acc"] <= 1.0

    capsys.readouterr()
    runner.run_config(load_config(SENTIMENT, [f"data.train.path={own}"]), run)   # same task and model: no note
    assert capsys.readouterr().err == ""


def test_tagger_run_keeps_its_tag_set_and_vocabulary(in_repo):
    words = [("格力", "BRAND"), ("空调", "PRODUCT"), ("很", "O"), ("好", "O"), ("美的", "BRAND"), ("冰箱", "PRODUCT"),
             ("白色", "COLOR"), ("的", "O")]
    rng = numpy.random.default_rng(1)
    lines = [" ".join("/".join(words[i]) for i in rng.integers(0, len(words), size=6)) for _ in range(60)]
    tagged = in_repo / "mine.txt"
    tagged.write_text("\n".join(lines) + "\n", encoding="utf-8")
    run = str(in_repo / "run")
    train_cfg = load_config(TAGGER, [f"data.train.path={tagged}", "model.num_tags=9", "train.epochs=2"])
    trainer, _ = runner.train(train_cfg, output_dir=run, progress=False)
    written = yaml.safe_load(open(os.path.join(run, "config.yaml"), encoding="utf-8"))
    assert written["task"]["vocab_file"] == "vocab.txt" and written["task"]["tag_file"] == "tags.txt"
    assert written["task"]["tagged_file"] is None and written["model"]["num_tags"] == 9
    assert TagSet.load(os.path.join(run, "tags.txt")).names == trainer.task.tag_names
    assert sorted({n[:-2] for n in trainer.task.tag_names if n != "O"}) == ["BRAND", "COLOR", "O", "PRODUCT"]
    with open(os.path.join(ROOT, "zoo", "weights", "lac_pku.vocab.txt"), "rb") as f:
        assert open(os.path.join(run, "vocab.txt"), "rb").read() == f.read()
    manifest = json.load(open(os.path.join(run, "assets.json"), encoding="utf-8"))
    assert manifest["task.tagged_file"] == {"value": None, "sha256": None,
                                            "given": os.path.relpath(str(tagged), run)}   # relative to the run

    best = os.path.join(run, "best.npz")
    runner.load_weights(trainer.task.model, best)
    texts = ["格力空调很好", "美的 冰箱 白色的", "   "]
    expected = trainer.task.predict(texts)
    cfg = runner.run_config(load_config(TAGGER), run)       # the example's own tagged file has 11 tags, not 9
    assert cfg["model"]["num_tags"] == 9 and cfg["task"]["tag_file"] == os.path.join(run, "tags.txt")
    assert runner.infer(cfg, best, texts, progress=False) == expected
    assert expected[1]["words"] and all(" " not in w for w in expected[1]["words"]) and expected[2]["words"] == []


def test_matching_and_sentencepiece_tasks_save_their_files(in_repo):
    pytest.importorskip("sentencepiece")
    own = _reviews(in_repo / "my.tsv", 300, seed=2)
    model = MODELS.build({"type": "SentaBOW", "vocab_size": 64, "emb_dim": 8, "hidden": 8, "hidden2": 4})
    options = {"type": "SentimentClassification", "corpus": own, "min_freq": 1,
               "tokenizer": {"type": "sentencepiece", "vocab_size": 30}}
    task = TASKS.build(options, model=model)
    folder = in_repo / "assets"
    folder.mkdir()
    overrides = task.save_assets(str(folder))
    assert overrides == {"task.vocab": str(folder / "vocab.txt"), "task.labels": str(folder / "labels.txt"),
                         "task.tokenizer.model": str(folder / "tokenizer.model")}
    os.remove(own)                                           # the copies are enough
    again = TASKS.build({**options, "vocab": overrides["task.vocab"], "labels": overrides["task.labels"],
                         "tokenizer": {**options["tokenizer"], "model": overrides["task.tokenizer.model"]}},
                        model=model)
    assert again.vocab.tokens == task.vocab.tokens
    assert again.tokenizer.tokenize("书好手机差") == task.tokenizer.tokenize("书好手机差")

    pairs = in_repo / "pairs.tsv"
    pairs.write_text("我们很好\t我们好\t1\n今天天气好\t明天下雨\t0\n", encoding="utf-8")
    simnet = MODELS.build({"type": "SimNetBOW", "vocab_size": 32, "emb_dim": 8, "hidden": 8, "head": "pointwise"})
    matcher = TASKS.build({"type": "TextMatching", "corpus": str(pairs), "min_freq": 1}, model=simnet)
    overrides = matcher.save_assets(str(folder))
    assert overrides == {"task.vocab": str(folder / "vocab.txt")}
    assert Vocab.load(overrides["task.vocab"]).tokens == matcher.vocab.tokens
