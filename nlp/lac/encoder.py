"""LAC's embedding and BiGRU encoder as a shared text trunk, and LAC's own tokens for it.

Jiao, Sun, Sun, "Chinese Lexical Analysis with Deep Bi-GRU-CRF Network", arXiv:1807.01882 (2018); the
weights are Baidu's official ``LAC/lac_model`` (``LAC==2.1.2``, :mod:`nlp.lac.official`), trained for
segmentation, part of speech and entities on a corpus far larger than any of oar's.

:class:`LacTokens` (tokeniser ``lac``) cuts a text as LAC's reader does (:class:`~nlp.lac.preprocess.OfficialPreprocessor`:
the coarse segmentation, a piece in the vocabulary as one word, any other piece character by character,
each through ``q2b.dic``) and names each id by its ``word.dic`` token; its fixed vocabulary is every
``word.dic`` token (pad and unk first, unk standing for ``OOV``), so a task's ids name LAC's rows by token.

:class:`LacEncoder` (model part ``LacEncoder``) is the official network up to the BiGRU, without the
emission layer and the CRF: an embedding (V, 128) and ``layers`` (0-2) bidirectional GRU layers of 128 per
direction. ``layers: 0`` gives the embeddings alone. :meth:`LacEncoder.init_weights` (called once before
training) starts every row whose token LAC has from the official row (unk from ``OOV``, pad at zero) and
the GRU layers from the official ones. ``freeze`` stops the gradient of whole parts (name prefixes, or
``all``); per-part learning rates are the optimizer's ``groups`` (``{params: "trunk.gru.*", learning_rate:
0.1}``).

Shapes: ``LacEncoder.forward(ids (N, L) int64, lengths (N,) int64 or None) -> (N, L, width)``, width 128
with no GRU layer, else 256; positions past a length are zero.
"""
import numpy

from framework import backend, nn
from framework.config import ConfigError
from framework.registry import MODELS
from nlp.data.tokenizers import TOKENIZERS, Tokenizer
from nlp.data.vocab import Vocab

__all__ = ["LacTokens", "LacEncoder", "lac_tokens", "build_trunk"]

_OOV = "OOV"


def lac_tokens():
    """(the official model's tables, tokens by id: an object array (ids,) of str, OOV's entry ``None``)."""
    from .official import read_official
    _, tables = read_official()
    names = numpy.full(max(tables.word2id.values()) + 1, None, dtype=object)
    for token, index in tables.word2id.items():
        names[index] = token
    names[tables.oov_id] = None
    return tables, names


@TOKENIZERS.register("lac")
class LacTokens(Tokenizer):
    """LAC's own tokens of a text: its reader's words and characters, named by their ``word.dic`` tokens.

    Whitespace-only tokens are dropped; a token outside ``word.dic`` is ``OOV`` (the task's unk).
    :meth:`vocabulary` is the fixed vocabulary a task uses with it (every ``word.dic`` token in id order).
    """

    signature = "lac"

    def __init__(self):
        self._reader = self._names = None

    def __getstate__(self):
        return {"_reader": None, "_names": None}

    def _tables(self):
        if self._reader is None:
            tables, self._names = lac_tokens()
            self._reader = tables.preprocessor()
        return self._reader, self._names

    def tokenize(self, text):
        return self.tokenize_batch([text])[0]

    def tokenize_batch(self, texts):
        """The token lists (list of N lists of str) of ``texts`` (N str), all read in one call."""
        texts = list(texts)
        if not texts:
            return []
        reader, names = self._tables()
        ids, sizes, _ = reader.encode_batch(texts)
        tokens = [_OOV if name is None else name for name in names[ids].tolist()]
        cuts = numpy.cumsum(sizes)[:-1].tolist()
        return [[t for t in piece if not t.isspace()]
                for piece in numpy.split(numpy.asarray(tokens, dtype=object), cuts)]

    def vocabulary(self):
        """The fixed vocabulary: a :class:`Vocab` of pad, unk (for ``OOV``) and every other non-blank
        ``word.dic`` token, in LAC's id order."""
        _, names = self._tables()
        return Vocab([t for t in names.tolist() if t and not t.isspace() and t not in ("<pad>", "<unk>")])


@MODELS.register()
class LacEncoder(nn.Layer):
    """LAC's embedding and BiGRU layers (see the module docstring).

    Args:
        vocab_size: V, rows of the embedding (a task with the ``lac`` tokeniser needs 58,224).
        layers: official BiGRU layers kept, 0-2 (0: the embeddings alone).
        freeze: parts whose parameters get no gradient: name prefixes (``embedding``, ``gru.layers.0``)
            or ``all``.
        pretrained: start from the official weights in :meth:`init_weights` (False: random, for tests).
        emb_dim, hidden: the official 128 and 128.

    Shape: ids (N, L), lengths (N,) -> features (N, L, :attr:`width`).
    """

    def __init__(self, vocab_size: int = 58224, layers: int = 2, freeze=(), pretrained: bool = True,
                 emb_dim: int = 128, hidden: int = 128):
        if not 0 <= layers <= 2:
            raise ConfigError(f"LacEncoder: layers must be 0, 1 or 2 (the official model has 2), got {layers}")
        super().__init__()
        self.layers, self.pretrained, self.vocab_tokens = int(layers), bool(pretrained), None
        self.embedding = nn.Embedding(vocab_size, emb_dim, padding_idx=0)
        if self.layers:
            self.gru = nn.GRU(emb_dim, hidden, num_layers=self.layers, direction="bidirect")
        self.width = 2 * hidden if self.layers else emb_dim
        self.frozen = self._freeze(["all"] if freeze == "all" else list(freeze))

    def _freeze(self, prefixes):
        """Stop the gradient of the parameters under ``prefixes``; returns their names."""
        names = [n for n, _ in self.named_parameters()]
        for prefix in prefixes:
            if prefix != "all" and not any(n == prefix or n.startswith(prefix + ".") for n in names):
                raise ConfigError(f"LacEncoder: freeze names {prefix!r}, which is no part of "
                                  f"{', '.join(sorted({n.rsplit('.', 1)[0] for n in names}))}")
        frozen = []
        for name, param in self.named_parameters():
            if any(p == "all" or name == p or name.startswith(p + ".") for p in prefixes):
                param.requires_grad = False
                frozen.append(name)
        return frozen

    def use_vocabulary(self, tokens):
        """Name the token of each embedding row (``tokens``: str in id order), for :meth:`init_weights`."""
        self.vocab_tokens = list(tokens)

    def init_weights(self):
        """Start the rows of the tokens LAC has (unk from ``OOV``) and the GRU layers from the official model;
        returns the number of rows set (0 without ``pretrained``). Training calls it once, before the first step."""
        if not self.pretrained:
            return 0
        if self.vocab_tokens is None:
            raise ValueError("LacEncoder: init_weights needs the vocabulary's tokens (use_vocabulary) first")
        from .official import read_official
        state, tables = read_official()
        official = state["embedding.weight"]
        weight = self.embedding.weight
        if official.shape[1] != weight.shape[1]:
            raise ConfigError(f"LacEncoder: emb_dim must be the official {official.shape[1]}, got {weight.shape[1]}")
        lookup = {**tables.word2id, "<unk>": tables.oov_id}
        found = [(i, lookup[t]) for i, t in enumerate(self.vocab_tokens[:weight.shape[0]]) if t in lookup]
        xp = backend.get_array_module(weight.data)
        rows = xp.asarray(numpy.asarray([i for i, _ in found], dtype=numpy.int64))
        weight.data[rows] = xp.asarray(official[[j for _, j in found]], dtype=weight.data.dtype)
        for name, param in self.named_parameters():
            if name.startswith("gru."):
                param.data[...] = xp.asarray(state[name], dtype=param.data.dtype)
        return len(found)

    def forward(self, ids, lengths=None):
        """ids (N, L) int64, lengths (N,) int64 (None: every position) -> features (N, L, width)."""
        x = self.embedding(ids)                           # (N, L, E)
        if not self.layers:
            return x
        hidden, _ = self.gru(x, lengths)                  # (N, L, 2H)
        return hidden


def build_trunk(vocab_size, trunk, owner):
    """The :class:`LacEncoder` of a model's ``trunk`` arguments (a dict) over ``vocab_size``
    ids, or None without one."""
    if trunk is None:
        return None
    if not isinstance(trunk, dict):
        raise ConfigError(f"{owner}: trunk must be a dict of LacEncoder arguments, got {trunk!r}")
    return LacEncoder(vocab_size, **trunk)
