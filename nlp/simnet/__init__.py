"""Text matching (SimNet): do two short texts say the same thing? A score and a 0/1 label.

The core files, as in every NLP task package:

- :mod:`nlp.simnet.builder`: the pair builder over People's Daily; :mod:`nlp.simnet.pairs`: pair and triple
  files; :mod:`nlp.simnet.data`: their datasets.
- :mod:`nlp.simnet.model`: the SimNet encoders (BOW, CNN, GRU, LSTM) with a pointwise or pairwise head.
- :mod:`nlp.simnet.task`: the ``TextMatching`` task (its text pipeline: :mod:`nlp.common`).
- :mod:`nlp.simnet.metrics`: accuracy at the threshold, AUC, ranking accuracy, accuracy per negative type,
  the threshold search, and the scores of any scored pairs (``pair_metrics``).

Its extra: :mod:`nlp.simnet.synonyms`, the thesaurus the pair builder rewrites sentences with.
"""
