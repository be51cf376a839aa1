"""LAC's word-importance network (``LAC/rank_model/`` of ``LAC==2.1.2``), and LAC with it on top.

:class:`RankNet` is the rank model's program (dumped from its ``__model__``):
the LAC word ids and the LAC tag ids of one sentence go through their own
embeddings, concatenated (128 + 24 columns), two linear projections, a
forward and a reverse peephole LSTM (Paddle's ``lstm`` op, ``use_peepholes``,
sigmoid/tanh/tanh, hidden 128), concatenated, a linear layer of 100 with ReLU
and a linear layer of 4 with softmax: the probability of each importance 0-3
at each id (the program's two dropouts run in test mode: identity).

:class:`LacRank` is LAC (:class:`~nlp.lac.model.BiGRUCRF`) with Viterbi decoding
and the rank network behind it, in one forward, so that one traced program
runs the whole of ``LAC(mode="rank")``.

Parameter names (V = 58,224 ids, K = 58 tag rows, H = 128)::

    word_embedding.weight                  (V, 128)    word_emb
    tag_embedding.weight                   (K, 24)     embedding_1.w_0
    proj_fw.weight / proj_fw.bias          (152, 4H) / (4H,)   fc_0
    proj_bw.weight / proj_bw.bias          (152, 4H) / (4H,)   fc_1
    lstm_fw.weight / lstm_fw.bias          (H, 4H) / (1, 7H)   lstm_0 (peepholes in the bias)
    lstm_bw.weight / lstm_bw.bias          (H, 4H) / (1, 7H)   lstm_1 (reverse)
    hidden.weight / hidden.bias            (2H, 100) / (100,)  fc_2
    output.weight / output.bias            (100, 4) / (4,)     fc_3
"""
from framework import concat, nn
from framework.nn import functional as F

__all__ = ["RankNet", "LacRank", "RANK_NAMES"]

#: The official ``LAC/rank_model/model`` parameter files -> :class:`RankNet`'s parameter names.
RANK_NAMES = {"word_emb": "word_embedding.weight", "embedding_1.w_0": "tag_embedding.weight",
              "fc_0.w_0": "proj_fw.weight", "fc_0.b_0": "proj_fw.bias", "fc_1.w_0": "proj_bw.weight",
              "fc_1.b_0": "proj_bw.bias", "lstm_0.w_0": "lstm_fw.weight", "lstm_0.b_0": "lstm_fw.bias",
              "lstm_1.w_0": "lstm_bw.weight", "lstm_1.b_0": "lstm_bw.bias", "fc_2.w_0": "hidden.weight",
              "fc_2.b_0": "hidden.bias", "fc_3.w_0": "output.weight", "fc_3.b_0": "output.bias"}


class _Affine(nn.Layer):
    """A Paddle ``fc``'s parameters: weight (in, out) and bias ``bias_shape``."""

    def __init__(self, fan_in, fan_out, bias_shape=None):
        super().__init__()
        self.weight = self.create_parameter((fan_in, fan_out))
        self.bias = self.create_parameter(bias_shape or (fan_out,), is_bias=True)


class RankNet(nn.Layer):
    """The official rank network (module docstring).

    Shapes: forward(words (N, T) int64, tags (N, T) int64, lengths (N,) int64) -> probabilities (N, T, 4),
    softmax over the four importance levels (0 past each length is a uniform row: read only t < lengths).
    """

    def __init__(self, vocab_size: int = 58224, num_tags: int = 58, word_dim: int = 128, tag_dim: int = 24,
                 hidden: int = 128, fc_dim: int = 100, levels: int = 4):
        super().__init__()
        self.word_embedding = nn.Embedding(vocab_size, word_dim)
        self.tag_embedding = nn.Embedding(num_tags, tag_dim)
        self.proj_fw = _Affine(word_dim + tag_dim, 4 * hidden)
        self.proj_bw = _Affine(word_dim + tag_dim, 4 * hidden)
        self.lstm_fw = _Affine(hidden, 4 * hidden, (1, 7 * hidden))
        self.lstm_bw = _Affine(hidden, 4 * hidden, (1, 7 * hidden))
        self.hidden = _Affine(2 * hidden, fc_dim)
        self.output = _Affine(fc_dim, levels)

    def forward(self, words, tags, lengths):
        """words, tags (N, T) int64 (0 past each length), lengths (N,) int64 -> probabilities (N, T, 4)."""
        x = concat([self.word_embedding(words), self.tag_embedding(tags)], axis=-1)       # (N, T, 152)
        x_fw = F.sequence_linear(x, lengths, self.proj_fw.weight, self.proj_fw.bias)       # (N, T, 4H)
        x_bw = F.sequence_linear(x, lengths, self.proj_bw.weight, self.proj_bw.bias)       # (N, T, 4H)
        states = F.dynamic_bilstm(x_fw, x_bw, lengths, self.lstm_fw.weight, self.lstm_bw.weight,
                                  self.lstm_fw.bias, self.lstm_bw.bias, use_peepholes=True)[0]   # (N, T, 2H)
        h = F.relu(F.sequence_linear(states, lengths, self.hidden.weight, self.hidden.bias))     # (N, T, 100)
        return F.softmax(F.sequence_linear(h, lengths, self.output.weight, self.output.bias), axis=-1)

    @classmethod
    def from_state_dict(cls, state):
        """A network sized after and holding ``state`` (our parameter names -> arrays)."""
        vocab_size, word_dim = state["word_embedding.weight"].shape
        num_tags, tag_dim = state["tag_embedding.weight"].shape
        hidden_dim, levels = state["output.weight"].shape
        model = cls(vocab_size, num_tags, word_dim, tag_dim, state["lstm_fw.weight"].shape[0], hidden_dim, levels)
        model.set_state_dict(state)
        return model


class LacRank(nn.Layer):
    """LAC's tagger, Viterbi decoding and the rank network in one forward.

    Shapes: forward(tokens (N, T) int64, lengths (N,) int64) -> (tags (N, T) int64, LAC's tag ids, 0 past
    each length; probabilities (N, T, 4) of the importance levels).
    """

    def __init__(self, lac, rank):
        super().__init__()
        self.lac = lac
        self.rank = rank

    @property
    def num_tags(self):
        """LAC's tag count K (the task checks its tag names against it)."""
        return self.lac.num_tags

    def forward(self, tokens, lengths):
        """tokens (N, T) int64, lengths (N,) int64 (each >= 1) -> (tags (N, T) int64, probabilities (N, T, 4))."""
        emissions = self.lac(tokens, lengths)                                                # (N, T, K)
        _, tags = F.viterbi_decode(emissions, self.lac.crf.transition, lengths)
        return tags, self.rank(tokens, tags, lengths)
