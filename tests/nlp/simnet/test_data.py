"""The matching pair builder: determinism, split discipline, balance, the negative makers and artefacts,
on a small corpus in People's Daily format and a hand-made synonym table (no download)."""
import collections
import os

import numpy
import pytest

from nlp.data.peoples_daily import split_of
from nlp.data.text import TextFormatError
from nlp.simnet import builder as B, data as D, pairs as P
from nlp.simnet.metrics import length_artefacts
from nlp.simnet.synonyms import SynonymGroup, SynonymTable, parse_group, read_synonym_groups

# Entities of each split are disjoint, so a text can be traced to the split it came from.
PERSONS = {"train": ["张伟", "李强", "王芳", "赵磊", "钱进", "孙立", "周平", "吴涛"],
           "dev": ["郑华", "冯刚", "陈晨", "褚明"], "test": ["卫东", "蒋勇", "沈洁", "韩梅"]}
PLACES = {"train": ["北京", "上海", "广州", "深圳", "天津", "武汉"], "dev": ["南京", "杭州", "苏州"],
          "test": ["成都", "重庆", "西安"]}
TEMPLATES = [
    "{p1}/nr  在/p  {l1}/ns  会见/v  了/u  {p2}/nr  ，/w  双方/n  讨论/v  了/u  经济/n  合作/vn  问题/n  。/w",
    "{l1}/ns  向/p  {l2}/ns  出口/v  粮食/n  ，/w  数量/n  增加/v  {n}/m  吨/q  。/w",
    "{p1}/nr  认为/v  ，/w  这/r  项/q  工作/vn  非常/d  重要/a  ，/w  必须/d  加强/v  管理/vn  。/w",
    "{p1}/nr  和/c  {p2}/nr  在/p  {l1}/ns  讨论/v  重要/a  问题/n  ，/w  会议/n  取得/v  成果/n  ！/w",
    "{l1}/ns  经济/n  发展/v  迅速/ad  ，/w  {p1}/nr  表示/v  要/v  加强/v  合作/vn  。/w",
]
GROUPS = [SynonymGroup("Hi01A01", "=", ("会见", "会晤", "接见")), SynonymGroup("Hi02A01", "=", ("讨论", "商讨", "探讨")),
          SynonymGroup("Da01A01", "=", ("问题", "难题")), SynonymGroup("Ed01A01", "=", ("重要", "要紧", "关键")),
          SynonymGroup("Ie01A01", "=", ("加强", "增强", "强化")), SynonymGroup("Hj01A01", "=", ("管理", "治理")),
          SynonymGroup("Da02A01", "=", ("成果", "成绩", "收获")), SynonymGroup("Hj02A01", "=", ("合作", "协作")),
          SynonymGroup("Ih01A01", "=", ("增加", "增长", "增多")), SynonymGroup("Ih02A01", "=", ("发展", "进步")),
          SynonymGroup("Ka01A01", "=", ("非常", "十分", "特别")), SynonymGroup("Ba01A01", "=", ("粮食", "食粮")),
          SynonymGroup("Ec01A01", "=", ("迅速", "快速")), SynonymGroup("Da03A01", "#", ("经济", "财经"))]
LEXICON = {"会晤": "v", "接见": "v", "商讨": "v", "探讨": "v", "难题": "n", "要紧": "a", "关键": "a", "增强": "v",
           "强化": "v", "治理": "vn", "成绩": "n", "收获": "n", "协作": "vn", "增长": "v", "增多": "v", "进步": "v",
           "十分": "d", "特别": "d", "食粮": "n", "快速": "ad"}
REPLACEMENTS = set(LEXICON)                    # the words a rewrite brings in (never in the templates)


def _line(i, rng):
    split = split_of(i)
    persons, places = PERSONS[split], PLACES[split]
    p1, p2 = rng.choice(persons, 2, replace=False)
    l1, l2 = rng.choice(places, 2, replace=False)
    n = "".join(chr(0xFF10 + int(d)) for d in str(int(rng.integers(10, 999))))
    sentences = [TEMPLATES[int(k)].format(p1=p1, p2=p2, l1=l1, l2=l2, n=n)
                 for k in rng.choice(len(TEMPLATES), 1 + i % 2, replace=False)]
    return "  ".join(sentences)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    path = tmp_path_factory.mktemp("corpus") / "pd.txt"
    rng = numpy.random.default_rng(7)
    path.write_text("\n".join(_line(i, rng) for i in range(200)) + "\n", encoding="utf-8")
    return str(path)


@pytest.fixture(scope="module")
def rewriter():
    return B.Rewriter(SynonymTable(GROUPS), LEXICON, share=(0.3, 0.8), clause_swap=0.25)


def _build(corpus, rewriter, split, seed=0, copies=1):
    return B.build_split(split, seed=seed, copies=copies, rewriter=rewriter, path=corpus)


def tokens(text):
    """Hand-made tokens from ``"word/tag word/tag ..."``."""
    out = []
    for item in text.split():
        word, tag = item.rsplit("/", 1)
        out.append(B.Token(word, tag, B._entity_kind(word, tag)))
    return out


# ---- synonyms ---------------------------------------------------------------------------------------
def test_synonym_lines_parse_and_bad_lines_name_their_line(tmp_path):
    assert parse_group("Aa01A01= 人 士 人物") == SynonymGroup("Aa01A01", "=", ("人", "士", "人物"))
    path = tmp_path / "syn.txt"
    path.write_text("Aa01A01= 人 士\n\nAa01B03# 良民 顺民\nnot a group\n", encoding="utf-8")
    with pytest.raises(TextFormatError, match=r"syn.txt:4: expected 'CODE= word"):
        read_synonym_groups(str(path))
    path.write_text("Aa01A01= 人 士\n\nAa01B03# 良民 顺民\nAa01C05@ 众学生\n", encoding="utf-8")
    groups = read_synonym_groups(str(path))
    table = SynonymTable(groups)
    assert [g.relation for g in groups] == ["=", "#", "@"]
    assert table.synonyms("人") == ["士"] and table.synonyms("良民") == [] and "众学生" not in table
    assert table.synonyms("人", classes="B") == []


def test_rewriter_replaces_same_pos_content_words_only(rewriter):
    no_swap = B.Rewriter(SynonymTable(GROUPS), LEXICON, share=(0.3, 0.8), clause_swap=0.0)
    sentence = tokens("张伟/nr 认为/v ，/w 这/r 项/q 工作/vn 非常/d 重要/a ，/w 必须/d 加强/v 管理/vn 。/w")
    assert rewriter.candidates("加强", "v") == ("增强", "强化")
    assert rewriter.candidates("管理", "vn") == ("治理",) and rewriter.candidates("管理", "n") == ()
    assert [sentence[i].text for i in rewriter.replaceable(sentence)] == ["非常", "重要", "加强", "管理"]
    for seed in range(20):
        new = no_swap.rewrite(sentence, numpy.random.default_rng(seed))
        assert new[0].text == "张伟" and new[-1].text == "。" and len(new) == len(sentence)
        assert sorted(t.text for t in new if t.text not in REPLACEMENTS) == sorted(
            t.text for t in sentence if t.text not in {"非常", "重要", "加强", "管理"} or t.text in
            {u.text for u in new})                                     # only replaceable words change
        assert any(t.text in REPLACEMENTS for t in new)                # at least one does
    again = [B._text(rewriter.rewrite(sentence, numpy.random.default_rng(3))) for _ in range(2)]
    assert again[0] == again[1]
    swapped = B._swap_clauses(tokens("甲/n ，/w 乙/n 丙/n ，/w 丁/n 。/w"), numpy.random.default_rng(0))
    assert B._text(swapped) in ("乙丙，甲，丁。", "甲，丁，乙丙。")


def test_sentences_are_cut_after_end_marks_and_closing_quotes():
    words = "他 说 ： “ 好 。 ” 我们 走 吧 ！ 对 吗 ？".split()
    pieces = B._cut_sentences(B._tokens(words, ["x"] * len(words)))
    assert ["".join(t.text for t in p) for p in pieces] == ["他说：“好。”", "我们走吧！", "对吗？"]
    merged = B._tokens(["江", "泽民", "１２月", "３１日", "说"], ["nr", "nr", "t", "t", "v"])
    assert [(t.text, t.kind) for t in merged] == [("江泽民", "person"), ("１２月３１日", "date"), ("说", None)]
    assert B._entity_kind("一", "m") is None and B._entity_kind("二十七", "m") == "number"
    assert B._entity_kind("３．５％", "m") == "number" and B._entity_kind("现在", "t") is None


# ---- negatives --------------------------------------------------------------------------------------
def test_swap_replaces_every_occurrence_with_an_entity_of_the_same_shape():
    pool = [tuple(tokens("张伟/nr 会见/v 李强/nr 。/w")), tuple(tokens("欧阳修/nr 在/p １２月/t 说/v 。/w")),
            tuple(tokens("王芳/nr 在/p ０５月/t 说/v 。/w"))]
    pools = B.EntityPools(pool)
    assert pools.count("person", "张伟") == 2 and pools.count("person", "欧阳修") == 0
    assert B.entity_shape("date", "１２月") == "DD月" and B.entity_shape("number", "二十七") == "NNN"
    sentence = tokens("张伟/nr 说/v 张伟/nr 在/p １２月/t 到/v 。/w")
    seen = set()
    for seed in range(30):
        new = B.swap_entity(sentence, pools, numpy.random.default_rng(seed))
        old_new = {(a.text, b.text) for a, b in zip(sentence, new) if a.text != b.text}
        assert len(old_new) == 1
        (old, replacement), = old_new
        assert old in ("张伟", "１２月") and len(replacement) == len(old)
        if old == "张伟":
            assert new[0].text == new[2].text == replacement in ("李强", "王芳")
        seen.add(replacement)
    assert seen == {"李强", "王芳", "０５月"}
    assert B.swap_entity(tokens("他/r 说/v 。/w"), pools, numpy.random.default_rng(0)) is None


def test_exchange_swaps_entities_of_one_clause_but_not_a_list():
    sentence = tokens("中国/ns 向/p 美国/ns 出口/v ，/w 日本/ns 进口/v 。/w")
    new = B.exchange_entities(sentence, numpy.random.default_rng(0))
    assert B._text(new) == "美国向中国出口，日本进口。"
    assert B.exchange_entities(tokens("中国/ns 和/c 美国/ns 出口/v 。/w"), numpy.random.default_rng(0)) is None
    assert B.exchange_entities(tokens("中国/ns 、/w 美国/ns 出口/v 。/w"), numpy.random.default_rng(0)) is None
    assert B.exchange_entities(tokens("中国/ns 出口/v ，/w 美国/ns 进口/v 。/w"), numpy.random.default_rng(0)) is None


def test_ending_keeps_the_opening_and_length_and_overlap_picks_the_closest_same_length_sentence():
    sentences = [tuple(tokens(t)) for t in ["甲/n 乙/n 丙/n 丁/n 戊/n 己/n 庚/n 辛/n 。/w",
                                            "子/n 丑/n 寅/n 卯/n 辰/n 巳/n 午/n 未/n ？/w",
                                            "甲/n 乙/n 丙/n 卯/n 辰/n 巳/n 午/n 未/n 。/w",
                                            "甲/n 乙/n 丙/n 丁/n 辰/n 巳/n 午/n 。/w"]]
    for seed in range(10):
        made = B.splice_ending(sentences, 0, numpy.random.default_rng(seed))
        text = B._text(made)
        assert text.startswith("甲乙") and text.endswith("。") and len(text) == 9 and text != B._text(sentences[0])
    index = B.OverlapIndex(sentences)
    assert index.most_overlapping(0) == 2                      # 3 is more alike but a character shorter
    assert B.OverlapIndex(sentences, max_gap=1).most_overlapping(0) == 3
    maker = B.NegativeMaker(sentences)
    made = maker.make("overlap", 1, numpy.random.default_rng(0))
    assert B._text(made) == "甲乙丙卯辰巳午未？"                 # the anchor's final mark


# ---- whole splits -----------------------------------------------------------------------------------
def test_building_is_deterministic_for_a_seed(corpus, rewriter):
    first, second = _build(corpus, rewriter, "train"), _build(corpus, rewriter, "train")
    assert first == second
    other = _build(corpus, rewriter, "train", seed=1)
    assert other[0] != first[0] and other[2]["anchors"] == first[2]["anchors"]


def test_pairs_are_balanced_and_keep_their_split(corpus, rewriter):
    for split in B.SPLITS:
        pairs, triples, stats = _build(corpus, rewriter, split, copies=2)
        labels = collections.Counter(p.label for p in pairs)
        assert labels[0] == labels[1] == len(triples) > 0
        assert sum(stats[t] for t in P.NEG_TYPES if t in stats) == len(triples)
        anchors = {B._text(s) for s in B.corpus_sentences(split, path=corpus)}
        own = set(PERSONS[split] + PLACES[split])
        foreign = {e for other in B.SPLITS if other != split for e in PERSONS[other] + PLACES[other]}
        for pair in pairs:
            assert pair.text_a in anchors and pair.text_a != pair.text_b
            assert not any(e in pair.text_a + pair.text_b for e in foreign)
            assert pair.text_b[-1] == pair.text_a[-1]             # negatives end like their anchor
            assert (pair.label == 1) == (pair.neg_type == P.POSITIVE)
        assert any(e in p.text_b for p in pairs for e in own)
    train = _build(corpus, rewriter, "train")[2]
    assert all(train.get(t, 0) > 0 for t in P.NEG_TYPES), train


def test_trivial_features_carry_no_label(corpus, rewriter):
    pairs, _, _ = _build(corpus, rewriter, "train", copies=3)
    labels = numpy.array([p.label for p in pairs])
    rewritten = numpy.array([sum(p.text_b.count(w) for w in REPLACEMENTS) for p in pairs])
    from nlp.simnet.metrics import auc
    assert 0.4 <= auc(rewritten, labels) <= 0.6                # as many synonyms in negatives as in positives
    checks = length_artefacts(pairs)
    assert 0.4 <= checks["len_diff"] <= 0.6, checks
    assert checks["new_chars"] > 0.6                           # lexical evidence does separate them


def test_pair_and_triple_files_round_trip_and_bad_lines_name_their_line(tmp_path):
    pairs = [P.MatchPair("甲乙", "甲乙丙", 1, "pos"), P.MatchPair("甲乙", "丁", 0, "swap")]
    path = str(tmp_path / "pairs.tsv")
    P.write_pair_file(path, pairs)
    assert P.read_pair_file(path) == pairs
    (tmp_path / "user.tsv").write_text("text_a\ttext_b\tlabel\n你好\t您好\t1\n\n你好\t再见\t0\n", encoding="utf-8")
    assert P.read_pair_file(str(tmp_path / "user.tsv")) == [P.MatchPair("你好", "您好", 1, ""),
                                                             P.MatchPair("你好", "再见", 0, "")]
    (tmp_path / "bad.tsv").write_text("你好\t您好\t1\n你好\t再见\n", encoding="utf-8")
    with pytest.raises(TextFormatError, match=r"bad.tsv:2: expected 3 or 4 tab-separated fields, found 2"):
        P.read_pair_file(str(tmp_path / "bad.tsv"))
    (tmp_path / "bad.tsv").write_text("你好\t您好\tyes\n", encoding="utf-8")
    with pytest.raises(TextFormatError, match=r"bad.tsv:1: the label \(third field\) must be 0 or 1, got 'yes'"):
        P.read_pair_file(str(tmp_path / "bad.tsv"))
    with pytest.raises(FileNotFoundError):
        P.read_pair_file(str(tmp_path / "missing.tsv"))
    with pytest.raises(ValueError, match="tab or line break"):
        P.write_pair_file(path, [P.MatchPair("a\tb", "c", 1, "pos")])
    triples = [P.Triple("q", "p", "n")]
    P.write_triple_file(str(tmp_path / "t.tsv"), triples)
    assert P.read_triple_file(str(tmp_path / "t.tsv")) == triples


def test_datasets_read_user_files_and_group_pairs_into_triples(tmp_path):
    path = tmp_path / "user.tsv"
    path.write_text("q1\tp1\t1\nq1\tn1\t0\nq1\tn2\t0\nq2\tp2\t1\nq3\tn3\t0\nq1\tp3\t1\n", encoding="utf-8")
    pairs = D.MatchingPairs(path=str(path))
    assert len(pairs) == 6 and pairs[3] == {"text_a": "q2", "text_b": "p2", "label": 1, "neg_type": "",
                                            "query_id": 1}
    assert [pairs[i]["query_id"] for i in range(6)] == [0, 0, 0, 1, 2, 0]
    triples = D.MatchingTriples(path=str(path), max_per_query=3)
    assert [tuple(triples[i].values()) for i in range(len(triples))] == [("q1", "p1", "n1"), ("q1", "p1", "n2"),
                                                                         ("q1", "p3", "n1")]
    path.write_text("q1\tp1\t1\n", encoding="utf-8")
    with pytest.raises(ValueError, match="no text_a with both a positive and a negative"):
        D.MatchingTriples(path=str(path))
    with pytest.raises(ValueError, match="split must be one of"):
        D.MatchingPairs(split="valid")


def test_build_pairs_writes_every_file(corpus, rewriter, tmp_path, monkeypatch):
    monkeypatch.setattr(B, "default_rewriter", lambda path=None: rewriter)
    stats = B.build_pairs(str(tmp_path / "out"), seed=0, path=corpus)
    names = sorted(os.listdir(tmp_path / "out"))
    assert names == sorted([f"{s}{x}.tsv" for s in B.SPLITS for x in ("", "_triples")] + ["stats.json"])
    assert len(P.read_pair_file(str(tmp_path / "out" / "dev.tsv"))) == 2 * stats["dev"]["anchors"]
