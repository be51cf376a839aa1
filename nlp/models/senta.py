"""Senta sentiment classifiers: BOW, CNN, GRU, LSTM and BiLSTM over token ids.

After Baidu's Senta nets (PaddleNLP 2019, ``models/classification/nets.py``):
an embedding, an encoder, a pooling over time, then ``tanh -> Linear(hidden2)
-> tanh -> Linear(num_classes)``. Every model honours ``lengths``: positions at
or beyond a sequence's length never change its scores, whatever ids they hold
(BOW averages valid positions only; CNN zeroes padded embeddings and takes the
max over valid positions; the RNNs run inside each sequence's length and pool
over valid positions only, by max or attention).

Shapes (all models): ``forward(ids (N, L) int64, lengths (N,) int64 with
1 <= lengths <= L, or None for full rows) -> logits (N, num_classes)``.
"""
import numpy

import framework
import framework.nn.functional as F
from framework import nn
from framework.registry import MODELS

__all__ = ["SentaBOW", "SentaCNN", "SentaGRU", "SentaLSTM", "SentaBiLSTM", "valid_mask", "mask_bias", "masked_max"]

_NEG_INF = float("-inf")


def valid_mask(ids, lengths):
    """Bool mask (N, L) of the valid positions of padded ``ids`` (N, L): ``mask[i, t] = t < lengths[i]``.

    ``lengths`` (N,) integers in [1, L], or None (every position valid).
    """
    if ids.ndim != 2:
        raise ValueError(f"Senta: ids must be (N, L), got shape {ids.shape}")
    n, steps = ids.shape
    if lengths is None:
        return framework.to_tensor(numpy.ones((n, steps), dtype=bool), device=ids.device)
    values = lengths.numpy()
    if lengths.shape != (n,) or lengths.dtype.kind not in "iu":
        raise ValueError(f"Senta: lengths must be (N,) = ({n},) integers, got {lengths.dtype} {lengths.shape}")
    if n and (values.min() < 1 or values.max() > steps):
        raise ValueError(f"Senta: lengths must lie in [1, {steps}] for ids of shape {ids.shape}, "
                         f"got [{values.min()}, {values.max()}]")
    return F.sequence_mask(lengths, maxlen=steps)


def mask_bias(mask, dtype):
    """A constant Tensor (N, L) of ``dtype``: 0 where ``mask`` (N, L) is True, -inf elsewhere.

    Added to scores before a max or softmax over L, it removes the masked positions.
    """
    xp = framework.backend.get_array_module(mask.data)
    return framework.to_tensor(xp.where(mask.data, 0.0, _NEG_INF).astype(dtype), device=mask.device)


def masked_max(h, mask):
    """Max of h (N, L, D) over the valid positions of mask (N, L): (N, D)."""
    return (h + mask_bias(mask, h.dtype).unsqueeze(-1)).max(axis=1)             # (N, L, D) + (N, L, 1)


class _Classifier(nn.Layer):
    """Senta's head: tanh -> Linear(in_features, hidden2) -> tanh -> Linear(hidden2, num_classes).

    Shape: (N, in_features) -> (N, num_classes).
    """

    def __init__(self, in_features, hidden2, num_classes, dropout):
        super().__init__()
        self.dropout = nn.Dropout(dropout)
        self.fc = nn.Linear(in_features, hidden2)
        self.out = nn.Linear(hidden2, num_classes)

    def forward(self, pooled):
        return self.out(F.tanh(self.fc(self.dropout(F.tanh(pooled)))))


class _Senta(nn.Layer):
    """Shared parts: the embedding (row ``padding_idx`` zero) and the classifier head."""

    def __init__(self, vocab_size, emb_dim, features, hidden2, num_classes, padding_idx, dropout):
        super().__init__()
        self.vocab_size, self.num_classes = int(vocab_size), int(num_classes)
        self.embedding = nn.Embedding(vocab_size, emb_dim, padding_idx=padding_idx)
        self.emb_dropout = nn.Dropout(dropout)
        self.classifier = _Classifier(features, hidden2, num_classes, dropout)

    def embed(self, ids, lengths):
        """(embeddings (N, L, E) with padded positions zeroed, valid mask (N, L))."""
        mask = valid_mask(ids, lengths)
        emb = self.emb_dropout(self.embedding(ids))                        # (N, L, E)
        return emb * mask.astype(emb.dtype).unsqueeze(-1), mask

    def forward(self, ids, lengths=None):
        emb, mask = self.embed(ids, lengths)
        return self.classifier(self.encode(ids, emb, mask, lengths))

    def encode(self, ids, emb, mask, lengths):
        """Pooled features (N, features) of ids (N, L) and their masked embeddings (N, L, E)."""
        raise NotImplementedError


class SentaBOW(_Senta):
    """Bag of words: the mean (or sum) of the valid positions' embeddings, then
    ``tanh -> Linear(hidden) -> tanh`` and the head.

    With ``ngrams`` n > 1 the bag also holds every 2..n-gram of consecutive ids
    that lies inside the sequence, hashed into ``buckets`` rows of a second
    embedding table (fastText's bag of n-grams); the mean is then over all
    unigrams and n-grams of the sequence.

    Args: vocab_size, emb_dim (E), hidden, hidden2, num_classes; pooling 'mean'
    or 'sum'; ngrams and buckets; padding_idx (the id of padding); dropout on
    embeddings and pooled features.

    Shape: ids (N, L), lengths (N,) -> logits (N, num_classes).
    """

    def __init__(self, vocab_size: int, emb_dim: int = 128, hidden: int = 128, hidden2: int = 96,
                 num_classes: int = 2, pooling: str = "mean", ngrams: int = 1, buckets: int = 0,
                 padding_idx: int = 0, dropout: float = 0.0):
        if pooling not in ("mean", "sum"):
            raise ValueError(f"SentaBOW: pooling must be 'mean' or 'sum', got {pooling!r}")
        if ngrams < 1 or (ngrams > 1 and buckets < 1):
            raise ValueError(f"SentaBOW: need ngrams >= 1, and buckets >= 1 when ngrams > 1; "
                             f"got ngrams={ngrams}, buckets={buckets}")
        super().__init__(vocab_size, emb_dim, hidden, hidden2, num_classes, padding_idx, dropout)
        self.pooling, self.ngrams, self.buckets = pooling, int(ngrams), int(buckets)
        if self.ngrams > 1:
            self.ngram_embedding = nn.Embedding(self.buckets, emb_dim)
        self.fc = nn.Linear(emb_dim, hidden)

    def encode(self, ids, emb, mask, lengths):
        pooled = emb.sum(axis=1)                                           # (N, E)
        count = mask.astype(emb.dtype).sum(axis=1, keepdim=True)           # (N, 1)
        for n in range(2, min(self.ngrams, ids.shape[1]) + 1):
            grams, valid = self.ngram_ids(ids, mask, n)                   # (N, L - n + 1) each
            weight = valid.astype(emb.dtype).unsqueeze(-1)                 # (N, L - n + 1, 1)
            pooled = pooled + (self.emb_dropout(self.ngram_embedding(grams)) * weight).sum(axis=1)
            count = count + valid.astype(emb.dtype).sum(axis=1, keepdim=True)
        if self.pooling == "mean":
            pooled = pooled / count
        return self.fc(F.tanh(pooled))

    def ngram_ids(self, ids, mask, n):
        """Hashed ids (N, L - n + 1) of the n-grams starting at each position, and their
        validity (the whole n-gram lies inside the sequence); both Tensors. Needs L >= n."""
        xp = framework.backend.get_array_module(ids.data)
        steps = ids.shape[1] - n + 1
        code = xp.full((ids.shape[0], steps), n, dtype=numpy.int64)
        for k in range(n):
            code = (code * 1000003 + ids.data[:, k:k + steps]) % self.buckets
        return framework.to_tensor(code, device=ids.device), mask[:, n - 1:]


class SentaCNN(_Senta):
    """Convolution over time (``window`` wide, ``filters`` channels, tanh), max over valid positions, head.

    Args: vocab_size, emb_dim, filters, window (odd, so outputs align with
    inputs), hidden2, num_classes, padding_idx, dropout.

    Shape: ids (N, L), lengths (N,) -> logits (N, num_classes).
    """

    def __init__(self, vocab_size: int, emb_dim: int = 128, filters: int = 128, window: int = 3,
                 hidden2: int = 96, num_classes: int = 2, padding_idx: int = 0, dropout: float = 0.0):
        if window < 1 or window % 2 == 0:
            raise ValueError(f"SentaCNN: window must be a positive odd number, got {window}")
        super().__init__(vocab_size, emb_dim, filters, hidden2, num_classes, padding_idx, dropout)
        self.conv = nn.Conv1D(emb_dim, filters, window, padding=window // 2)

    def encode(self, ids, emb, mask, lengths):
        h = F.tanh(self.conv(emb.transpose([0, 2, 1])))                   # (N, filters, L)
        return masked_max(h.transpose([0, 2, 1]), mask)                   # (N, L, filters) -> (N, filters)


class _SentaRNN(_Senta):
    """Recurrent encoder (``cell`` 'gru' or 'lstm', one or both directions), pooled over valid positions.

    ``pooling`` 'max' takes the max over valid positions; 'attention' the
    weighted sum with weights ``softmax_t(v . tanh(W h_t))`` over valid positions.
    """

    def __init__(self, cell, direction, vocab_size, emb_dim, hidden, hidden2, num_classes, pooling, padding_idx,
                 dropout):
        if pooling not in ("max", "attention"):
            raise ValueError(f"{type(self).__name__}: pooling must be 'max' or 'attention', got {pooling!r}")
        features = hidden * (2 if direction == "bidirect" else 1)
        super().__init__(vocab_size, emb_dim, features, hidden2, num_classes, padding_idx, dropout)
        rnn = nn.GRU if cell == "gru" else nn.LSTM
        self.rnn = rnn(emb_dim, hidden, direction=direction)
        self.pooling = pooling
        if pooling == "attention":
            self.attention = nn.Linear(features, features)
            self.attention_score = nn.Linear(features, 1, bias_attr=False)

    def encode(self, ids, emb, mask, lengths):
        h, _ = self.rnn(emb, lengths)                                      # (N, L, D)
        if self.pooling == "max":
            return masked_max(h, mask)
        scores = self.attention_score(F.tanh(self.attention(h))).squeeze(-1)   # (N, L, 1) -> (N, L)
        weights = F.softmax(scores + mask_bias(mask, scores.dtype), axis=1)
        return (weights.unsqueeze(-1) * h).sum(axis=1)                     # (N, L, 1) * (N, L, D) -> (N, D)


class SentaGRU(_SentaRNN):
    """GRU over the embeddings, max (or attention) pooling over valid positions, head.

    Args: vocab_size, emb_dim, hidden (GRU size), hidden2, num_classes, pooling
    ('max' or 'attention'), padding_idx, dropout.

    Shape: ids (N, L), lengths (N,) -> logits (N, num_classes).
    """

    def __init__(self, vocab_size: int, emb_dim: int = 128, hidden: int = 128, hidden2: int = 96,
                 num_classes: int = 2, pooling: str = "max", padding_idx: int = 0, dropout: float = 0.0):
        super().__init__("gru", "forward", vocab_size, emb_dim, hidden, hidden2, num_classes, pooling, padding_idx,
                         dropout)


class SentaLSTM(_SentaRNN):
    """LSTM over the embeddings, max (or attention) pooling over valid positions, head.

    Args: as :class:`SentaGRU`. Shape: ids (N, L), lengths (N,) -> logits (N, num_classes).
    """

    def __init__(self, vocab_size: int, emb_dim: int = 128, hidden: int = 128, hidden2: int = 96,
                 num_classes: int = 2, pooling: str = "max", padding_idx: int = 0, dropout: float = 0.0):
        super().__init__("lstm", "forward", vocab_size, emb_dim, hidden, hidden2, num_classes, pooling, padding_idx,
                         dropout)


class SentaBiLSTM(_SentaRNN):
    """Bidirectional LSTM (the reverse direction inside each length), pooled over valid positions, head.

    Args: as :class:`SentaGRU`; the pooled features are 2 * hidden wide.
    Shape: ids (N, L), lengths (N,) -> logits (N, num_classes).
    """

    def __init__(self, vocab_size: int, emb_dim: int = 128, hidden: int = 128, hidden2: int = 96,
                 num_classes: int = 2, pooling: str = "max", padding_idx: int = 0, dropout: float = 0.0):
        super().__init__("lstm", "bidirect", vocab_size, emb_dim, hidden, hidden2, num_classes, pooling, padding_idx,
                         dropout)


MODELS.register(SentaBOW)
MODELS.register(SentaCNN)
MODELS.register(SentaGRU)
MODELS.register(SentaLSTM)
MODELS.register(SentaBiLSTM)
