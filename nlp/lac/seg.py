"""Baidu's official LAC segmentation-only model (``LAC/seg_model/`` of ``LAC==2.1.2``, ``LAC(mode="seg")``).

The network is the official LAC's (:class:`~nlp.lac.model.BiGRUCRF`: two
BiGRU layers and a CRF) at width 96 over 8,224 characters, with four tags
``-B -I -E -S``. Its input is one id per character (LAC's
``SegDataset.word_to_ids``: ``q2b.dic``, then ``word.dic``, unknown
characters ``OOV``; no coarse segmentation), read by
:class:`~nlp.lac.preprocess.TableCharPreprocessor`. Its words follow LAC's
``parse_result`` (a word starts at the first character and at each ``-B`` or
``-S``), with the user dictionary applied first, as ``LAC(mode="seg")`` applies
it. The answer is the words alone: ``{"words": [...]}``; an empty text gives
no words.
"""
from nlp.data.sources import LAC_SEG_MODEL_DIR

from .model import BiGRUCRF
from .official import read_official
from .preprocess import TableCharPreprocessor
from .task import LexicalAnalysis

__all__ = ["WordSegmentation", "load_official_seg", "load_official_seg_task"]


class WordSegmentation(LexicalAnalysis):
    """A :class:`~nlp.lac.task.LexicalAnalysis` whose raw-text answers hold the words only: ``{"words": [...]}``
    per text (the tags of a segmentation model carry no label)."""

    word_rule = ("a word starts at the first character, at every character whose tag is '-B' or '-S' and "
                 "(whitespace 'split') after whitespace; whitespace belongs to no word under 'split'; the "
                 "answer is the words alone")

    def _results(self, texts, char_ids, whitespace):
        """``[{"words": [...]}]`` of ``texts`` (list of str) from their per-character tag ids end to end."""
        return [{"words": result["words"]} for result in super()._results(texts, char_ids, whitespace)]


def load_official_seg(model_dir=None):
    """(model, preprocessor, tag_names) of the official seg model, ready for inference.

    Args:
        model_dir: a ``seg_model`` folder (default: fetched from the pinned ``LAC`` distribution).

    Returns:
        model: :class:`~nlp.lac.model.BiGRUCRF` in eval mode (float32; embedding (8224, 96), 4 tags).
        preprocessor: :class:`~nlp.lac.preprocess.TableCharPreprocessor` (one id per character).
        tag_names: ``["-B", "-I", "-E", "-S"]``, indexed by tag id.
    """
    state, tables = read_official(model_dir, member=LAC_SEG_MODEL_DIR)
    model = BiGRUCRF.from_state_dict(state)
    model.eval()
    return model, TableCharPreprocessor(tables.word2id, tables.q2b, tables.oov_id), tables.tag_names


def load_official_seg_task(model_dir=None, **task_options):
    """A :class:`WordSegmentation` task running the official seg model (``task_options`` as for
    :func:`~nlp.lac.task.load_official_task`; whitespace grouped as LAC groups it unless they say
    otherwise). ``task.predict(["百度是一家高科技公司"])`` gives ``[{"words": ["百度", "是", "一家", "高科技", "公司"]}]``."""
    model, preprocessor, tag_names = load_official_seg(model_dir)
    task_options.setdefault("whitespace", "official")
    return WordSegmentation(model, preprocessor=preprocessor, tag_names=tag_names, **task_options)
