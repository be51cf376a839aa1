"""The pieces of `oar reproduce simnet`: metrics of scored pairs, artefact checks, the peers, the table."""
import numpy
import pytest

from nlp.data.matching import MatchPair
from nlp.matching_reproduce import SIMNET_MODELS, length_artefacts, pair_metrics, results_table, split_pairs, \
    tfidf_peer

PAIRS = [MatchPair("今天天气很好", "今日天气很好", 1, "pos"), MatchPair("今天天气很好", "明天天气很好", 0, "swap"),
         MatchPair("中国向美国出口", "中国向美国输出", 1, "pos"), MatchPair("中国向美国出口", "美国向中国出口", 0, "exchange")]


def test_pair_metrics_by_type():
    result = pair_metrics([0.9, 0.7, 0.8, 0.85], PAIRS, threshold=0.75)
    assert result["acc"] == 0.75 and result["acc_pos"] == 1.0 and result["acc_swap"] == 1.0
    assert result["acc_exchange"] == 0.0 and result["auc"] == 0.75 and result["rank_acc"] == 0.5
    assert result["threshold"] == 0.75


def test_length_artefacts_see_a_length_give_away():
    fair = length_artefacts(PAIRS)
    assert fair["len_diff"] == 0.5 and fair["len_diff_swap"] == 0.5
    unfair = [MatchPair("甲乙丙丁", "甲乙丙丁", 1, "pos"), MatchPair("甲乙丙丁", "甲乙", 0, "ending"),
              MatchPair("戊己庚辛", "戊己庚辛", 1, "pos"), MatchPair("戊己庚辛", "子", 0, "ending")]
    checks = length_artefacts(unfair)
    assert checks["len_diff"] == 1.0 and checks["len_diff_ending"] == 1.0 and checks["new_chars"] == 0.75


def test_tfidf_peer_scores_every_test_pair():
    pytest.importorskip("sklearn")
    train = PAIRS * 5 + [MatchPair("北京下雪", "北京降雪", 1, "pos"), MatchPair("北京下雪", "上海下雪", 0, "swap")] * 5
    scores, threshold, c = tfidf_peer(train, PAIRS, PAIRS, c_grid=(1.0, 4.0))
    assert scores.shape == (4,) and numpy.all((scores >= 0) & (scores <= 1)) and c in (1.0, 4.0)
    assert pair_metrics(scores, PAIRS, threshold)["acc"] >= 0.75


def test_results_table_lists_models_and_peers():
    rows = [{"name": SIMNET_MODELS[0], "metrics": {"acc": 0.9, "auc": 0.95, "rank_acc": 0.97, "acc_pos": 0.9,
                                                   "acc_swap": 0.8, "acc_exchange": 0.1, "acc_ending": 1.0,
                                                   "acc_overlap": 1.0},
             "threshold": 0.6, "wall_seconds": 120.0, "cpu_seconds": 60.0}]
    peers = {"TF-IDF LR (C=4)": {**rows[0]["metrics"], "threshold": 0.5}}
    artefacts = {"len_diff": 0.5, "new_chars": 0.9, "len_diff_swap": 0.49}
    text = results_table(rows, peers, {"pairs": 4}, artefacts, machine="2 cores")
    lines = text.splitlines()
    assert lines[0] == "Command: `oar reproduce simnet`. 2 cores"
    assert "| simnet_bow_pointwise | 0.900 | 0.950 | 0.970 | 0.900 | 0.800 | 0.100 | 1.000 | 1.000 | 0.600 | " \
           "2.0 / 1.0 min |" in lines
    assert any(line.startswith("| TF-IDF LR (C=4) (peer) | 0.900") for line in lines)
    assert "length difference 0.500 (swap 0.490, exchange -, ending -, overlap -)" in text


def test_split_pairs_reads_a_configs_pairs_also_behind_triples(tmp_path):
    path = tmp_path / "pairs.tsv"
    path.write_text("a\tb\t1\na\tc\t0\n", encoding="utf-8")
    cfg = {"data": {"train": {"type": "MatchingTriples", "path": str(path), "kind": "pairs"},
                    "eval": {"type": "MatchingPairs", "path": str(path)},
                    "test": {"type": "MatchingPairs", "path": str(path)}}}
    train, dev, test = split_pairs(cfg)
    assert train == dev == test == [MatchPair("a", "b", 1, ""), MatchPair("a", "c", 0, "")]
