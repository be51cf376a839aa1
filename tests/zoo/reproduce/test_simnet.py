"""The pieces of `oar reproduce simnet`: the TF-IDF peer, the table, the pairs of a config (the whole procedure on a
small sample: tests/zoo/test_zoo_simnet.py)."""
import numpy
import pytest

from nlp.simnet.pairs import MatchPair
from nlp.simnet.metrics import pair_metrics
from zoo.reproduce.peers import matching_tfidf_peer
from zoo.reproduce.simnet import SIMNET_MODELS, results_table, split_pairs

from ...nlp.simnet.test_metrics import PAIRS


def test_tfidf_peer_scores_every_test_pair():
    pytest.importorskip("sklearn")
    train = PAIRS * 5 + [MatchPair("北京下雪", "北京降雪", 1, "pos"), MatchPair("北京下雪", "上海下雪", 0, "swap")] * 5
    scores, threshold, c = matching_tfidf_peer(train, PAIRS, PAIRS, c_grid=(1.0, 4.0))
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
