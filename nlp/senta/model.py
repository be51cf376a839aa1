"""Senta sentiment classifiers: BOW, CNN, GRU, LSTM and BiLSTM over token ids.

After Baidu's Senta nets (PaddleNLP 2019, ``models/classification/nets.py``):
an embedding, an encoder, a pooling over time, then ``tanh -> Linear(hidden2)
-> tanh -> Linear(num_classes)``. Every model honours ``lengths``: positions at
or beyond a sequence's length never change its scores, whatever ids they hold
(BOW averages valid positions only; CNN zeroes padded embeddings and pools
over valid positions; the RNNs run inside each sequence's length and pool over
valid positions only). The CNN and the RNNs pool by ``max`` or ``maxmean``
(the max and the mean over valid positions side by side, twice as many
features, :func:`pool_over_time`); the RNNs also by ``attention``.

Every model can add fastText's hashed character n-grams to its input
(``ngrams`` n > 1, ``buckets`` rows; off by default): each position's
embedding becomes the sum of its token's embedding and those of the 2..n-grams
of consecutive ids that end there (:class:`NGramEmbedding`).

Every model can read LAC's trunk instead of its own embedding (``trunk``: the arguments of
:class:`~nlp.lac.encoder.LacEncoder`, e.g. ``{layers: 2, freeze: all}``; ids from the ``lac`` tokeniser):
the official embedding and BiGRU layers give each position 128 (embeddings alone) or 256 features, which
the model's own encoder and pooling read as they read embeddings; hashed n-grams of the trunk's ids, as wide
as its features, can be added to them as to an embedding.

Two options serve training only: ``token_dropout`` p zeroes whole positions'
embeddings with probability p (the kept ones scaled by 1 / (1 - p)), and
``pretrained`` names a vector source (``lac``, ``skipgram`` or a vectors file,
:mod:`nlp.pretrain.vectors`) that :meth:`init_weights` starts the character
rows from, by token (the task names the rows' tokens with ``use_vocabulary``).

Shapes (all models): ``forward(ids (N, L) int64, lengths (N,) int64 with
1 <= lengths <= L, or None for full rows) -> logits (N, num_classes)``.
"""
import numpy

import framework
import framework.nn.functional as F
from framework import nn
from framework.registry import MODELS
from nlp.common import lengths_mask
from nlp.lac.encoder import build_trunk
from nlp.pretrain.vectors import start_embedding

__all__ = ["SentaBOW", "SentaCNN", "SentaGRU", "SentaLSTM", "SentaBiLSTM", "NGramEmbedding", "hash_ngrams",
           "mask_bias", "pool_over_time", "TIME_POOLINGS"]

_NEG_INF = float("-inf")
TIME_POOLINGS = ("max", "maxmean")    # the poolings over time of the CNN and the RNNs (the RNNs add 'attention')


def mask_bias(mask, dtype):
    """A Tensor (N, L) of ``dtype``: 0 where ``mask`` (N, L) is True, -inf elsewhere.

    Added to scores before a max or softmax over L, it removes the masked positions.
    """
    device = mask.device
    return framework.where(mask, framework.to_tensor(numpy.zeros((), dtype), device=device),
                           framework.to_tensor(numpy.full((), _NEG_INF, dtype), device=device))


def pool_over_time(h, lengths, pooling):
    """Pool h (N, L, D) over each sequence's valid positions t < lengths[n] (lengths (N,) or None: all L):
    ``max`` -> (N, D); ``maxmean`` -> (N, 2 D), the max then the mean (one pass, :func:`F.sequence_pool`)."""
    return F.sequence_pool(h, lengths, "max" if pooling == "max" else "max_average")


def _pooled_width(pooling, width):
    """The width of :func:`pool_over_time`'s output over ``width`` features (attention keeps the width)."""
    return 2 * width if pooling == "maxmean" else width


def hash_ngrams(ids, n, buckets):
    """Hashed ids (N, L) of the n-grams of consecutive ids that end at each position of ``ids`` (N, L).

    ``code[i, t]`` in [0, buckets) hashes ``ids[i, t - n + 1 .. t]`` (start
    with n, then ``code = (code * 1000003 + id) % buckets`` for each id in
    order, id 0 standing before the first position). Returns a Tensor.
    """
    return F.hashed_ngrams(ids, (n,), buckets, ending=True)[:, :, 0]


class NGramEmbedding(nn.Embedding):
    """fastText's bag of character n-grams, per position: one table of ``buckets`` rows for every n-gram.

    Position t gets the sum of the embeddings of the 2..``ngrams``-grams of
    consecutive ids that end at t (:func:`hash_ngrams`) and lie wholly inside
    the sequence; positions beyond the length, and the first n - 1 positions
    for an n-gram, add nothing.

    Shape: ids (N, L), mask (N, L) bool (valid positions) -> (N, L, embedding_dim).
    """

    def __init__(self, ngrams, buckets, embedding_dim):
        if ngrams < 2 or buckets < 1:
            raise ValueError(f"NGramEmbedding: need ngrams >= 2 and buckets >= 1, got ngrams={ngrams}, "
                             f"buckets={buckets}")
        super().__init__(buckets, embedding_dim)
        self.ngrams = int(ngrams)

    def forward(self, ids, mask):
        total = None
        for n, keep in self._kept(mask):
            vectors = super().forward(hash_ngrams(ids, n, self.num_embeddings))          # (N, L, E)
            kept = vectors * keep.unsqueeze(-1)
            total = kept if total is None else total + kept
        return total

    def count(self, mask):
        """The number of n-grams inside each sequence of ``mask`` (N, L): a float32 Tensor (N, 1)."""
        counts = None
        for _, keep in self._kept(mask, numpy.float32):
            count = keep.sum(axis=1, keepdim=True)
            counts = count if counts is None else counts + count
        return counts

    def _kept(self, mask, dtype=None):
        """(n, keep) for n = 2..ngrams: ``keep`` (N, L) of ``dtype`` (default: the table's), 1 where an n-gram
        inside the sequence ends, else 0 (all 0 for n > L)."""
        dtype = dtype or self.weight.dtype
        valid = mask.astype(dtype)
        for n in range(2, self.ngrams + 1):
            before = F.sequence_mask(framework.to_tensor(numpy.array([n - 1]), device=mask.device),
                                     maxlen=mask.shape[1], dtype=dtype)                 # (1, L): t < n - 1
            yield n, valid * (1 - before)


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
    """Shared parts: the embedding (row ``padding_idx`` zero) or LAC's trunk (``trunk``, a built
    :class:`~nlp.lac.encoder.LacEncoder`), the optional hashed n-gram embedding (``ngrams`` > 1:
    :class:`NGramEmbedding` of ``buckets`` rows, added per position) and the classifier head."""

    def __init__(self, vocab_size, emb_dim, features, hidden2, num_classes, padding_idx, dropout, ngrams, buckets,
                 token_dropout, pretrained, trunk=None):
        if trunk is not None and pretrained:
            raise ValueError(f"{type(self).__name__}: a trunk takes no pretrained vectors (it has its own)")
        if ngrams < 1 or (ngrams > 1 and buckets < 1):
            raise ValueError(f"{type(self).__name__}: need ngrams >= 1, and buckets >= 1 when ngrams > 1; "
                             f"got ngrams={ngrams}, buckets={buckets}")
        if not 0 <= token_dropout < 1:
            raise ValueError(f"{type(self).__name__}: token_dropout must lie in [0, 1), got {token_dropout}")
        super().__init__()
        self.vocab_size, self.num_classes = int(vocab_size), int(num_classes)
        self.ngrams, self.buckets = int(ngrams), int(buckets)
        self.token_dropout, self.pretrained, self.vocab_tokens = float(token_dropout), pretrained, None
        if trunk is None:
            self.embedding = nn.Embedding(vocab_size, emb_dim, padding_idx=padding_idx)
        else:
            self.trunk = trunk
        if self.ngrams > 1:
            self.ngram_embedding = NGramEmbedding(self.ngrams, self.buckets, emb_dim)
        self.emb_dropout = nn.Dropout(dropout)
        self.classifier = _Classifier(features, hidden2, num_classes, dropout)

    def use_vocabulary(self, tokens):
        """Name the token of each embedding row (``tokens``: vocab_size str, in id order), which
        :meth:`init_weights` needs to start the rows from ``pretrained`` vectors or the trunk; the task calls it."""
        self.vocab_tokens = list(tokens)
        if hasattr(self, "trunk"):
            self.trunk.use_vocabulary(tokens)

    def init_weights(self):
        """Start the embedding rows of the tokens ``pretrained`` has vectors for (see
        :func:`nlp.pretrain.vectors.start_embedding`); returns the number of rows set (0 without ``pretrained``).
        With a trunk, its official weights (:meth:`~nlp.lac.encoder.LacEncoder.init_weights`).
        Training calls it once, before the first step."""
        if hasattr(self, "trunk"):
            return self.trunk.init_weights()
        if not self.pretrained:
            return 0
        if self.vocab_tokens is None:
            raise ValueError(f"{type(self).__name__}: pretrained={self.pretrained!r} needs the vocabulary's tokens "
                             f"(use_vocabulary) before init_weights")
        tokens = self.vocab_tokens + [""] * (self.vocab_size - len(self.vocab_tokens))   # rows beyond the vocabulary
        return start_embedding(self.embedding.weight, tokens, self.pretrained, type(self).__name__)

    def embed(self, ids, lengths):
        """(embeddings (N, L, E) with padded positions zeroed, valid mask (N, L)); with n-grams each
        position's embedding is its token's plus those of the n-grams ending there; in training,
        ``token_dropout`` zeroes whole positions (scaling the others by 1 / (1 - p))."""
        mask = lengths_mask(ids, lengths, "Senta")
        emb = self.trunk(ids, lengths) if hasattr(self, "trunk") else self.embedding(ids)   # (N, L, E)
        if self.ngrams > 1:
            emb = emb + self.ngram_embedding(ids, mask)
        emb = self.emb_dropout(emb)
        keep = mask.astype(emb.dtype).unsqueeze(-1)                          # (N, L, 1)
        if self.training and self.token_dropout:
            keep = F.dropout(keep, self.token_dropout)                        # whole positions, rescaled
        return emb * keep, mask

    def forward(self, ids, lengths=None):
        emb, mask = self.embed(ids, lengths)
        return self.classifier(self.encode(ids, emb, mask, lengths))

    def encode(self, ids, emb, mask, lengths):
        """Pooled features (N, features) of ids (N, L) and their masked embeddings (N, L, E)."""
        raise NotImplementedError


class SentaBOW(_Senta):
    """Bag of words: the mean, sum or ``sum / sqrt(count)`` (Paddle's 'sqrt' sequence pooling) of the
    valid positions' embeddings, then ``tanh -> Linear(hidden) -> tanh`` and the head.

    With ``ngrams`` n > 1 the bag also holds every 2..n-gram of consecutive ids
    that lies inside the sequence (:class:`NGramEmbedding`, fastText's bag of
    n-grams); the mean is then over all unigrams and n-grams of the sequence.

    Args: vocab_size, emb_dim (E), hidden, hidden2, num_classes; pooling 'mean',
    'sum' or 'sqrt'; ngrams and buckets; padding_idx (the id of padding);
    dropout on embeddings and pooled features; token_dropout, pretrained and trunk (see the module).

    Shape: ids (N, L), lengths (N,) -> logits (N, num_classes).
    """

    def __init__(self, vocab_size: int, emb_dim: int = 128, hidden: int = 128, hidden2: int = 96,
                 num_classes: int = 2, pooling: str = "mean", ngrams: int = 1, buckets: int = 0,
                 padding_idx: int = 0, dropout: float = 0.0, token_dropout: float = 0.0, pretrained: str = None,
                 trunk: dict = None):
        if pooling not in ("mean", "sum", "sqrt"):
            raise ValueError(f"SentaBOW: pooling must be 'mean', 'sum' or 'sqrt', got {pooling!r}")
        built = build_trunk(vocab_size, trunk, "SentaBOW")
        width = built.width if built else emb_dim
        super().__init__(vocab_size, width, hidden, hidden2, num_classes, padding_idx, dropout, ngrams, buckets,
                         token_dropout, pretrained, built)
        self.pooling = pooling
        self.fc = nn.Linear(width, hidden)

    def encode(self, ids, emb, mask, lengths):
        pooled = emb.sum(axis=1)                                           # (N, E)
        if self.pooling != "sum":
            count = mask.astype(emb.dtype).sum(axis=1, keepdim=True)       # (N, 1) items in each bag
            if self.ngrams > 1:
                count = count + self.ngram_embedding.count(mask)
            pooled = pooled / (count if self.pooling == "mean" else count.sqrt())
        return self.fc(F.tanh(pooled))


class SentaCNN(_Senta):
    """Convolution over time (``window`` wide, ``filters`` channels, tanh), pooled over valid positions, head.

    Args: vocab_size, emb_dim, filters, window (odd, so outputs align with
    inputs), hidden2, num_classes, pooling ('max', or 'maxmean': 2 * filters
    features, :func:`pool_over_time`), padding_idx, dropout, ngrams and buckets
    (hashed n-gram embeddings added per position, see :class:`NGramEmbedding`),
    token_dropout, pretrained and trunk (see the module).

    Shape: ids (N, L), lengths (N,) -> logits (N, num_classes).
    """

    def __init__(self, vocab_size: int, emb_dim: int = 128, filters: int = 128, window: int = 3,
                 hidden2: int = 96, num_classes: int = 2, pooling: str = "max", padding_idx: int = 0,
                 dropout: float = 0.0, ngrams: int = 1, buckets: int = 0, token_dropout: float = 0.0,
                 pretrained: str = None, trunk: dict = None):
        if window < 1 or window % 2 == 0:
            raise ValueError(f"SentaCNN: window must be a positive odd number, got {window}")
        if pooling not in TIME_POOLINGS:
            raise ValueError(f"SentaCNN: pooling must be 'max' or 'maxmean', got {pooling!r}")
        built = build_trunk(vocab_size, trunk, "SentaCNN")
        width = built.width if built else emb_dim
        super().__init__(vocab_size, width, _pooled_width(pooling, filters), hidden2, num_classes, padding_idx,
                         dropout, ngrams, buckets, token_dropout, pretrained, built)
        self.pooling = pooling
        self.conv = nn.Conv1D(width, filters, window, padding=window // 2)

    def encode(self, ids, emb, mask, lengths):
        h = F.tanh(self.conv(emb.transpose([0, 2, 1])))                   # (N, filters, L)
        return pool_over_time(h.transpose([0, 2, 1]), lengths, self.pooling)  # (N, L, filters) -> (N, features)


class _SentaRNN(_Senta):
    """Recurrent encoder (``cell`` 'gru' or 'lstm', one or both directions), pooled over valid positions.

    ``pooling`` 'max' takes the max over valid positions, 'maxmean' the max and
    the mean side by side (:func:`pool_over_time`); 'attention' the weighted sum
    with weights ``softmax_t(v . tanh(W h_t))`` over valid positions.
    """

    def __init__(self, cell, direction, vocab_size, emb_dim, hidden, hidden2, num_classes, pooling, padding_idx,
                 dropout, ngrams, buckets, token_dropout, pretrained, trunk):
        if pooling not in TIME_POOLINGS + ("attention",):
            raise ValueError(f"{type(self).__name__}: pooling must be 'max', 'maxmean' or 'attention', "
                             f"got {pooling!r}")
        features = hidden * (2 if direction == "bidirect" else 1)
        built = build_trunk(vocab_size, trunk, type(self).__name__)
        width = built.width if built else emb_dim
        super().__init__(vocab_size, width, _pooled_width(pooling, features), hidden2, num_classes, padding_idx,
                         dropout, ngrams, buckets, token_dropout, pretrained, built)
        rnn = nn.GRU if cell == "gru" else nn.LSTM
        self.rnn = rnn(width, hidden, direction=direction)
        self.pooling = pooling
        if pooling == "attention":
            self.attention = nn.Linear(features, features)
            self.attention_score = nn.Linear(features, 1, bias_attr=False)

    def encode(self, ids, emb, mask, lengths):
        h, _ = self.rnn(emb, lengths)                                      # (N, L, D)
        if self.pooling != "attention":
            return pool_over_time(h, lengths, self.pooling)
        scores = self.attention_score(F.tanh(self.attention(h))).squeeze(-1)   # (N, L, 1) -> (N, L)
        weights = F.softmax(scores + mask_bias(mask, scores.dtype), axis=1)
        return (weights.unsqueeze(-1) * h).sum(axis=1)                     # (N, L, 1) * (N, L, D) -> (N, D)


class SentaGRU(_SentaRNN):
    """GRU over the embeddings, pooled over valid positions, head.

    Args: vocab_size, emb_dim, hidden (GRU size), hidden2, num_classes, pooling
    ('max', 'maxmean' or 'attention'), padding_idx, dropout, ngrams and buckets (hashed
    n-gram embeddings added per position, see :class:`NGramEmbedding`),
    token_dropout, pretrained and trunk (see the module).

    Shape: ids (N, L), lengths (N,) -> logits (N, num_classes).
    """

    def __init__(self, vocab_size: int, emb_dim: int = 128, hidden: int = 128, hidden2: int = 96,
                 num_classes: int = 2, pooling: str = "max", padding_idx: int = 0, dropout: float = 0.0,
                 ngrams: int = 1, buckets: int = 0, token_dropout: float = 0.0, pretrained: str = None,
                 trunk: dict = None):
        super().__init__("gru", "forward", vocab_size, emb_dim, hidden, hidden2, num_classes, pooling, padding_idx,
                         dropout, ngrams, buckets, token_dropout, pretrained, trunk)


class SentaLSTM(_SentaRNN):
    """LSTM over the embeddings, pooled over valid positions, head.

    Args: as :class:`SentaGRU`. Shape: ids (N, L), lengths (N,) -> logits (N, num_classes).
    """

    def __init__(self, vocab_size: int, emb_dim: int = 128, hidden: int = 128, hidden2: int = 96,
                 num_classes: int = 2, pooling: str = "max", padding_idx: int = 0, dropout: float = 0.0,
                 ngrams: int = 1, buckets: int = 0, token_dropout: float = 0.0, pretrained: str = None,
                 trunk: dict = None):
        super().__init__("lstm", "forward", vocab_size, emb_dim, hidden, hidden2, num_classes, pooling, padding_idx,
                         dropout, ngrams, buckets, token_dropout, pretrained, trunk)


class SentaBiLSTM(_SentaRNN):
    """Bidirectional LSTM (the reverse direction inside each length), pooled over valid positions, head.

    Args: as :class:`SentaGRU`; the pooled features are 2 * hidden wide (4 * hidden with 'maxmean').
    Shape: ids (N, L), lengths (N,) -> logits (N, num_classes).
    """

    def __init__(self, vocab_size: int, emb_dim: int = 128, hidden: int = 128, hidden2: int = 96,
                 num_classes: int = 2, pooling: str = "max", padding_idx: int = 0, dropout: float = 0.0,
                 ngrams: int = 1, buckets: int = 0, token_dropout: float = 0.0, pretrained: str = None,
                 trunk: dict = None):
        super().__init__("lstm", "bidirect", vocab_size, emb_dim, hidden, hidden2, num_classes, pooling, padding_idx,
                         dropout, ngrams, buckets, token_dropout, pretrained, trunk)


MODELS.register(SentaBOW)
MODELS.register(SentaCNN)
MODELS.register(SentaGRU)
MODELS.register(SentaLSTM)
MODELS.register(SentaBiLSTM)
