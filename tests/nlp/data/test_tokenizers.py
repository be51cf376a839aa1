"""Char and SentencePiece tokenisers: normalisation, training, pickling (LAC words: tests/nlp/lac/test_tokenizer.py)."""
import os
import pickle

import pytest

from framework.config import ConfigError
from nlp.data.tokenizers import CharTokenizer, SentencePieceTokenizer, build_tokenizer, normalize

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
