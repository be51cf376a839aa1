"""``lac_word``: a tokeniser that gives the words of our LAC tagger running the official Baidu model.

Importing this module registers it in :data:`nlp.data.tokenizers.TOKENIZERS`
(:mod:`nlp.common` does, for the sentiment and matching tasks), so a text
task's config can name ``tokenizer: {type: lac_word}``.
"""
import json
import os

from framework.serialization import atomic_write
from nlp.data.text import TextFormatError
from nlp.data.tokenizers import TOKENIZERS, Tokenizer, normalize

from .task import load_official_task

__all__ = ["LacWordTokenizer"]


@TOKENIZERS.register("lac_word")
class LacWordTokenizer(Tokenizer):
    """The words of our LAC tagger (official Baidu model, :func:`nlp.lac.task.load_official_task`).

    Words are normalised (:func:`normalize`), whitespace is never part of one (the ``"split"`` rule of
    :func:`nlp.lac.task.group_words`) and whitespace-only words are dropped.
    Every text's words are kept in memory, and :meth:`fit` runs the tagger once
    over the whole corpus and stores the result in ``folder/lac_words.jsonl``,
    so later runs never tag a corpus text again. ``batch_size`` texts are
    tagged at a time.
    """

    signature = "lac_word"
    CACHE_FILE = "lac_words.jsonl"

    def __init__(self, batch_size: int = 256):
        self.batch_size = int(batch_size)
        self._words = {}
        self._tagger = None

    def __getstate__(self):
        return {"batch_size": self.batch_size, "_words": self._words, "_tagger": None}

    def _tag(self, texts):
        if self._tagger is None:
            self._tagger = load_official_task()
        return [result["words"] for result in self._tagger.predict_iter(texts, self.batch_size, whitespace="split")]

    def tokenize(self, text):
        return self.tokenize_batch([text])[0]

    def tokenize_batch(self, texts):
        missing = list(dict.fromkeys(t for t in texts if t not in self._words))
        if missing:
            to_tag = [t for t in missing if t.strip()]
            self._words.update({t: [] for t in missing if not t.strip()})
            for text, words in zip(to_tag, self._tag(to_tag)):
                self._words[text] = [w for w in (normalize(word).strip() for word in words) if w]
        return [list(self._words[text]) for text in texts]

    def fit(self, train_texts, folder, other_texts=()):
        path = os.path.join(folder, self.CACHE_FILE)
        if os.path.isfile(path):
            with open(path, encoding="utf-8") as f:
                for number, line in enumerate(f, start=1):
                    try:
                        entry = json.loads(line)
                        self._words.setdefault(entry["text"], entry["words"])
                    except (ValueError, KeyError, TypeError):
                        raise TextFormatError(f"{path}:{number}: not a cached LAC entry "
                                              f"{{\"text\": ..., \"words\": [...]}}; delete the file to "
                                              f"tag the corpus again") from None
        texts = list(dict.fromkeys(list(train_texts) + list(other_texts)))
        if any(t not in self._words for t in texts):
            self.tokenize_batch(texts)
            _write_text(path, "".join(json.dumps({"text": t, "words": w}, ensure_ascii=False) + "\n"
                                      for t, w in self._words.items()))


def _write_text(path, text):
    """Write ``text`` to ``path`` as UTF-8 through a temporary file in the same folder."""
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    with atomic_write(path) as f:
        f.write(text)
