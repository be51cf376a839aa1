"""nlp.simnet.metrics on scored pairs outside the Trainer: metrics by negative type, artefact checks."""
from nlp.simnet.pairs import MatchPair
from nlp.simnet.metrics import length_artefacts, pair_metrics

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
