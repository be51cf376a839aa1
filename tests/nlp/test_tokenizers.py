"""Char, LAC-word and SentencePiece tokenisers: normalisation, caching, training, pickling."""
import os
import pickle

import pytest

from framework.config import ConfigError
from framework.fetch import FetchError
from nlp.data.text import TextFormatError
from nlp.data.tokenizers import (CharTokenizer, LacWordTokenizer, SentencePieceTokenizer, build_tokenizer,
                                 normalize)

TEXTS = ["这个手机很好用，电池也耐用", "质量太差了，再也不买了", "物流很快，包装完好", "书的内容很无聊，不推荐"] * 25


def test_normalize_makes_full_width_ascii_and_lower_case():
    assert normalize("ＡＢＣ１２３，好\u3000Ok") == "abc123,好 ok"
    with pytest.raises(TypeError, match="expected text as a str"):
        normalize(None)


def test_char_tokenizer_one_token_per_character_without_spaces():
    tok = build_tokenizer({"type": "char"})
    assert isinstance(tok, CharTokenizer)
    assert tok.tokenize("Ｗｉｆｉ 很好！\t😀") == ["w", "i", "f", "i", "很", "好", "!", "😀"]
    assert tok.tokenize("") == [] and tok.tokenize(" \n ") == []
    assert tok.tokenize_batch(["ab", "c"]) == [["a", "b"], ["c"]]


def test_unknown_tokenizer_type_is_a_config_error():
    with pytest.raises(ConfigError, match="unknown tokenizer type 'chars'.*did you mean 'char'"):
        build_tokenizer({"type": "chars"})


class _CountingTagger:
    """Stands in for the LAC task: splits text at spaces and counts the texts it tags."""

    def __init__(self):
        self.tagged = []

    def predict_raw(self, texts):
        self.tagged.extend(texts)
        return [{"words": text.split(" "), "tags": ["n"] * len(text.split(" "))} for text in texts]


def test_lac_word_tokenizer_normalises_caches_and_writes_the_corpus_file(tmp_path):
    tok = LacWordTokenizer(batch_size=2)
    tagger = tok._tagger = _CountingTagger()
    assert tok.tokenize_batch(["Ｈｅｌｌｏ 世界", "", "好 书", "Ｈｅｌｌｏ 世界"]) == [["hello", "世界"], [], ["好", "书"],
                                                                                   ["hello", "世界"]]
    assert tagger.tagged == ["Ｈｅｌｌｏ 世界", "好 书"]                   # each distinct non-empty text once
    tok.fit(["好 书", "新 书"], str(tmp_path), other_texts=["旧 书"])
    assert tagger.tagged[2:] == ["新 书", "旧 书"]
    cached = LacWordTokenizer()
    cached._tagger = _CountingTagger()
    cached.fit(["新 书"], str(tmp_path))
    assert cached.tokenize("旧 书") == ["旧", "书"] and cached._tagger.tagged == []
    assert pickle.loads(pickle.dumps(tok)).tokenize("新 书") == ["新", "书"]
    (tmp_path / LacWordTokenizer.CACHE_FILE).write_text('{"text": "a", "words": ["a"]}\n{"text": "b"}\n')
    with pytest.raises(TextFormatError, match=r"lac_words.jsonl:2: not a cached LAC entry"):
        LacWordTokenizer().fit([], str(tmp_path))


def test_lac_word_tokenizer_with_the_official_model():
    tok = LacWordTokenizer()
    try:
        words = tok.tokenize_batch(["我爱北京天安门", "这本书写得很好，推荐！", ""])
    except FetchError as err:
        pytest.skip(f"the official LAC model cannot be fetched here: {err}")
    assert words[0] == ["我", "爱", "北京", "天安门"]
    assert "".join(words[1]) == "这本书写得很好,推荐!" and len(words[1]) < 10
    assert words[2] == []


def test_sentencepiece_trains_on_the_texts_and_tokenizes(tmp_path):
    tok = build_tokenizer({"type": "sentencepiece", "vocab_size": 60, "model_type": "bpe"})
    assert tok.signature == "sentencepiece-bpe-60"
    with pytest.raises(RuntimeError, match="no model yet"):
        tok.tokenize("好")
    tok.fit(TEXTS, str(tmp_path))
    assert os.listdir(tmp_path) == ["spm_bpe_60.model"]
    pieces = tok.tokenize("这个手机质量很差 ＡＢＣ")
    assert "".join(pieces).replace("▁", "") == "这个手机质量很差abc"
    assert any(len(p.replace("▁", "")) > 1 for p in tok.tokenize("物流很快，包装完好"))
    again = SentencePieceTokenizer(model=tok.model_path)
    assert again.tokenize("再也不买了") == tok.tokenize("再也不买了")
    assert again.signature.startswith("sentencepiece-") and again.signature != tok.signature
    assert pickle.loads(pickle.dumps(tok)).tokenize("再也不买了") == tok.tokenize("再也不买了")


def test_sentencepiece_bad_arguments(tmp_path):
    with pytest.raises(ValueError, match="model_type must be 'unigram' or 'bpe'"):
        SentencePieceTokenizer(model_type="word")
    with pytest.raises(FileNotFoundError, match="model file not found"):
        SentencePieceTokenizer(model=str(tmp_path / "none.model"))
