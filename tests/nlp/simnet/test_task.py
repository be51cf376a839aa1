"""The matching task and metrics: batches, both losses against hand computation, the threshold chosen on
dev while training, metrics on hand-made cases, predict's output and bad input, training on a user's pairs."""
import glob
import os

import numpy
import pytest

import framework
from framework.config import load_config, signature_keys
from framework.engine import export_weights, runner
from framework.engine.task import to_tensors
from framework.engine.trainer import evaluate
from framework.errors import InputError
from framework.io import DataLoader
from framework.registry import DATASETS, MODELS, TASKS
from nlp.data.vocab import Vocab
from nlp.simnet.data import MatchingPairs
from nlp.simnet.metrics import (MatchAccuracy, MatchAUC, NegTypeAccuracy, ThresholdSearch, auc, average_ranks,
                                best_threshold, pair_metrics, ranking_accuracy)
from nlp.simnet.model import FLOAT32_BUFFERS, SimNetCNN
from nlp.simnet.task import TextMatching

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
CHARS = "我们你他好坏天气今明很不是的北京上海去了"


@pytest.fixture
def vocab_file(tmp_path):
    path = str(tmp_path / "vocab.txt")
    Vocab(list(CHARS)).save(path)
    return path


def make_task(vocab_file, head="pointwise", **options):
    framework.seed(0)
    model = SimNetCNN(len(CHARS) + 2, emb_dim=8, filters=6, hidden=5, head=head)
    return TextMatching(model, vocab=vocab_file, max_len=6, **options)


# ---- batches and losses -----------------------------------------------------------------------------
def test_collate_pads_pairs_and_triples(vocab_file):
    task = make_task(vocab_file)
    batch = task.collate_fn([{"text_a": "我们好", "text_b": "", "label": 1, "neg_type": "pos", "query_id": 0},
                             {"text_a": "今天天气很好很好很好", "text_b": "他", "label": 0, "neg_type": "swap",
                              "query_id": 0}])
    assert batch["a_lengths"].tolist() == [3, 6] and batch["b_lengths"].tolist() == [1, 1]   # cut to max_len
    assert batch["b_ids"][:, :1].tolist() == [[Vocab.UNK_ID], [task.vocab.id_of("他")]]    # empty: one unk
    assert batch["a_ids"].shape == batch["b_ids"].shape == (2, 6)              # both sides padded to one width
    assert batch["label"].tolist() == [1, 0] and batch["neg_type"] == ["pos", "swap"]
    triples = task.collate_fn([{"query": "我", "pos": "我们", "neg": "他们的"}])
    assert sorted(triples) == ["n_ids", "n_lengths", "p_ids", "p_lengths", "q_ids", "q_lengths"]
    assert triples["n_lengths"].tolist() == [3]


def test_pointwise_loss_is_softmax_cross_entropy(vocab_file):
    task = make_task(vocab_file)
    batch = to_tensors(task.collate_fn([{"text_a": "我们好", "text_b": "你们好", "label": 1},
                                        {"text_a": "北京", "text_b": "上海天气", "label": 0}]))
    logits = task.model(batch["a_ids"], batch["a_lengths"], batch["b_ids"], batch["b_lengths"]).numpy()
    log_probs = logits - numpy.log(numpy.exp(logits).sum(axis=1, keepdims=True))
    expected = -(log_probs[0, 1] + log_probs[1, 0]) / 2
    numpy.testing.assert_allclose(task.loss(batch).item(), expected, rtol=1e-5)
    with pytest.raises(ValueError, match="pointwise model trains on labelled pairs"):
        task.loss(to_tensors(task.collate_fn([{"query": "我", "pos": "我们", "neg": "他"}])))


def test_pairwise_loss_is_the_hinge_on_cosines(vocab_file):
    task = make_task(vocab_file, head="pairwise", margin=0.3)
    triples = [{"query": "我们好", "pos": "我们很好", "neg": "他们不好"}, {"query": "北京", "pos": "去北京", "neg": "上海"}]
    batch = to_tensors(task.collate_fn(triples))
    model = task.model
    weight, bias = model.proj.weight.numpy(), model.proj.bias.numpy()

    def vector(prefix):
        u = numpy.tanh(model.encode(batch[f"{prefix}_ids"], batch[f"{prefix}_lengths"]).numpy() @ weight + bias)
        return u / numpy.linalg.norm(u, axis=1, keepdims=True)

    q, p, n = vector("q"), vector("p"), vector("n")
    expected = numpy.maximum(0.0, 0.3 - (q * p).sum(1) + (q * n).sum(1)).mean()
    loss = task.loss(batch)
    numpy.testing.assert_allclose(loss.item(), expected, rtol=1e-5)
    loss.backward()
    assert numpy.abs(model.convs[0].weight.grad.numpy()).sum() > 0
    with pytest.raises(ValueError, match="pairwise model trains on triples"):
        task.loss(to_tensors(task.collate_fn([{"text_a": "我", "text_b": "我们", "label": 1}])))


# ---- threshold and metrics --------------------------------------------------------------------------
def test_best_threshold_maximises_accuracy():
    assert best_threshold([0.9, 0.8, 0.3, 0.1], [1, 1, 0, 0]) == pytest.approx((0.55, 1.0))
    assert best_threshold([0.9, 0.6, 0.7, 0.1], [1, 0, 1, 0]) == pytest.approx((0.65, 1.0))
    threshold, accuracy = best_threshold([0.5, 0.5, 0.2], [1, 0, 0])     # ties cannot be split
    assert accuracy == pytest.approx(2 / 3) and threshold > 0.5          # highest of the equally good ones
    assert best_threshold([0.2, 0.4], [1, 1]) == (0.2, 1.0)              # everything matches


def test_auc_and_ranking_accuracy_on_hand_made_cases():
    numpy.testing.assert_array_equal(average_ranks([3.0, 1.0, 3.0, 2.0]), [3.5, 1.0, 3.5, 2.0])
    assert auc([0.9, 0.4, 0.4, 0.1], [1, 1, 0, 0]) == pytest.approx(0.875)   # one tie: 3.5 of 4
    assert numpy.isnan(auc([0.1, 0.2], [1, 1]))
    # query 0: positive 0.8 vs negatives 0.9, 0.1 -> 1 of 2; query 1: 0.5 vs 0.5 -> 1/2; query 2: no negative
    scores, labels, queries = [0.8, 0.9, 0.1, 0.5, 0.5, 0.3], [1, 0, 0, 1, 0, 1], [0, 0, 0, 1, 1, 2]
    assert ranking_accuracy(scores, labels, queries) == pytest.approx(1.5 / 3)


def _evaluate(metrics, scores, labels, types, threshold=0.5):
    for metric in metrics:
        metric.reset()
    outputs = {"score": numpy.asarray(scores), "threshold": threshold}
    batch = {"label": numpy.asarray(labels), "neg_type": types, "query_id": numpy.zeros(len(labels), dtype=int)}
    result = {}
    for metric in metrics:
        metric.update(outputs, batch)
    for metric in metrics:
        result.update(metric.compute())
    return result


def test_accuracy_per_negative_type_and_the_threshold_search():
    scores, labels = [0.9, 0.6, 0.4, 0.7, 0.2, 0.55], [1, 1, 1, 0, 0, 0]
    types = ["pos", "pos", "pos", "swap", "overlap", "swap"]
    plain = _evaluate([MatchAccuracy(), NegTypeAccuracy(), MatchAUC()], scores, labels, types)
    assert plain["acc"] == pytest.approx(3 / 6)
    assert plain["acc_pos"] == pytest.approx(2 / 3) and plain["acc_swap"] == 0.0 and plain["acc_overlap"] == 1.0
    assert plain["auc"] == pytest.approx(6 / 9)
    chosen = []
    targets = [MatchAccuracy(), NegTypeAccuracy()]
    searched = _evaluate([ThresholdSearch(targets=targets, on_choose=chosen.append)] + targets, scores, labels, types)
    assert searched["threshold"] == pytest.approx(0.8) and chosen == [searched["threshold"]]
    assert searched["acc"] == searched["best_acc"] == pytest.approx(4 / 6)
    assert searched["acc_pos"] == pytest.approx(1 / 3) and searched["acc_swap"] == 1.0
    untyped = _evaluate([NegTypeAccuracy()], scores, labels, [""] * 6)
    assert untyped == {"acc_neg": pytest.approx(1 / 3), "acc_pos": pytest.approx(2 / 3)}
    assert pair_metrics(scores, [MatchPairLike(y, t) for y, t in zip(labels, types)], 0.5)["acc_swap"] == 0.0


class MatchPairLike:
    def __init__(self, label, neg_type):
        self.label, self.neg_type, self.text_a, self.text_b = label, neg_type, "q", "x"


def test_threshold_is_chosen_on_evaluation_only_while_training(vocab_file, tmp_path):
    path = tmp_path / "dev.tsv"
    path.write_text("我们好\t我们很好\t1\tpos\n我们好\t他们不好\t0\tswap\n北京\t去北京\t1\tpos\n北京\t上海\t0\toverlap\n",
                    encoding="utf-8")
    task = make_task(vocab_file)
    loader = DataLoader(MatchingPairs(path=str(path)), batch_size=3, collate_fn=task.collate_fn)
    before = evaluate(task, loader)
    assert "threshold" not in before and task.threshold == 0.5
    task.loss(to_tensors(task.collate_fn([MatchingPairs(path=str(path))[0]])))   # the task is now training
    during = evaluate(task, loader)
    assert task.threshold == pytest.approx(during["threshold"]) and during["acc"] == during["best_acc"]
    assert 0.0 <= during["rank_acc"] <= 1.0 and set(during) >= {"acc_pos", "acc_swap", "acc_overlap", "auc"}


# ---- predict ----------------------------------------------------------------------------------------
def test_predict_returns_a_score_and_label_for_every_pair_even_odd_ones(vocab_file):
    task = make_task(vocab_file)
    task.set_threshold(0.0)
    results = task.predict([("我们好", "我们很好"), ("", ""), ("今天", "今天"), ("好" * 100000, "坏"), "北京\t上海"])
    assert len(results) == 5
    for result in results:
        assert sorted(result) == ["label", "score"] and isinstance(result["score"], float)
        assert result["label"] == 1 and 0.0 <= result["score"] <= 1.0
    task.set_threshold(1.1)
    assert [r["label"] for r in task.predict([("我们好", "我们很好")])] == [0]
    expected = r"must be a pair \[text_a, text_b\] or 'text_a<TAB>text_b'"
    wrong = [([("a", "b"), ("only one",)], 1, r"got a tuple of 1 item\(s\) \(str\)"),
             (["only one text"], 0, r"got a str with no tab 'only one text'"),
             (["a\tb\tc"], 0, r"got a str with 3 tab-separated columns"),
             ([("a", "b"), ("a", 3)], 1, r"got a tuple of 2 item\(s\) \(str, int\)"),
             ([("a", "b"), 7], 1, r"got a int")]
    for inputs, index, got in wrong:
        with pytest.raises(InputError, match=rf"^input {index}: a matching input {expected} .*{got}") as info:
            task.predict(inputs)
        assert info.value.index == index
        assert isinstance(info.value, TypeError)          # callers that catch TypeError keep working
    assert task.predict([]) == []                       # an empty iterable: no results


# ---- configs and training ---------------------------------------------------------------------------
def _user_config(tmp_path, head):
    rows = [("我们很好", "我们好", 1), ("我们很好", "他们不好", 0), ("今天天气好", "今天天气很好", 1),
            ("今天天气好", "明天天气坏", 0), ("北京很好", "北京好", 1), ("北京很好", "上海很好", 0),
            ("你去北京", "你去了北京", 1), ("你去北京", "他去上海", 0)]
    data = tmp_path / "pairs.tsv"
    data.write_text("".join(f"{a}\t{b}\t{y}\n" for a, b, y in rows * 4), encoding="utf-8")
    kind = "MatchingTriples" if head == "pairwise" else "MatchingPairs"
    train = f"{{type: {kind}, path: {data}}}"
    config = tmp_path / f"{head}.yaml"
    config.write_text(f"""
task: {{type: TextMatching, corpus: {data}, min_freq: 1}}
model: {{type: SimNetCNN, vocab_size: 40, emb_dim: 16, filters: 16, hidden: 8, head: {head}}}
data:
  train: {train}
  eval: {{type: MatchingPairs, path: {data}}}
  test: {{type: MatchingPairs, path: {data}}}
optimizer: {{type: Adam, learning_rate: 0.02}}
train: {{epochs: 15, batch_size: 8, metric: auc}}
""", encoding="utf-8")
    return str(config)


@pytest.mark.parametrize("head", ["pointwise", "pairwise"])
def test_trains_and_evaluates_on_a_users_pairs(tmp_path, monkeypatch, head):
    monkeypatch.setenv("OAR_HOME", str(tmp_path / "home"))
    config = _user_config(tmp_path, head)
    trainer, summary = runner.train(load_config(config), output_dir=str(tmp_path / "out"), progress=False)
    assert summary["best"] >= 0.9
    best = str(tmp_path / "out" / "best.npz")
    stored = framework.load(best)["model"]["threshold"]
    chosen = [r["threshold"] for r in summary["history"] if r["auc"] == summary["best"]][0]
    assert stored.tolist() == [numpy.float32(chosen)]
    weights = str(tmp_path / "shipped.npz")
    export_weights(best, weights, keep_float32=FLOAT32_BUFFERS)
    state = framework.load(weights)["model"]
    assert state["threshold"].dtype == numpy.float32 and state["embedding.weight"].dtype == numpy.float16
    metrics = runner.evaluate_config(load_config(config), weights, split="test")
    assert metrics["acc"] >= 0.9 and "threshold" not in metrics
    results = runner.infer(load_config(config), weights, ["北京很好\t北京好", "北京很好\t上海很好"])
    assert [r["label"] for r in results] == [1, 0]


SHIPPED = sorted(glob.glob(os.path.join(ROOT, "configs", "nlp", "simnet_*.yaml")))


def test_all_eight_configs_are_shipped():
    names = {os.path.basename(p)[:-5] for p in SHIPPED}
    cards = {f"simnet_{e}_{h}" for e in ("bow", "cnn", "gru", "lstm") for h in ("pointwise", "pairwise")}
    assert cards <= names
    assert {name.removesuffix("_lac") for name in names - cards} <= cards     # the others: cards on LAC's trunk


@pytest.mark.parametrize("path", SHIPPED, ids=os.path.basename)
def test_shipped_configs_build(path, vocab_file):
    cfg = load_config(path, [f"task.vocab={vocab_file}"])
    train_cfg = runner.check_sections(cfg)
    assert train_cfg["metric"] == "auc"
    task = runner.build_task(cfg)
    assert isinstance(task, TextMatching) and task.model.head in os.path.basename(path)
    for split, section in cfg["data"].items():
        cls = DATASETS.get(section["type"])
        assert set(section) - {"type"} <= set(signature_keys(cls)), (split, section)
    expected = "MatchingTriples" if task.model.head == "pairwise" else "MatchingPairs"
    assert cfg["data"]["train"]["type"] == expected and cfg["data"]["eval"]["type"] == "MatchingPairs"
    batch = to_tensors(task.collate_fn([{"text_a": "我们好", "text_b": "你们好"}]))
    out = task.model(batch["a_ids"], batch["a_lengths"], batch["b_ids"], batch["b_lengths"])
    assert out.shape == ((1, 2) if task.model.head == "pointwise" else (1,))
    assert MODELS.get(cfg["model"]["type"]) and TASKS.get("TextMatching") is TextMatching
