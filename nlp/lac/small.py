"""The 2019 PaddleNLP LAC network, from the parameters jieba 0.42.1 ships (``jieba/lac_small/`` of ``jieba==0.42.1``).

jieba's "paddle mode" carries the release/1.6 PaddleNLP LAC model's parameters
(``model_baseline/``, PaddlePaddle's persisted format, the same 20 names as the
official LAC: :data:`~nlp.lac.official.OFFICIAL_NAMES`) and its tables
(``word.dic``: 20,940 ids for 20,941 embedding rows, unknown characters
``OOV``; ``tag.dic``: 57 tags ``a-B`` … ``TIME-I``, ``O``), but no program file.
The network is :class:`~nlp.lac.model.BiGRUCRF` (embedding 128, two BiGRU
layers of 128, a CRF over 57 tags).

- **Input.** One id per character, each character mapped through LAC's
  ``q2b.dic`` (from ``LAC/lac_model/conf`` of the pinned ``LAC`` distribution)
  first, as the 2019 reader did (jieba's own reader skips that step):
  :class:`~nlp.lac.preprocess.TableCharPreprocessor`.
- **Words** (:func:`word_opens`), the 2019 rule: a word starts at the first
  character, at every ``X-B`` tag, and at an ``O`` tag unless the word being
  built began with ``O``; every other character joins the word before it. A
  word's tag is its *first* character's tag up to its ``-`` (``"n-B"`` ->
  ``"n"``, ``"O"`` -> ``"O"``). Whitespace (``whitespace=``) as in
  :func:`~nlp.lac.task.group_words`: ``"official"`` groups it like any
  character (the default, as the engine), ``"split"`` drops it from the words.
- **No user dictionary**: the 2019 model had none and LAC does not run this
  model, so :meth:`LexicalAnalysis2019.load_customization` refuses one.
"""
import os

import numpy

from framework import fetch as fw_fetch
from framework.errors import UserError
from framework.paddle_format import load_paddle_params
from nlp.data.sources import JIEBA, LAC_SMALL_DIR

from .model import BiGRUCRF
from .official import OFFICIAL_NAMES, official_model_dir, official_state_dict
from .preprocess import TableCharPreprocessor
from .tables import TextFormatError, load_kv_dict
from .task import LexicalAnalysis, word_spans

__all__ = ["NoUserDictionaryError", "LexicalAnalysis2019", "word_opens", "small_model_dir", "load_small",
           "load_small_task"]


class NoUserDictionaryError(UserError):
    """A user dictionary was given to a model that applies none."""


def word_opens(is_begin, is_o, text_starts):
    """Where the 2019 rule (module docstring) starts a word: bool (n,) over n characters of texts end to end.

    Args:
        is_begin: bool (n,), the character's tag is an ``X-B``.
        is_o: bool (n,), the character's tag is ``O``.
        text_starts: int (m,), the index of each text's first character.
    """
    n = len(is_begin)
    starts = numpy.zeros(n, dtype=bool)
    starts[text_starts] = True
    # each character's anchor: the last B or O at or before it, or its text's first character
    anchored = is_begin | is_o | starts
    last = numpy.maximum.accumulate(numpy.where(anchored, numpy.arange(n), 0))
    before = numpy.concatenate([[0], last[:-1]])[:n]
    # the word being built began with O exactly when the anchor before this character is an O
    return starts | is_begin | (is_o & ~is_o[before])


class LexicalAnalysis2019(LexicalAnalysis):
    """A :class:`~nlp.lac.task.LexicalAnalysis` that groups words by the 2019 PaddleNLP rule (module docstring)
    and takes no user dictionary."""

    word_rule = ("a word starts at the first character, at every tag ending in '-B', and at an 'O' unless the "
                 "word being built began with 'O'; (whitespace 'split') whitespace belongs to no word and the "
                 "character after it starts one; a word's tag is its first character's tag up to its '-' "
                 "('n-B' -> 'n', 'O' -> 'O')")

    def load_customization(self, source, sep=None):
        """Refused: the 2019 PaddleNLP LAC applies no user dictionary (:class:`NoUserDictionaryError`)."""
        raise NoUserDictionaryError("the 2019 PaddleNLP LAC (lac_small) applies no user dictionary; "
                                    "LAC applies one to its lac, seg and rank models")

    def add_word(self, line, sep=None):
        """Refused, as :meth:`load_customization`."""
        self.load_customization([line], sep)

    def _results(self, texts, char_ids, whitespace):
        """``[{"words": [...], "tags": [...]}]`` of ``texts`` (list of str) from their per-character tag ids end
        to end, by the 2019 rule and the ``whitespace`` rule."""
        _, char_tags = self._raw_tools()
        names = numpy.array(char_tags.names, dtype=object)
        is_begin = numpy.array([name.endswith("-B") for name in char_tags.names])[char_ids]
        is_o = (names == "O")[char_ids]
        labels = numpy.array([name.split("-")[0] for name in char_tags.names], dtype=object)
        lengths = numpy.fromiter(map(len, texts), dtype=numpy.int64, count=len(texts))
        firsts = numpy.cumsum(lengths) - lengths
        joined = "".join(texts)
        opens = word_opens(is_begin, is_o, firsts[lengths > 0])
        begins, ends = word_spans(joined, opens, whitespace)
        words = [joined[a:b] for a, b in zip(begins.tolist(), ends.tolist())]
        tags = labels[char_ids[begins]].tolist()
        cuts = numpy.searchsorted(begins, numpy.append(firsts, len(joined))).tolist()   # each text's first word
        return [{"words": words[a:b], "tags": tags[a:b]} for a, b in zip(cuts[:-1], cuts[1:])]


def small_model_dir():
    """The ``lac_small`` folder, fetched from the pinned ``jieba`` distribution into the cache on first use."""
    return os.path.join(fw_fetch.fetch(JIEBA, [LAC_SMALL_DIR]), LAC_SMALL_DIR.rstrip("/"))


def load_small(model_dir=None, q2b_path=None):
    """(model, preprocessor, tag_names) of the 2019 PaddleNLP LAC, ready for inference.

    Args:
        model_dir: a ``lac_small`` folder (``model_baseline/``, ``word.dic``, ``tag.dic``; default: fetched).
        q2b_path: LAC's ``q2b.dic`` (default: the official ``lac_model``'s, fetched).

    Returns:
        model: :class:`~nlp.lac.model.BiGRUCRF` in eval mode (float32; embedding (20941, 128), 57 tags).
        preprocessor: :class:`~nlp.lac.preprocess.TableCharPreprocessor` (one id per character).
        tag_names: the 57 tag names (``"a-B"`` … ``"O"``), indexed by tag id.
    """
    model_dir = model_dir or small_model_dir()
    q2b_path = q2b_path or os.path.join(official_model_dir(), "conf", "q2b.dic")
    state = official_state_dict(load_paddle_params(os.path.join(model_dir, "model_baseline"),
                                                   names=list(OFFICIAL_NAMES)))
    word2id = load_kv_dict(os.path.join(model_dir, "word.dic"), reverse=True, value_type=int)
    id2tag = load_kv_dict(os.path.join(model_dir, "tag.dic"))
    num_tags = state["crf.transition"].shape[1]
    missing = [str(i) for i in range(num_tags) if str(i) not in id2tag]
    if missing or "OOV" not in word2id:
        raise TextFormatError(f"{model_dir}: tag.dic names no tag id(s) {', '.join(missing)} of the model's "
                              f"{num_tags}" if missing else f"{os.path.join(model_dir, 'word.dic')}: no 'OOV' token")
    model = BiGRUCRF.from_state_dict(state)
    model.eval()
    preprocessor = TableCharPreprocessor(word2id, load_kv_dict(q2b_path), word2id["OOV"])
    return model, preprocessor, [id2tag[str(i)] for i in range(num_tags)]


def load_small_task(model_dir=None, **task_options):
    """A :class:`LexicalAnalysis2019` task running the 2019 PaddleNLP LAC (``task_options`` as for
    :func:`~nlp.lac.task.load_official_task`; whitespace grouped as the engine groups it unless they say
    otherwise). ``task.predict(["百度是一家高科技公司"])`` gives ``[{"words": [...], "tags": [...]}]``."""
    model, preprocessor, tag_names = load_small(model_dir)
    task_options.setdefault("whitespace", "official")
    return LexicalAnalysis2019(model, preprocessor=preprocessor, tag_names=tag_names, **task_options)
