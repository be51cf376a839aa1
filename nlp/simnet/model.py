"""SimNet short-text matching: one encoder (BOW, CNN, GRU or LSTM) shared by both texts, then a head.

After Baidu's SimNet (PaddleNLP 2019, ``models/matching/{bow,cnn,gru,lstm}.py``):
both texts go through the same embedding and encoder to one vector each, and
a head compares the two vectors.

- ``head="pointwise"``: the features ``[|u - v|, u * v]`` (symmetric, so the
  order of the two texts never matters) -> ``Linear -> ReLU -> Linear(2)``;
  returns logits (N, 2), trained with softmax cross entropy.
- ``head="pairwise"``: ``tanh(Linear(u))`` and ``tanh(Linear(v))`` -> their
  cosine; returns scores (N,) in [-1, 1], trained with a hinge loss on
  (query, positive, negative) triples.

Every model can read LAC's trunk instead of its own embedding (``trunk``: the arguments of
:class:`~nlp.lac.encoder.LacEncoder`, e.g. ``{layers: 2, freeze: all}``; ids from the ``lac`` tokeniser, so
``vocab_size`` 58,224): the official embedding and BiGRU give each position 128 (embeddings alone) or 256
features, which the encoder reads as it reads embeddings (``emb_dim`` is then the trunk's width).

Every encoder honours ``lengths``: positions at or beyond a text's length
never change its vector, whatever ids they hold (BOW sums valid positions
only; CNN zeroes padded embeddings and takes the max over valid positions;
GRU/LSTM run inside each length and pool over valid positions).

Each model also holds ``threshold`` (a float32 buffer (1,), saved with the
weights): the score from which a pair counts as a match (the task chooses it
on dev data).

Shapes: ``encode(ids (N, L) int64, lengths (N,) int64 in [1, L]) -> (N, D)``;
``forward(a_ids (N, La), a_lengths (N,), b_ids (N, Lb), b_lengths (N,))`` ->
logits (N, 2) (pointwise) or cosine scores (N,) (pairwise).
"""
import numpy

import framework
import framework.nn.functional as F
from framework import nn
from framework.registry import MODELS
from nlp.common import lengths_mask
from nlp.lac.encoder import build_trunk

__all__ = ["HEADS", "FLOAT32_BUFFERS", "SimNetBOW", "SimNetCNN", "SimNetGRU", "SimNetLSTM"]

HEADS = ("pointwise", "pairwise")
#: Buffers that shipped weights keep in float32 when the rest is exported in float16 (the dev-chosen threshold).
FLOAT32_BUFFERS = ("threshold",)
_DEFAULT_THRESHOLD = {"pointwise": 0.5, "pairwise": 0.5}


class _SimNet(nn.Layer):
    """The shared parts: embedding (row ``padding_idx`` zero) or LAC's trunk (``trunk``, a built
    :class:`~nlp.lac.encoder.LacEncoder`), the head and the threshold buffer.

    Subclasses call :meth:`build_head` with the encoder's vector size and implement :meth:`encode_embedded`.
    """

    def __init__(self, vocab_size, emb_dim, head, padding_idx, trunk=None):
        if head not in HEADS:
            raise ValueError(f"{type(self).__name__}: head must be one of {', '.join(HEADS)}, got {head!r}")
        super().__init__()
        self.vocab_size, self.head = int(vocab_size), head
        if trunk is None:
            self.embedding = nn.Embedding(vocab_size, emb_dim, padding_idx=padding_idx)
        else:
            self.trunk = trunk
        self.register_buffer("threshold", framework.to_tensor(
            numpy.array([_DEFAULT_THRESHOLD[head]], dtype=numpy.float32)))

    def build_head(self, features, hidden):
        """Create the head's layers for encoder vectors of size ``features``."""
        if self.head == "pointwise":
            self.fc = nn.Linear(2 * features, hidden)
            self.out = nn.Linear(hidden, 2)
        else:
            self.proj = nn.Linear(features, hidden)

    def use_vocabulary(self, tokens):
        """Name the token of each id (``tokens``: str in id order), which the trunk needs to start its rows;
        the task calls it."""
        if hasattr(self, "trunk"):
            self.trunk.use_vocabulary(tokens)

    def init_weights(self):
        """With a trunk, its official weights (:meth:`~nlp.lac.encoder.LacEncoder.init_weights`; the number of
        rows set), else 0. Training calls it once, before the first step."""
        return self.trunk.init_weights() if hasattr(self, "trunk") else 0

    def encode(self, ids, lengths=None):
        """The vectors (N, D) of the texts ``ids`` (N, L) with ``lengths`` (N,)."""
        mask = lengths_mask(ids, lengths, "SimNet")
        emb = self.trunk(ids, lengths) if hasattr(self, "trunk") else self.embedding(ids)
        emb = emb * mask.astype(emb.dtype).unsqueeze(-1)       # (N, L, E), padding zeroed
        return self.encode_embedded(emb, mask, lengths)

    def encode_many(self, *sides):
        """Vectors of several batches of texts in one pass: ``sides`` are ``(ids (N_k, L_k), lengths (N_k,))``;
        returns one (N_k, D) Tensor per side. The ids are padded to the widest side and stacked, so the
        encoder runs once (the same result as :meth:`encode` on each side, faster)."""
        width = max(ids.shape[1] for ids, _ in sides)
        xp = framework.backend.get_array_module(sides[0][0].data)
        device = sides[0][0].device
        stacked = framework.concat([ids if ids.shape[1] == width else framework.pad(ids, [0, width - ids.shape[1]])
                                    for ids, _ in sides], axis=0)
        lengths = framework.concat([framework.to_tensor(xp.full(ids.shape[0], ids.shape[1], dtype=numpy.int64),
                                                        device=device) if lengths is None else
                                    lengths if isinstance(lengths, framework.Tensor) else framework.to_tensor(lengths)
                                    for ids, lengths in sides])
        vectors = self.encode(stacked, lengths)
        bounds = numpy.cumsum([0] + [ids.shape[0] for ids, _ in sides]).tolist()
        return [vectors[a:b] for a, b in zip(bounds[:-1], bounds[1:])]

    def encode_embedded(self, emb, mask, lengths):
        """(N, D) from the masked embeddings (N, L, E) and the valid mask (N, L)."""
        raise NotImplementedError

    def match(self, u, v):
        """Scores of vector pairs u, v (N, D): logits (N, 2) (pointwise) or cosines (N,) (pairwise)."""
        if self.head == "pointwise":
            features = framework.concat([(u - v).abs(), u * v], axis=-1)      # (N, 2D)
            return self.out(F.relu(self.fc(features)))
        return (F.normalize(F.tanh(self.proj(u)), axis=-1) * F.normalize(F.tanh(self.proj(v)), axis=-1)).sum(axis=-1)

    def forward(self, a_ids, a_lengths, b_ids, b_lengths):
        return self.match(*self.encode_many((a_ids, a_lengths), (b_ids, b_lengths)))


class SimNetBOW(_SimNet):
    """Bag of words: the sum of the valid embeddings, softsign ``x / (1 + |x|)``, then the head.

    Args: vocab_size, emb_dim (E, also the vector size), head ('pointwise' or
    'pairwise'), hidden (head width), padding_idx, trunk (LacEncoder arguments, or None).

    Shape: a_ids (N, La), a_lengths (N,), b_ids (N, Lb), b_lengths (N,) -> (N, 2) or (N,).
    """

    def __init__(self, vocab_size: int, emb_dim: int = 128, head: str = "pointwise", hidden: int = 128,
                 padding_idx: int = 0, trunk: dict = None):
        built = build_trunk(vocab_size, trunk, "SimNetBOW")
        emb_dim = built.width if built else emb_dim
        super().__init__(vocab_size, emb_dim, head, padding_idx, built)
        self.build_head(emb_dim, hidden)

    def encode_embedded(self, emb, mask, lengths):
        pooled = emb.sum(axis=1)                                               # (N, E)
        return pooled / (pooled.abs() + 1.0)


class SimNetCNN(_SimNet):
    """Convolutions over time (``filters`` channels per window width in ``windows``, ReLU), each
    max-pooled over valid positions and concatenated, then the head.

    Args: vocab_size, emb_dim, filters (per window), windows (odd widths,
    e.g. [3] as in SimNet, or [1, 3]), head, hidden, padding_idx, trunk (LacEncoder arguments, or None).
    The vector is ``filters * len(windows)`` wide.

    Shape: a_ids (N, La), a_lengths (N,), b_ids (N, Lb), b_lengths (N,) -> (N, 2) or (N,).
    """

    def __init__(self, vocab_size: int, emb_dim: int = 128, filters: int = 256, windows: list = (3,),
                 head: str = "pointwise", hidden: int = 128, padding_idx: int = 0, trunk: dict = None):
        windows = [int(w) for w in windows]
        if not windows or any(w < 1 or w % 2 == 0 for w in windows):
            raise ValueError(f"SimNetCNN: windows must be positive odd numbers, got {windows}")
        built = build_trunk(vocab_size, trunk, "SimNetCNN")
        emb_dim = built.width if built else emb_dim
        super().__init__(vocab_size, emb_dim, head, padding_idx, built)
        self.convs = nn.LayerList([nn.Conv1D(emb_dim, filters, w, padding=w // 2) for w in windows])
        self.build_head(filters * len(windows), hidden)

    def encode_embedded(self, emb, mask, lengths):
        channels_first = emb.transpose([0, 2, 1])                             # (N, E, L)
        features = [F.relu(conv(channels_first)).transpose([0, 2, 1]) for conv in self.convs]   # (N, L, F) each
        pooled = [F.sequence_pool(h, lengths, "max") for h in features]                         # (N, F) each
        return pooled[0] if len(pooled) == 1 else framework.concat(pooled, axis=-1)


class _SimNetRNN(_SimNet):
    """Recurrent encoder (``cell`` 'gru' or 'lstm', one direction or both), pooled over valid positions."""

    def __init__(self, cell, vocab_size, emb_dim, hidden_size, bidirectional, head, hidden, padding_idx, trunk):
        built = build_trunk(vocab_size, trunk, f"SimNet{cell.upper()}")
        emb_dim = built.width if built else emb_dim
        super().__init__(vocab_size, emb_dim, head, padding_idx, built)
        rnn = nn.GRU if cell == "gru" else nn.LSTM
        self.rnn = rnn(emb_dim, hidden_size, direction="bidirect" if bidirectional else "forward")
        self.build_head(hidden_size * (2 if bidirectional else 1), hidden)

    def encode_embedded(self, emb, mask, lengths):
        h, _ = self.rnn(emb, lengths)                                          # (N, L, D)
        return F.sequence_pool(h, lengths, "max")


class SimNetGRU(_SimNetRNN):
    """GRU over the embeddings (one direction, or both: the reverse one inside each length), max over
    valid positions, head.

    Args: vocab_size, emb_dim, hidden_size (GRU size; the vector is twice as
    wide when ``bidirectional``), bidirectional, head, hidden (head width), padding_idx, trunk (LacEncoder
    arguments, or None).

    Shape: a_ids (N, La), a_lengths (N,), b_ids (N, Lb), b_lengths (N,) -> (N, 2) or (N,).
    """

    def __init__(self, vocab_size: int, emb_dim: int = 128, hidden_size: int = 128, bidirectional: bool = False,
                 head: str = "pointwise", hidden: int = 128, padding_idx: int = 0, trunk: dict = None):
        super().__init__("gru", vocab_size, emb_dim, hidden_size, bidirectional, head, hidden, padding_idx, trunk)


class SimNetLSTM(_SimNetRNN):
    """LSTM over the embeddings (one direction or both), max over valid positions, head.

    Args: as :class:`SimNetGRU`. Shape: a_ids (N, La), a_lengths (N,), b_ids
    (N, Lb), b_lengths (N,) -> (N, 2) or (N,).
    """

    def __init__(self, vocab_size: int, emb_dim: int = 128, hidden_size: int = 128, bidirectional: bool = False,
                 head: str = "pointwise", hidden: int = 128, padding_idx: int = 0, trunk: dict = None):
        super().__init__("lstm", vocab_size, emb_dim, hidden_size, bidirectional, head, hidden, padding_idx, trunk)


MODELS.register(SimNetBOW)
MODELS.register(SimNetCNN)
MODELS.register(SimNetGRU)
MODELS.register(SimNetLSTM)
