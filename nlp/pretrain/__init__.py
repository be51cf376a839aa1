"""Pretrained token vectors for the text tasks: where they come from and how a model's embedding starts from them.

- :mod:`nlp.pretrain.vectors`: vector sources (``lac``, the official LAC
  model's 128-d character rows; ``skipgram``, oar's own; or a vectors file),
  read into ``{token: vector}``, and the start of an embedding table from them.
- :mod:`nlp.pretrain.skipgram`: oar's own character vectors, skip-gram on
  People's Daily and the training reviews, written on the framework.
- :mod:`nlp.pretrain.store`: the vectors file (``.npz`` of tokens and vectors).
"""
