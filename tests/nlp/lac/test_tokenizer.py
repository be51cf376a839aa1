"""The LAC-word tokeniser: normalisation, caching, the corpus file, pickling, the official model, registration."""
import pickle

import pytest

from framework.fetch import FetchError
from nlp.data.text import TextFormatError
from nlp.data.tokenizers import build_tokenizer
from nlp.lac.tokenizer import LacWordTokenizer


class _CountingTagger:
    """Stands in for the LAC task: splits text at spaces and counts the texts it tags."""

    def __init__(self):
        self.tagged = []

    def predict_iter(self, texts, batch_size, whitespace):
        assert whitespace == "split"
        for text in texts:
            self.tagged.append(text)
            yield {"words": text.split(" "), "tags": ["n"] * len(text.split(" "))}


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


def test_lac_word_tokenizer_is_registered():
    assert isinstance(build_tokenizer({"type": "lac_word", "batch_size": 8}), LacWordTokenizer)
