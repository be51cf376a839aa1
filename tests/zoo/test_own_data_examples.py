"""The "train on your own data" examples (docs/OWN_DATA.md): each shipped config trains end to end on its
example file through `oar train`, writes its metrics, and the trained task predicts on raw input; the same
configs take a user's file through `-o`, and a malformed user file is one error line naming file and line."""
import json
import os
import shutil
import subprocess
import sys

import numpy
import pytest

from framework.config import load_config
from framework.engine import runner
from nlp.lac.data import PeoplesDailyTagging
from nlp.senta.data import SentimentFile
from zoo.api import register_everything

register_everything()      # the tests build the trained tasks here, as the command does in its process

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
LAC, SENTIMENT, VIDEO = (f"configs/examples/{name}_own_data.yaml" for name in ("lac", "sentiment", "video"))
OAR = shutil.which("oar", path=os.path.dirname(sys.executable)) or shutil.which("oar")


@pytest.fixture(autouse=True)
def _repo_root(tmp_path, monkeypatch):
    """Run from the repository root (the configs name repository files) with a private cache."""
    monkeypatch.chdir(ROOT)
    monkeypatch.setenv("OAR_HOME", str(tmp_path / "oar_home"))


def _oar(argv):
    """The installed `oar` console script as a process (inherits the test's $OAR_HOME)."""
    return subprocess.run([OAR, *argv], capture_output=True, text=True, cwd=ROOT, timeout=600)


def _train(config, output_dir, *overrides):
    """`oar train` the config; returns the records of its metrics.jsonl."""
    options = ["-o", *overrides] if overrides else []
    result = _oar(["train", "-c", config, "--output_dir", str(output_dir), "--quiet", *options])
    assert result.returncode == 0, result.stderr
    with open(output_dir / "metrics.jsonl") as f:
        return [json.loads(line) for line in f]


def _trained_task(config, output_dir, *overrides):
    """The config's task with the best weights of the run in ``output_dir``."""
    task = runner.build_task(load_config(config, list(overrides)))
    runner.load_weights(task.model, str(output_dir / "best.npz"))
    return task


def _fail(argv):
    """Run `oar` expecting a user error (status 1); returns its one stderr line, less the ``oar: `` prefix."""
    result = _oar(argv)
    lines = result.stderr.strip().splitlines()
    assert result.returncode == 1 and len(lines) == 1 and lines[0].startswith("oar: error: "), result.stderr
    return lines[0][len("oar: "):]


def test_readers_take_the_tag_set_and_splits_from_the_users_file():
    dev = PeoplesDailyTagging("dev", vocab_file="zoo/weights/lac_pku.vocab.txt", path="examples/lac_tagged.txt")
    assert dev.tagset.names == ["BRAND-B", "BRAND-I", "COLOR-B", "COLOR-I", "O-B", "O-I", "PRICE-B", "PRICE-I",
                                "PRODUCT-B", "PRODUCT-I", "O"]
    assert dev.lines.tolist() == [1, 11, 21]
    labels = dev.tagset.decode(dev[0]["labels"])          # 这/O 款/O 华为/BRAND 手机/PRODUCT 有/O 黑色/COLOR
    assert labels[:8] == ["O-B", "O-B", "BRAND-B", "BRAND-I", "PRODUCT-B", "PRODUCT-I", "O-B", "COLOR-B"]
    sizes = {split: len(SentimentFile("examples/sentiment.tsv", split)) for split in ("train", "dev", "test")}
    assert sizes == {"train": 32, "dev": 4, "test": 4} and len(SentimentFile("examples/sentiment.tsv")) == 40
    assert sorted(SentimentFile("examples/sentiment.tsv", "dev")[i]["label"] for i in range(4)) == [0, 0, 1, 1]


def test_lac_example_learns_its_own_tag_set(tmp_path):
    records = _train(LAC, tmp_path)
    assert len(records) == 20 and all(0.0 <= r["pos_f1"] <= 1.0 for r in records)   # one evaluation per epoch
    text = "我买了一台白色的格力空调"
    [result] = _trained_task(LAC, tmp_path).predict([text])
    assert "".join(result["words"]) == text
    assert set(result["tags"]) <= {"BRAND", "COLOR", "O", "PRICE", "PRODUCT"}


def test_sentiment_example_predicts_a_label_and_score(tmp_path):
    records = _train(SENTIMENT, tmp_path)
    assert len(records) == 10 and all(0.0 <= r["acc"] <= 1.0 for r in records)
    results = _trained_task(SENTIMENT, tmp_path).predict(["包装很用心，送货也快", "用了两天就坏了"])
    assert [set(r) for r in results] == [{"label", "score"}] * 2
    assert all(r["label"] in ("negative", "positive") and 0.5 <= r["score"] <= 1.0 for r in results)


def test_video_example_finetunes_the_shipped_backbone(tmp_path):
    pytest.importorskip("av")
    pytest.importorskip("cv2")
    records = _train(VIDEO, tmp_path)
    assert len(records) == 6 and all(0.0 <= r["acc"] <= 1.0 for r in records)
    [result] = _trained_task(VIDEO, tmp_path).predict(["examples/videos/clips/grow_3.mp4"])
    names = [name for name, _ in result["topk"]]
    assert sorted(names) == ["grow", "move_left", "rotate_clockwise"]
    assert numpy.isclose(sum(prob for _, prob in result["topk"]), 1.0, atol=1e-5)


def test_configs_take_a_users_files(tmp_path):
    tagged = tmp_path / "mine.txt"
    tagged.write_text("".join(f"第{i}/NUM 天/UNIT\n" for i in range(12)), encoding="utf-8")
    records = _train(LAC, tmp_path / "lac", f"data.train.path={tagged}", "model.num_tags=5", "train.epochs=2")
    assert len(records) == 2
    task = _trained_task(LAC, tmp_path / "lac", f"data.train.path={tagged}", "model.num_tags=5")
    assert task.tag_names == ["NUM-B", "NUM-I", "UNIT-B", "UNIT-I", "O"]
    assert set(task.predict(["第3天"])[0]["tags"]) <= {"NUM", "UNIT"}
    reviews = tmp_path / "mine.tsv"
    reviews.write_text("".join(f"{i % 2}\t{'好用' if i % 2 else '难用'}{i}\n" for i in range(20)), encoding="utf-8")
    records = _train(SENTIMENT, tmp_path / "senta", f"data.train.path={reviews}", "train.epochs=1")
    assert len(records) == 1
    vocab = _trained_task(SENTIMENT, tmp_path / "senta", f"data.train.path={reviews}").vocab
    assert "好" in vocab.tokens and "物" not in vocab.tokens               # built from the user's file


def test_a_tag_count_that_does_not_fit_the_model_names_the_right_one(tmp_path):
    tagged = tmp_path / "mine.txt"
    tagged.write_text("".join(f"第{i}/NUM 天/UNIT\n" for i in range(12)), encoding="utf-8")
    line = _fail(["train", "-c", LAC, "--output_dir", str(tmp_path), "-o", f"data.train.path={tagged}"])
    assert line == (f"error: LexicalAnalysis: 5 tag names (the tag set of {tagged}) but the model has "
                    f"num_tags=11; set model.num_tags: 5")


@pytest.mark.parametrize("config, content, message", [
    (LAC, "甲/n 乙/n\n丙/n 丁\n", "{path}:2: token '丁' is not of the form word/TAG"),
    (LAC, "甲/n\n乙/n\n", "{path}: its 2 sentence(s) leave split 'train' empty"),
    (SENTIMENT, "1\t好\n0 差\n", "{path}:2: expected 'label<TAB>text', found no tab in '0 差'"),
    (SENTIMENT, "good\t好\ngood\t差\n", "{path}: a classifier needs two or more classes, the labels are ['good']"),
    (SENTIMENT, "a\t好\nb\t差\nc\t中\n", "SentimentClassification: 3 classes (a, b, c) for a model with 2; "
                                        "set model.num_classes: 3"),
])
def test_a_malformed_user_file_is_one_line_naming_file_and_line(tmp_path, config, content, message):
    path = tmp_path / "mine.txt"
    path.write_text(content, encoding="utf-8")
    fitting_model = ["model.num_tags=3"] if config == LAC else []          # the tag set of "n" alone
    line = _fail(["train", "-c", config, "--output_dir", str(tmp_path / "run"),
                  "-o", f"data.train.path={path}", *fitting_model])
    assert line.startswith("error: " + message.format(path=path))
