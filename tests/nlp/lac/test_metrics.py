"""nlp.lac.metrics: span reading, segmentation / POS / entity P-R-F1 from labels and from words."""
import numpy
import pytest

import framework
from framework.registry import METRICS
from nlp.data import peoples_daily as pd
from nlp.lac import data as lac_data
from nlp.lac.metrics import LexicalMetrics, score_words, spans, word_spans

# Hand-made example (two sentences; the gold words are People's Daily style).
GOLD = [(["江", "泽民", "访问", "美国"], ["nr", "nr", "v", "ns"]),
        (["新华社", "记者"], ["nt", "n"])]
PRED = [(["江泽民", "访问", "美", "国"], ["nr", "vn", "ns", "n"]),
        (["新华社", "记", "者"], ["nt", "n", "n"])]
# Words: gold 4 + 2 = 6, predicted 4 + 3 = 7. Right spans: 访问, 新华社 -> 2; with the tag right: 新华社 -> 1.
# Entities (江 + 泽民 merged): gold 江泽民/nr 美国/ns 新华社/nt,
# predicted 江泽民/nr 美/ns 新华社/nt -> 2 of 3.
EXPECTED = {
    "seg_p": 2 / 7, "seg_r": 2 / 6, "seg_f1": 4 / 13,
    "pos_p": 1 / 7, "pos_r": 1 / 6, "pos_f1": 2 / 13,
    "entity_p": 2 / 3, "entity_r": 2 / 3, "entity_f1": 2 / 3,
    "entity_f1_nr": 1.0, "entity_f1_ns": 0.0, "entity_f1_nt": 1.0,
    "entity_p_ns": 0.0, "entity_r_ns": 0.0,
}


def _labels(sentences):
    return [lac_data.char_labels(words, tags)[1] for words, tags in sentences]


def _batch(sentences, width, pad_id):
    """(N, width) label ids padded with ``pad_id``, and lengths (N,)."""
    ids = [pd.TAGSET.encode(labels) for labels in _labels(sentences)]
    out = numpy.full((len(ids), width), pad_id, dtype=numpy.int64)
    for i, row in enumerate(ids):
        out[i, :len(row)] = row
    return out, numpy.asarray([len(r) for r in ids], dtype=numpy.int64)


def test_spans_reading_rule():
    assert spans(["n-B", "n-I", "n-B", "v-B", "v-I"]) == [(0, 2, "n"), (2, 3, "n"), (3, 5, "v")]
    # an -I of another type starts a word; an -I at the start too; a run of O is one word
    assert spans(["n-B", "v-I", "v-I", "O", "O", "n-I"]) == [(0, 1, "n"), (1, 3, "v"), (3, 5, "O"), (5, 6, "n")]
    assert spans(["nr-I"]) == [(0, 1, "nr")] and spans([]) == []
    assert word_spans(["江", "泽民", "。"], ["nr", "nr", "w"]) == [(0, 1, "nr"), (1, 3, "nr"), (3, 4, "w")]


def test_score_words_hand_computed():
    result = score_words(PRED, GOLD)
    for key, value in EXPECTED.items():
        assert result[key] == pytest.approx(value), key
    assert isinstance(result["seg_f1"], float)


def test_score_words_perfect_and_tag_map():
    perfect = score_words(GOLD, GOLD)
    assert all(value == 1.0 for key, value in perfect.items()), perfect
    official = [(["江泽民", "访问", "美国"], ["PER", "v", "LOC"]), (["新华社", "记者"], ["ORG", "n"])]
    mapped = score_words(official, GOLD, tag_map={"PER": "nr", "LOC": "ns", "ORG": "nt"})
    # 江泽民 is one word here and two in the gold: 4 of 5 predicted words right, 4 of 6 gold words found
    assert mapped["entity_f1"] == 1.0 and mapped["seg_p"] == pytest.approx(4 / 5)
    assert mapped["seg_r"] == pytest.approx(4 / 6)
    assert score_words(official, GOLD)["entity_f1"] == 0.0                 # PER is not nr without the map
    # gold tags can be mapped too; full-width text in one of them is fine
    coarse = score_words([(["１２月"], ["TIME"])], [(["12月"], ["t"])], gold_tag_map={"t": "TIME"})
    assert coarse["pos_f1"] == 1.0


def test_score_words_checks_inputs():
    with pytest.raises(ValueError, match="sentence 1: the predicted words spell"):
        score_words([GOLD[0], (["新华"], ["nt"])], GOLD)
    with pytest.raises(ValueError, match="sentence 0: 2 gold words but 1 tags"):
        score_words([(["a", "b"], ["n", "n"])], [(["a", "b"], ["n"])])
    with pytest.raises(ValueError, match="1 predicted sentences for 2 gold"):
        score_words(GOLD[:1], GOLD)


def test_adjacent_person_words_merge_into_one_entity():
    gold = [(["王", "小", "明", "和", "李", "四"], ["nr", "nr", "nr", "c", "nr", "nr"])]
    pred = [(["王小明", "和", "李四"], ["nr", "c", "nr"])]
    result = score_words(pred, gold)
    assert result["entity_f1_nr"] == 1.0 and result["seg_p"] == pytest.approx(1 / 3)
    split_name = [(["王", "小明", "和", "李四"], ["nr", "n", "c", "nr"])]      # 王/nr alone is a wrong person
    assert score_words(split_name, gold)["entity_p_nr"] == 0.5


def test_lexical_metrics_hand_computed_with_padding():
    gold, lengths = _batch(GOLD, 9, pad_id=0)
    pred, _ = _batch(PRED, 9, pad_id=pd.TAGSET.id_of("v-B"))               # padding holds garbage
    metric = LexicalMetrics()
    metric.update({"tags": framework.to_tensor(pred)}, {"labels": gold, "tokens_lengths": lengths})
    result = metric.compute()
    for key, value in EXPECTED.items():
        assert result[key] == pytest.approx(value), key
    assert result == pytest.approx(score_words(PRED, GOLD))
    metric.reset()
    metric.update({"tags": pred[:1]}, {"labels": gold[:1], "tokens_lengths": lengths[:1]})
    metric.update({"tags": pred[1:]}, {"labels": gold[1:], "tokens_lengths": lengths[1:]})
    assert metric.compute() == pytest.approx(result)                      # batches accumulate


def test_lexical_metrics_perfect_prediction_is_one():
    gold, lengths = _batch(GOLD, 7, pad_id=0)
    metric = LexicalMetrics(pd.TAGSET.names)
    metric.update({"tags": gold}, {"labels": gold, "tokens_lengths": lengths})
    result = metric.compute()
    assert set(result) >= {"seg_f1", "seg_p", "seg_r", "pos_f1", "entity_f1", "entity_f1_nr", "entity_f1_ns",
                           "entity_f1_nt"}
    assert all(value == 1.0 for value in result.values()), result


def test_lexical_metrics_sequences_do_not_join_across_rows():
    # row 0 ends with n-I, row 1 starts with n-I: two words, not one
    tags = pd.TAGSET
    gold = numpy.asarray([[tags.id_of("n-B"), tags.id_of("n-I")], [tags.id_of("n-B"), tags.id_of("n-I")]])
    pred = numpy.asarray([[tags.id_of("n-B"), tags.id_of("n-I")], [tags.id_of("n-I"), tags.id_of("n-I")]])
    metric = LexicalMetrics()
    metric.update({"tags": pred}, {"labels": gold})                       # no lengths: full rows
    assert metric.compute()["pos_f1"] == 1.0


def test_lexical_metrics_from_config_and_tagset_file(tmp_path):
    path = tmp_path / "tags.txt"
    pd.TAGSET.save(path)
    metric = METRICS.build({"type": "LexicalMetrics", "tags": str(path), "pred_key": "path",
                            "entity_types": ["nr"]})
    gold, lengths = _batch(GOLD, 7, pad_id=0)
    metric.update({"path": gold}, {"labels": gold, "tokens_lengths": lengths})
    result = metric.compute()
    assert result["entity_f1_nr"] == 1.0 and "entity_f1_ns" not in result


def test_lexical_metrics_rejects_bad_batches():
    metric = LexicalMetrics()
    with pytest.raises(ValueError, match=r"predicted label ids must be in \[0, 85\)"):
        metric.update({"tags": numpy.asarray([[85]])}, {"labels": numpy.asarray([[0]])})
    with pytest.raises(ValueError, match="a length of 3 exceeds"):
        metric.update({"tags": numpy.zeros((1, 2), numpy.int64)},
                      {"labels": numpy.zeros((1, 2), numpy.int64), "tokens_lengths": numpy.asarray([3])})


def test_lexical_metrics_state_round_trip_merges_counts():
    from nlp.lac.metrics import LexicalMetrics
    from nlp.data.peoples_daily import TAGSET
    n_b, n_i = TAGSET.encode(["n-B", "n-I"])
    batch = {"labels": numpy.array([[n_b, n_i, n_b]]), "tokens_lengths": numpy.array([3])}
    first, second = LexicalMetrics(), LexicalMetrics()
    first.update({"tags": numpy.array([[n_b, n_i, n_b]])}, batch)
    second.update({"tags": numpy.array([[n_b, n_b, n_b]])}, batch)
    merged = {k: first.state()[k] + second.state()[k] for k in first.state()}
    combined = LexicalMetrics()
    combined.set_state(merged)
    # 4 gold words, 5 predicted words, 3 right in all: P 3/5, R 3/4
    assert combined.compute()["seg_p"] == pytest.approx(3 / 5)
    assert combined.compute()["seg_r"] == pytest.approx(3 / 4)


def test_score_sentences_tags_the_raw_text_and_renames_the_official_tags():
    from nlp.data.peoples_daily import Sentence
    from nlp.lac.metrics import OFFICIAL_TAG_MAP, score_sentences
    gold = [Sentence(["张三", "说"], ["nr", "v"], 0), Sentence(["北京"], ["ns"], 1)]
    seen = []

    def predict(texts):
        seen.extend(texts)
        return [{"words": ["张三", "说"], "tags": ["PER", "v"]}, {"words": ["北京"], "tags": ["LOC"]}]

    renamed = score_sentences(predict, gold, tag_map=OFFICIAL_TAG_MAP)
    assert seen == ["张三说", "北京"]
    assert renamed["seg_f1"] == renamed["pos_f1"] == renamed["entity_f1"] == 1.0
    plain = score_sentences(predict, gold)
    assert plain["seg_f1"] == 1.0 and plain["pos_f1"] == pytest.approx(1 / 3) and plain["entity_f1"] == 0.0
