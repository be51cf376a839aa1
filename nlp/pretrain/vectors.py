"""Pretrained token vectors: read a source into ``{token: vector}`` and start an embedding's rows from it.

A source is ``"lac"`` (the single characters of Baidu's official LAC model,
128-d rows, read by :func:`nlp.lac.official.official_char_vectors`),
``"skipgram"`` (oar's own character vectors, :func:`nlp.pretrain.skipgram.skipgram_vectors`,
trained once into the cache) or the path of a vectors ``.npz``
(:mod:`nlp.pretrain.store`).
"""
import numpy

from framework import backend

from .skipgram import skipgram_vectors
from .store import load_vectors

__all__ = ["LAC_SOURCE", "SKIPGRAM_SOURCE", "read_vectors", "start_embedding"]

LAC_SOURCE = "lac"
SKIPGRAM_SOURCE = "skipgram"


def read_vectors(source):
    """``{token: float32 (E,) vector}`` of ``source``: 'lac', 'skipgram' or the path of a vectors ``.npz``
    (:func:`nlp.pretrain.store.load_vectors`)."""
    if source == LAC_SOURCE:
        from nlp.lac.official import official_char_vectors   # only training reads them; inference never loads LAC
        return official_char_vectors()
    return load_vectors(skipgram_vectors() if source == SKIPGRAM_SOURCE else source)


def start_embedding(weight, tokens, source, owner="model"):
    """Set the rows of ``weight`` (a Parameter (V, E)) whose token (``tokens``: V str, row order) has a vector in
    ``source``, rescaled so the set rows have the table's own standard deviation. Returns the number of rows set.

    ``owner`` names the model in the errors (vector width other than E, or ``len(tokens) != V``).
    """
    if len(tokens) != weight.shape[0]:
        raise ValueError(f"{owner}: {len(tokens)} vocabulary tokens for an embedding of {weight.shape[0]} rows")
    vectors = read_vectors(source)
    found = [(i, vectors[token]) for i, token in enumerate(tokens) if token in vectors]
    if not found:
        return 0
    rows = numpy.stack([v for _, v in found])                                  # (K, E')
    if rows.shape[1] != weight.shape[1]:
        raise ValueError(f"{owner}: the vectors of {source} have {rows.shape[1]} columns, the embedding "
                         f"{weight.shape[1]}")
    xp = backend.get_array_module(weight.data)
    spread = float(rows.std())
    scale = float(weight.data.std()) / spread if spread > 0 else 1.0      # constant rows stay as given
    index = xp.asarray(numpy.asarray([i for i, _ in found], dtype=numpy.int64))
    weight.data[index] = xp.asarray(rows * scale, dtype=weight.data.dtype)
    return len(found)
