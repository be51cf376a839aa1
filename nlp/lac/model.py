"""LAC: Baidu's lexical analysis network, a BiGRU-CRF over characters (or LAC's mixed word/character ids).

Jiao, Sun, Sun, "Chinese Lexical Analysis with Deep Bi-GRU-CRF Network",
arXiv:1807.01882 (2018); source: ``baidu/lac`` (``LAC/nets.py``, ``lex_net``)
and PaddlePaddle/models ``PaddleNLP/lexical_analysis`` (2019).

Network: embedding -> ``num_layers`` bidirectional GRU layers (each direction
with its own linear input projection, Paddle ``dynamic_gru``) -> linear to tag
scores. The model returns the emissions; the linear-chain CRF's transition
(start row, stop row, ``trans[from, to]``) lives in ``self.crf`` and the task
computes the loss through ``self.crf`` and decodes (``F.viterbi_decode``).

Shapes: forward(tokens (N, T) int64, lengths (N,) int64[, lexicon (N, T, F) float32]) -> emissions
(N, T, num_tags), 0 past each length (the emission layer runs at the valid positions only).

Three options go beyond the official network (all off by default, so the
official weights load unchanged): **hashed character n-grams**
(``ngram_buckets`` > 0), where each position also reads the embeddings of every
n-gram of the orders in ``ngram_orders`` that contains it (for order 2: the
bigrams with its left and with its right neighbour), their ids hashed into
``ngram_buckets`` rows (the padding id stands past the sequence edges; no
vocabulary needed), concatenated to its character embedding; **lexicon
features** (``lexicon_features`` = F > 0), F values per position given to
``forward`` (e.g. :class:`~nlp.lac.lexicon.LexiconFeatures`: which lexicon
words start, end or cover the character), concatenated as they are (the GRU's
input projection is their linear projection); and **dropout** on the GRU
input, between the GRU layers and before the emission layer.

Parameter names (E = emb_dim, H = hidden, K = num_tags, V = vocab_size)::

    embedding.weight                              (V, E)
    ngram_embedding.weight                        (B, E_n)  only with ngram_buckets = B > 0
    gru.layers.{k}.{fw|bw}.input_proj.weight      (E + W E_n + F or 2H, 3H)   W = sum(ngram_orders), 0 without n-grams
    gru.layers.{k}.{fw|bw}.input_proj.bias        (3H,)
    gru.layers.{k}.{fw|bw}.weight_hh              (H, 3H)   Paddle's flat-buffer layout
    gru.layers.{k}.{fw|bw}.bias_hh                (1, 3H)
    emission.weight                               (2H, K)
    emission.bias                                 (K,)
    crf.transition                                (K+2, K)

:data:`nlp.lac.official.OFFICIAL_NAMES` maps the 20 arrays of the official ``lac_model`` onto them.
"""
import numpy

from framework import Tensor, backend, concat, nn, to_tensor
from framework.nn import functional as F
from framework.nn import initializer as init
from framework.registry import MODELS
from nlp.data.vocab import Vocab

from .official import official_char_vectors, official_state_dict

__all__ = ["BiGRUCRF"]


@MODELS.register()
class BiGRUCRF(nn.Layer):
    """LAC's BiGRU-CRF tagger (see the module docstring).

    Args:
        vocab_size: V, ids in [0, V).
        num_tags: K, tag ids in [0, K).
        emb_dim: E, embedding size (official 128).
        hidden: H, GRU state size per direction (official 128).
        num_layers: stacked bidirectional GRU layers (official 2).
        origin_mode: Paddle's GRU update rule (official False: h = (1-u) h_prev + u c).
        init_bound: weights start Uniform(-init_bound, init_bound) and biases at 0,
            as in LAC's training code; the CRF transition starts XavierUniform.
        ngram_buckets: B, rows of the hashed n-gram embedding (0: no n-gram features, the official network).
        ngram_dim: E_n, size of each n-gram embedding.
        ngram_orders: the n-gram orders used (each >= 2), e.g. [2] or [2, 3].
        lexicon_features: F, lexicon feature values per position that ``forward`` receives (0: none).
        dropout: dropout probability on the GRU input, between GRU layers and before the emission layer.
        official_embedding_vocab: the character vocabulary file of this model's ids (the task's
            ``vocab_file``); when given, :meth:`init_weights` (called once before training) starts the
            embedding rows of its characters that the official LAC vocabulary has from the official
            model's character embedding (needs ``emb_dim`` 128; the official model is fetched once).
    """

    def __init__(self, vocab_size: int, num_tags: int, emb_dim: int = 128, hidden: int = 128, num_layers: int = 2,
                 origin_mode: bool = False, init_bound: float = 0.1, ngram_buckets: int = 0, ngram_dim: int = 32,
                 ngram_orders: list = (2,), lexicon_features: int = 0, dropout: float = 0.0,
                 official_embedding_vocab: str = None):
        super().__init__()
        self.official_embedding_vocab = official_embedding_vocab
        self.ngram_orders = tuple(int(n) for n in ngram_orders)
        if ngram_buckets < 0 or (ngram_buckets and (ngram_dim < 1 or not self.ngram_orders
                                                    or min(self.ngram_orders) < 2)):
            raise ValueError(f"BiGRUCRF: need ngram_buckets >= 0, and with n-grams ngram_dim >= 1 and orders >= 2, "
                             f"got {ngram_buckets}, {ngram_dim} and {list(ngram_orders)}")
        if lexicon_features < 0:
            raise ValueError(f"BiGRUCRF: lexicon_features must be >= 0, got {lexicon_features}")
        self.vocab_size, self.num_tags = int(vocab_size), int(num_tags)
        self.lexicon_features = int(lexicon_features)
        self.ngram_buckets = int(ngram_buckets)
        self.embedding = nn.Embedding(vocab_size, emb_dim)
        input_size = emb_dim
        if self.ngram_buckets:
            self.ngram_embedding = nn.Embedding(self.ngram_buckets, ngram_dim)
            input_size += sum(self.ngram_orders) * ngram_dim
        input_size += self.lexicon_features
        self.dropout = nn.Dropout(dropout) if dropout > 0 else None
        self.gru = nn.GRU(input_size, hidden, num_layers=num_layers, direction="bidirect", origin_mode=origin_mode,
                          dropout=dropout)
        self.emission = nn.Linear(2 * hidden, num_tags)
        self.crf = nn.LinearChainCRF(num_tags)
        uniform = init.Uniform(-init_bound, init_bound)
        for name, param in self.named_parameters():
            if name.startswith("crf."):
                continue
            fill = init.Constant(0.0) if name.endswith(("bias", "bias_hh")) else uniform
            param.data[...] = fill(param.shape, param.dtype, backend.get_array_module(param.data))

    def init_weights(self):
        """Start the embedding from the official LAC characters' rows (with ``official_embedding_vocab``);
        returns the number of rows set (0 without the option). Training calls it once, before the first step."""
        if not self.official_embedding_vocab:
            return 0
        vocab = Vocab.load(self.official_embedding_vocab)
        weight = self.embedding.weight
        if len(vocab) != weight.shape[0]:
            raise ValueError(f"BiGRUCRF: official_embedding_vocab {self.official_embedding_vocab} has {len(vocab)} "
                             f"entries but the embedding has {weight.shape[0]} rows (vocab_size)")
        vectors = official_char_vectors()
        found = [(i, vectors[token]) for i, token in enumerate(vocab.tokens) if token in vectors]
        if found and len(found[0][1]) != weight.shape[1]:
            raise ValueError(f"BiGRUCRF: the official embedding has {len(found[0][1])} columns, the model's "
                             f"emb_dim is {weight.shape[1]}")
        xp = backend.get_array_module(weight.data)
        rows = numpy.asarray([i for i, _ in found], dtype=numpy.int64)
        weight.data[xp.asarray(rows)] = xp.asarray(numpy.stack([v for _, v in found]), dtype=weight.data.dtype)
        return len(found)

    def forward(self, tokens, lengths, lexicon=None):
        """tokens (N, T) int64 (0 past each length), lengths (N,) int64, lexicon (N, T, F) float32 (with
        ``lexicon_features`` = F > 0, else None) -> emissions (N, T, K)."""
        x = self.embedding(tokens)                     # (N, T, E)
        if self.ngram_buckets:
            ngrams = self.ngram_embedding(self.ngram_ids(tokens))                 # (N, T, W, E_n)
            x = concat([x, ngrams.reshape(ngrams.shape[:2] + (-1,))], axis=-1)   # (N, T, E + W E_n)
        if self.lexicon_features:
            x = concat([x, self._checked_lexicon(lexicon, tokens.shape)], axis=-1)   # (N, T, ... + F)
        elif lexicon is not None:
            raise ValueError("BiGRUCRF: got lexicon features but the model has lexicon_features=0")
        if self.dropout is not None:
            x = self.dropout(x)
        hidden, _ = self.gru(x, lengths)               # (N, T, 2H)
        if self.dropout is not None:
            hidden = self.dropout(hidden)
        return F.sequence_linear(hidden, lengths, self.emission.weight, self.emission.bias)   # (N, T, K), 0 past lengths

    def describe(self):
        """The network and the options it uses beyond the official LAC, in words (one line, str)."""
        parts = [f"BiGRU-CRF, embedding {self.embedding.weight.shape[1]}, hidden {self.gru.hidden_size}, "
                 f"{self.gru.num_layers} bidirectional GRU layers"]
        if self.ngram_buckets:
            orders = ", ".join(str(n) for n in self.ngram_orders)
            parts.append(f"hashed character n-grams of orders {orders} ({self.ngram_buckets} buckets of "
                         f"{self.ngram_embedding.weight.shape[1]})")
        if self.lexicon_features:
            parts.append(f"{self.lexicon_features} lexicon features per character")
        if self.dropout is not None:
            parts.append(f"dropout {self.dropout.p}")
        return "; ".join(parts)

    def _checked_lexicon(self, lexicon, shape):
        """``lexicon`` as a Tensor, after checking it is (N, T, F) for tokens of ``shape`` (N, T)."""
        if lexicon is None:
            raise ValueError(f"BiGRUCRF: the model reads {self.lexicon_features} lexicon features per position "
                             f"(lexicon_features) but forward got none")
        if not isinstance(lexicon, Tensor):
            lexicon = to_tensor(lexicon, device=backend.device_of(lexicon))
        if tuple(lexicon.shape) != tuple(shape) + (self.lexicon_features,):
            raise ValueError(f"BiGRUCRF: lexicon features must be {tuple(shape) + (self.lexicon_features,)} "
                             f"(tokens (N, T), lexicon_features), got {tuple(lexicon.shape)}")
        return lexicon

    def ngram_ids(self, tokens):
        """Hashed ids (N, T, W) int64 of the n-grams containing each position, W = sum(ngram_orders).

        For order n the windows are tokens[t-n+1 .. t], ..., tokens[t .. t+n-1],
        in that order; the padding id 0 stands past both edges. A window
        (a_1, ..., a_n) hashes to h_n with h_0 = n and h_i = (h_{i-1} * 1000003 + a_i) % ngram_buckets.
        """
        if not isinstance(tokens, Tensor):
            tokens = to_tensor(tokens)
        return F.hashed_ngrams(tokens, self.ngram_orders, self.ngram_buckets)

    @classmethod
    def from_official(cls, params):
        """A model holding the official LAC arrays ``{file name: array}`` (sizes read from them), in float32."""
        return cls.from_state_dict(official_state_dict(params))

    @classmethod
    def from_state_dict(cls, state, **options):
        """A model sized after and holding ``state`` (our parameter names -> arrays).

        The sizes are read from the arrays; ``options`` give the constructor's
        other arguments (``ngram_orders`` for a model with n-gram features,
        ``lexicon_features`` for one with lexicon features).
        """
        vocab_size, emb_dim = state["embedding.weight"].shape
        buckets, ngram_dim = state["ngram_embedding.weight"].shape if "ngram_embedding.weight" in state else (0, 1)
        model = cls(vocab_size, state["crf.transition"].shape[1], emb_dim=emb_dim,
                    hidden=state["gru.layers.0.fw.weight_hh"].shape[0],
                    num_layers=sum(1 for name in state if name.endswith("fw.weight_hh")),
                    ngram_buckets=buckets, ngram_dim=ngram_dim, **options)
        model.set_state_dict(state)
        return model


MODELS.register(BiGRUCRF, name="lac")     # the official sizes are the defaults
