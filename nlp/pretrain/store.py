"""The vectors file: ``tokens`` (K,) str and ``vectors`` (K, E) float16 in one ``.npz``, read with
``allow_pickle=False`` (loading never runs code)."""
import os

import numpy

from framework.errors import MissingFileError
from framework.serialization import atomic_write

__all__ = ["save_vectors", "load_vectors"]


def save_vectors(path, tokens, vectors):
    """Write ``tokens`` (K,) str and ``vectors`` (K, E) as a vectors ``.npz`` (float16) atomically; returns path."""
    tokens = numpy.asarray(list(tokens), dtype=str)
    vectors = numpy.asarray(vectors, dtype=numpy.float16)
    if vectors.ndim != 2 or len(tokens) != len(vectors):
        raise ValueError(f"save_vectors: tokens {tokens.shape} and vectors {vectors.shape} must be (K,) and (K, E)")
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with atomic_write(path, "wb") as f:
        numpy.savez(f, tokens=tokens, vectors=vectors)
    return path


def load_vectors(path):
    """``{token: float32 (E,) vector}`` of a vectors file written by :func:`save_vectors`.

    A missing file raises MissingFileError; a file without ``tokens`` and
    ``vectors`` of matching length raises ValueError naming it.
    """
    if not os.path.isfile(path):
        raise MissingFileError(f"pretrained vectors not found: {path} (give 'lac', 'skipgram' or a vectors .npz file)")
    with numpy.load(path, allow_pickle=False) as data:
        if "tokens" not in data or "vectors" not in data:
            raise ValueError(f"{path}: a vectors file holds 'tokens' and 'vectors', found {sorted(data.files)}")
        tokens, vectors = data["tokens"], data["vectors"]
    if vectors.ndim != 2 or len(tokens) != len(vectors):
        raise ValueError(f"{path}: 'tokens' {tokens.shape} and 'vectors' {vectors.shape} must be (K,) and (K, E)")
    return {str(token): row for token, row in zip(tokens.tolist(), vectors.astype(numpy.float32))}
