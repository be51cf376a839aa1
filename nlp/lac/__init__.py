"""Baidu's LAC: the official model converted to oar, its preprocessing, and user dictionaries.

- :mod:`nlp.lac.official`: fetch, convert and cache ``LAC/lac_model``; :func:`load_official_task`.
- :mod:`nlp.lac.segment`: LAC's dictionary-based coarse segmentation.
- :mod:`nlp.lac.preprocess`: text -> ids (official mixed word/character ids, or characters).
- :mod:`nlp.lac.customization`: user dictionaries (``load_customization``).
- :mod:`nlp.lac.tables`: readers for LAC's ``conf/*.dic`` tables.
- :mod:`nlp.lac.benchmarks`: inference speed (``run_all`` for ``oar bench``).
"""
from .customization import Customization, load_customization
from .official import load_official, load_official_task
from .preprocess import CharPreprocessor, OfficialPreprocessor
from .segment import CoarseSegmenter

__all__ = ["Customization", "load_customization", "load_official", "load_official_task", "CharPreprocessor",
           "OfficialPreprocessor", "CoarseSegmenter"]
