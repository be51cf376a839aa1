"""Lexical analysis (LAC): word segmentation, part of speech and named entities in one BiGRU-CRF pass.

The core files, as in every NLP task package:

- :mod:`nlp.lac.data`: the character-tagging dataset (People's Daily or your own ``word/TAG`` file).
- :mod:`nlp.lac.model`: the BiGRU-CRF network (``BiGRUCRF``, registered also as ``lac``).
- :mod:`nlp.lac.task`: the ``LexicalAnalysis`` task; :func:`load_official_task` runs Baidu's official model.
- :mod:`nlp.lac.metrics`: segmentation, POS-aware and entity P/R/F1 (``LexicalMetrics``, ``score_words``).

LAC's own extras beside them:

- :mod:`nlp.lac.official`: fetch, convert and cache the official ``LAC/lac_model`` resources.
- :mod:`nlp.lac.segment`: LAC's dictionary-based coarse segmentation.
- :mod:`nlp.lac.seg`: the official segmentation-only model (``LAC/seg_model``, zoo ``lac_seg``).
- :mod:`nlp.lac.small`: the 2019 PaddleNLP LAC from jieba 0.42.1's parameters (zoo ``lac_small``).
- :mod:`nlp.lac.preprocess`: text -> ids (official mixed word/character ids, or characters).
- :mod:`nlp.lac.customization`: user dictionaries (``load_customization``).
- :mod:`nlp.lac.lexicon`: word lexicons and the per-character lexicon features.
- :mod:`nlp.lac.tables`: readers for LAC's ``conf/*.dic`` tables.
- :mod:`nlp.lac.tokenizer`: the ``lac_word`` tokeniser (LAC's words as tokens for other text tasks).
"""
from .customization import Customization, load_customization
from .preprocess import CharPreprocessor, OfficialPreprocessor
from .segment import CoarseSegmenter
from .task import load_official, load_official_task

__all__ = ["Customization", "load_customization", "load_official", "load_official_task", "CharPreprocessor",
           "OfficialPreprocessor", "CoarseSegmenter"]
