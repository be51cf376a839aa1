"""The SimNet zoo cards: the eight shipped matching models load offline, score pairs against their stored
threshold, and score like their cards on a fixed sample of the test pairs; `oar run` takes pairs, `oar show`
prints the card (the installed command); the shipped files match their cards; a user's pair file trains and
evaluates through the shipped configs; and `oar reproduce simnet --dry_run` updates every card from one procedure
without touching the repository."""
import json
import os
import shutil
import subprocess
import sys

import numpy
import pytest
import yaml

import framework
import zoo
from framework.config import load_config
from framework.errors import UserError
from framework.fetch import FetchError, sha256_of
from zoo.reproduce.simnet import SIMNET_MODELS
from zoo.catalog import ROOT, card
from zoo.reproduce import PROCEDURES
from tests.offline import fetched_nothing

OAR = shutil.which("oar", path=os.path.dirname(sys.executable)) or shutil.which("oar")
# Right answers on the sample (the pairs of every 20th anchor sentence of the test split, 312 pairs, half of
# them matching, so a constant answer scores 156): the shipped weights score 293 / 260 (bow pointwise /
# pairwise), 302 / 269 (cnn), 306 / 281 (gru), 305 / 289 (lstm); on all 6,228 test pairs they score the cards'
# accuracies. The pass marks are 3 answers (one point) below.
LEAST_RIGHT = {"simnet_bow_pointwise": 290, "simnet_bow_pairwise": 257, "simnet_cnn_pointwise": 299,
               "simnet_cnn_pairwise": 266, "simnet_gru_pointwise": 303, "simnet_gru_pairwise": 278,
               "simnet_lstm_pointwise": 302, "simnet_lstm_pairwise": 286}


def oar(*args, env=None):
    """The installed ``oar`` as a process: ``(exit status, stdout, stderr)``."""
    assert OAR, "the oar console script is not installed (pip install -e .)"
    result = subprocess.run([OAR, *args], capture_output=True, text=True, timeout=300, cwd=ROOT,
                            env={**os.environ, **(env or {})})
    return result.returncode, result.stdout, result.stderr


def in_process(*args):
    """``oar args…`` in this process (so monkeypatched data apply): ``reproduce`` returns the updated cards,
    other commands their exit status."""
    from zoo.api import register_everything
    from zoo.cli import build_parser, main
    if args[0] != "reproduce":
        return main(list(args))
    from zoo.reproduce import reproduce
    from zoo.reproduce.options import from_args
    options = from_args(build_parser().parse_args(list(args)))
    register_everything()
    return reproduce(options.target, options)


@pytest.fixture(scope="module")
def matching_sample():
    """The pairs of every 20th anchor of the builder's test split (skipped when its sources cannot be fetched)."""
    from nlp.simnet.builder import build_split
    try:
        pairs, _, _ = build_split("test", seed=0)
    except FetchError as err:
        pytest.skip(f"the matching pairs' sources cannot be fetched here and are not cached "
                    f"({str(err).split('. ')[0]})")
    return [pair for i, pair in enumerate(pairs) if (i // 2) % 20 == 0]


@pytest.mark.parametrize("name", SIMNET_MODELS)
def test_shipped_weights_score_like_the_card_on_a_test_sample(name, matching_sample):
    results = zoo.load(name).predict([(p.text_a, p.text_b) for p in matching_sample])
    right = sum(r["label"] == p.label for r, p in zip(results, matching_sample))
    assert len(matching_sample) == 312 and sum(p.label for p in matching_sample) == 156
    assert right >= LEAST_RIGHT[name], right
    assert abs(right / 312 - card(name).metrics["acc"]) < 0.04       # the sample agrees with the card

EXAMPLE = os.path.join(ROOT, "examples", "matching_pairs.tsv")
PAIRS = [("今天天气很好", "今天天气不错"), ("中国向美国出口大豆", "美国向中国出口大豆"), ("", "今天天气很好"),
         ("火车晚点了两个小时", "火车晚点了两个小时"), ("很长的句子" * 200, "短句")]


@pytest.mark.parametrize("name", SIMNET_MODELS)
def test_each_model_loads_offline_and_labels_by_its_threshold(name, offline):
    task = zoo.load(name)
    results = task.predict(PAIRS)
    assert [set(r) for r in results] == [{"score", "label"}] * len(PAIRS)
    threshold = task.threshold
    assert threshold == float(framework.load(os.path.join(ROOT, card(name).weights.path))["model"]
                              ["threshold"][0])
    assert all(r["label"] == int(r["score"] >= threshold) for r in results)
    low, high = (0.0, 1.0) if name.endswith("pointwise") else (-1.0, 1.0)     # P(match) or a cosine
    assert all(low - 1e-6 <= r["score"] <= high + 1e-6 for r in results)
    assert results[3]["label"] == 1                       # identical sides match
    assert fetched_nothing(offline)                           # nothing was fetched, built or cached


def test_predict_takes_tuples_and_tab_separated_lines(offline):
    task = zoo.load("simnet_bow_pointwise")
    results = task.predict([("今天天气很好", "今天天气不错"), "今天天气很好\t今天天气不错", "今天天气很好\t今天天气不错\t1"])
    assert len({r["label"] for r in results}) == 1
    assert [r["score"] for r in results] == pytest.approx([results[0]["score"]] * 3, abs=1e-6)
    with pytest.raises(UserError, match="input 0: a matching input must be a pair"):
        task.predict(["今天天气很好"])


def test_oar_run_scores_tab_separated_pairs(offline):
    texts = ["今天天气很好\t今天天气不错", "中国向美国出口\t美国向中国出口"]
    code, out, err = oar("run", "simnet_cnn_pointwise", "--input_text", *texts, "--json",
                         env={"OAR_HOME": str(offline)})
    assert code == 0, err
    lines = [json.loads(line) for line in out.splitlines()]
    assert [line["input"] for line in lines] == texts and all(set(line) == {"input", "score", "label"}
                                                              for line in lines)
    code, out, err = oar("run", "simnet_cnn_pointwise", "--input_file", EXAMPLE, env={"OAR_HOME": str(offline)})
    assert code == 0, err                                              # a labelled pair file: labels ignored
    rows = [line.split("\t") for line in out.splitlines()]
    assert len(rows) == 20 and all(label in ("0", "1") and 0.0 <= float(score) <= 1.0 for label, score in rows)


def test_oar_show_prints_the_card():
    code, out, _ = oar("show", "simnet_cnn_pointwise")
    shown = yaml.safe_load(out)
    assert code == 0 and shown == card("simnet_cnn_pointwise").to_mapping()
    assert shown["metrics"]["split"] == "test" and 0.5 < shown["metrics"]["acc"] <= 1.0
    assert shown["reproduce"]["procedure"] == "simnet"
    assert PROCEDURES["simnet"] == (".simnet", "reproduce")
    assert shown["source"] == "trained by `oar reproduce simnet`"


@pytest.mark.parametrize("name", SIMNET_MODELS)
def test_shipped_files_match_their_card(name):
    entry = card(name)
    weights = entry.weights
    assert entry.config == f"configs/nlp/{name}.yaml" and entry.task == "matching"
    path = os.path.join(ROOT, weights.path)
    assert sha256_of(path) == weights.sha256 and os.path.getsize(path) <= 8 * 2 ** 20
    assert sha256_of(os.path.join(ROOT, weights.companions["vocab"])) == weights.companion_sha256["vocab"]
    assert entry.overrides == (f"task.vocab={weights.companions['vocab']}",)
    state = framework.load(path)["model"]
    assert state.pop("threshold").dtype == numpy.float32
    assert {v.dtype for v in state.values() if v.dtype.kind == "f"} == {numpy.dtype(numpy.float16)}
    with open(os.path.join(ROOT, weights.companions["vocab"]), encoding="utf-8") as f:
        vocab_size = sum(1 for _ in f)
    assert vocab_size <= load_config(os.path.join(ROOT, entry.config))["model"]["vocab_size"]
    metrics = entry.metrics
    assert metrics["split"] == "test" and all(0.0 <= metrics[k] <= 1.0 for k in ("acc", "auc", "acc_exchange"))


def _own_pairs(path):
    """The `-o` overrides that point a shipped SimNet config at the pair file ``path`` (as the task's docs say)."""
    return [f"task.corpus={path}", "task.min_freq=1", f"data.train.path={path}", f"data.eval.path={path}",
            f"data.test.path={path}"]


@pytest.mark.parametrize("name", ["simnet_bow_pointwise", "simnet_bow_pairwise"])
def test_a_users_pair_file_trains_and_evaluates_with_the_shipped_config(name, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("OAR_HOME", str(tmp_path / "home"))
    config, out = os.path.join(ROOT, "configs", "nlp", f"{name}.yaml"), str(tmp_path / "run")
    overrides = _own_pairs(EXAMPLE)
    assert in_process("train", "-c", config, "--output_dir", out, "--quiet", "-o", *overrides, "train.epochs=2",
                      "train.batch_size=4", "train.log_every=100") == 0
    capsys.readouterr()
    assert in_process("eval", "-c", config, "--output_dir", out, "--split", "test", "-o", *overrides) == 0
    metrics = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert {"acc", "auc", "rank_acc"} <= set(metrics) and 0.0 <= metrics["acc"] <= 1.0
    stored = framework.load(os.path.join(out, "best.npz"))["model"]["threshold"]
    with open(os.path.join(out, "metrics.jsonl"), encoding="utf-8") as f:
        best = max((json.loads(line) for line in f), key=lambda record: record["auc"])
    assert stored.tolist() == [numpy.float32(best["threshold"])]        # chosen on the eval pairs, kept


def test_a_malformed_pair_file_names_its_line(tmp_path):
    bad = tmp_path / "bad.tsv"
    bad.write_text("今天天气很好\t今天天气不错\t1\n今天天气很好\t明天\tyes\n", encoding="utf-8")
    code, out, err = oar("train", "-c", os.path.join(ROOT, "configs", "nlp", "simnet_bow_pointwise.yaml"),
                         "--output_dir", str(tmp_path / "run"), "-o", *_own_pairs(str(bad)),
                         env={"OAR_HOME": str(tmp_path / "home")})
    assert code == 1 and out == "" and "Traceback" not in err
    assert err.strip() == f"oar: error: {bad}:2: the label (third field) must be 0 or 1, got 'yes'"


def test_reproduce_simnet_dry_run_updates_every_card_once(tmp_path, monkeypatch):
    """All eight configs on the example pairs for two steps each (the peers' LAC words replaced by characters):
    every card is rewritten under the dry-run folder, the repository is left alone."""
    pytest.importorskip("sklearn")
    import zoo.reproduce.peers
    from nlp.data.tokenizers import CharTokenizer
    monkeypatch.setenv("OAR_HOME", str(tmp_path / "home"))
    monkeypatch.setattr(zoo.reproduce.peers, "LacWordTokenizer", CharTokenizer)
    protected = [os.path.join(ROOT, p) for p in ("zoo/catalog.yaml", "docs/RESULTS.md", card("simnet_bow_pointwise")
                                                  .weights.companions["vocab"])]
    protected += [os.path.join(ROOT, card(name).weights.path) for name in SIMNET_MODELS]
    before = {p: sha256_of(p) for p in protected}
    out = tmp_path / "out"
    updated = in_process("reproduce", "simnet", "--dry_run", "--quiet", "--output_root", str(out), "-o",
                         *_own_pairs(EXAMPLE), "train.max_steps=2", "train.eval_every=2", "train.batch_size=4")
    assert {p: sha256_of(p) for p in before} == before
    assert [entry.name for entry in updated] == list(SIMNET_MODELS)          # one procedure, each card once
    dry = out / "dry_run"
    catalog = {e["name"]: e for e in yaml.safe_load((dry / "zoo" / "catalog.yaml").read_text(encoding="utf-8"))}
    for entry in updated:
        assert catalog[entry.name] == entry.to_mapping() and entry.metrics["split"] == "test"
        assert sha256_of(dry / entry.weights.path) == entry.weights.sha256
        assert sha256_of(dry / entry.weights.companions["vocab"]) == entry.weights.companion_sha256["vocab"]
    assert catalog["senta_cnn"] == card("senta_cnn").to_mapping()                          # other cards are untouched
    results = (dry / "docs" / "RESULTS.md").read_text(encoding="utf-8")
    block = results[results.index("<!-- reproduce:simnet -->"):results.index("<!-- /reproduce:simnet -->")]
    assert "`oar reproduce simnet`" in block and "| word overlap (peer) |" in block and "TF-IDF LR" in block
    assert sum(line.startswith("| simnet_") for line in block.splitlines()) == 8
    assert "<!-- reproduce:simnet_bow_pointwise -->" not in results
