"""Word importance on top of lexical analysis: ``LAC(mode="rank")`` of Baidu's LAC 2.1.2.

:class:`LexicalRank` is a :class:`~nlp.lac.task.LexicalAnalysis` whose model
(:class:`~nlp.lac.rank_model.LacRank`) returns LAC's tag ids and the rank
network's probabilities in one forward (one traced program). Raw texts give
``{"words": [...], "tags": [...], "rank": [...]}``: words and tags exactly as
the ``lac`` task gives them, and each word's importance 0-3 as LAC's
``RankModel.parse_result`` computes it: the rank of each id (the arg max of
its probabilities, ties to the lowest level) is given to every character the
id covers, and a word's rank is the largest of its characters' ranks (words
grouped by the same rule as the words, after the user dictionary). An empty
text gives three empty lists.

:func:`load_rank_task` builds it from the official ``lac_model`` and
``rank_model`` folders (:mod:`nlp.lac.rank_official`).
"""
import re

import numpy

from framework.engine.metrics import to_numpy

from .rank_model import LacRank
from .rank_official import read_rank_model
from .task import LexicalAnalysis, check_whitespace, load_official

__all__ = ["LexicalRank", "load_rank_task", "word_ranks"]

_NOT_SPACE = re.compile(r"\S")          # the complement of the whitespace the "split" rule drops


def word_ranks(texts, results, char_ranks, whitespace):
    """Each result's ``"rank"``: the largest rank of each word's characters (modifies ``results`` in place).

    ``texts``: n str; ``results``: their ``{"words", "tags"}`` dicts; ``char_ranks``: int64, one rank per
    character of the texts end to end; ``whitespace``: the grouping rule the words were made with
    (``"official"``: the words joined are the text; ``"split"``: the text without its whitespace).
    """
    joined = "".join(texts)
    if whitespace == "split":
        positions = numpy.array([m.start() for m in _NOT_SPACE.finditer(joined)], dtype=numpy.int64)
    else:
        positions = numpy.arange(len(joined))
    words = [len(w) for result in results for w in result["words"]]
    if not words:
        for result in results:
            result["rank"] = []
        return results
    starts = numpy.cumsum(words) - words
    ranks = numpy.maximum.reduceat(char_ranks[positions], starts).tolist()
    at = 0
    for result in results:
        result["rank"] = ranks[at:at + len(result["words"])]
        at += len(result["words"])
    return results


class LexicalRank(LexicalAnalysis):
    """LAC's words, tags and word importance (module docstring); the arguments are
    :class:`~nlp.lac.task.LexicalAnalysis`'s, the model a :class:`~nlp.lac.rank_model.LacRank`."""

    def predict_batch(self, batch):
        """``{"tags": (N, T) int64 LAC tag ids (0 past each length), "rank": (N, T) int64 importance,
        "lengths": (N,)}``, with the batch's ``texts`` and ``word_lengths`` passed along."""
        lengths = batch["tokens_lengths"]
        tags, probabilities = self.model(batch["tokens"], lengths)
        outputs = {"tags": tags, "rank": to_numpy(probabilities).argmax(axis=-1), "lengths": lengths}
        outputs.update({key: batch[key] for key in ("texts", "word_lengths") if key in batch})
        return outputs

    @staticmethod
    def _char_ranks(outputs):
        """The rank of each character of a :meth:`predict_batch` output's texts, end to end: int64 (chars,)."""
        ranks, lengths = to_numpy(outputs["rank"]), to_numpy(outputs["lengths"])
        per_id = ranks[numpy.arange(ranks.shape[1]) < lengths[:, None]]
        return numpy.repeat(per_id, to_numpy(outputs["word_lengths"]))

    def _char_fields(self, outputs):
        """The tag ids and ranks of each character of a :meth:`predict_batch` output's texts, end to end."""
        return {**super()._char_fields(outputs), "rank": self._char_ranks(outputs)}

    def postprocess(self, outputs):
        """A :meth:`predict_batch` output -> ``[{"words": [...], "tags": [...], "rank": [...]}]``."""
        results = self._results(outputs["texts"], self._char_tag_ids(outputs), self.whitespace)
        return word_ranks(outputs["texts"], results, self._char_ranks(outputs), self.whitespace)

    def predict_raw(self, inputs, device=None, whitespace=None):
        """Analyse one batch, a list of str: ``[{"words", "tags", "rank"}]`` in input order; texts longer than
        ``max_chunk_len`` are cut and run in chunks as :meth:`LexicalAnalysis.predict_raw` does."""
        whitespace = self.whitespace if whitespace is None else check_whitespace(whitespace, "LexicalRank")
        texts = self._check_texts(inputs)
        fields = self._char_fields_of(texts, device)
        return word_ranks(texts, self._results(texts, fields["tags"], whitespace), fields["rank"], whitespace)


def load_rank_task(lac_dir=None, rank_dir=None, **task_options):
    """A :class:`LexicalRank` running the official LAC and rank models (folders fetched when None).

    ``task_options`` go to the task; whitespace is grouped as the official LAC groups it unless they say
    otherwise. ``task.predict(["百度是一家高科技公司"])`` gives ``[{"words": ["百度", "是", "一家", "高科技",
    "公司"], "tags": ["ORG", "v", "m", "n", "n"], "rank": [...]}]``.
    """
    lac, preprocessor, tag_names = load_official(lac_dir)
    model = LacRank(lac, read_rank_model(rank_dir))
    model.eval()
    task_options.setdefault("whitespace", "official")
    return LexicalRank(model, preprocessor=preprocessor, tag_names=tag_names, **task_options)
