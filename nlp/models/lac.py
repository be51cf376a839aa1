"""LAC: Baidu's lexical analysis network, a BiGRU-CRF over characters (or LAC's mixed word/character ids).

Jiao, Sun, Sun, "Chinese Lexical Analysis with Deep Bi-GRU-CRF Network",
arXiv:1807.01882 (2018); source: ``baidu/lac`` (``LAC/nets.py``, ``lex_net``)
and PaddlePaddle/models ``PaddleNLP/lexical_analysis`` (2019).

Network: embedding -> ``num_layers`` bidirectional GRU layers (each direction
with its own linear input projection, Paddle ``dynamic_gru``) -> linear to tag
scores. The model returns the emissions; the linear-chain CRF's transition
(start row, stop row, ``trans[from, to]``) lives in ``self.crf`` and the task
computes the loss through ``self.crf`` and decodes (``F.viterbi_decode``).

Shapes: forward(tokens (N, T) int64, lengths (N,) int64) -> emissions (N, T, num_tags).

Parameter names (E = emb_dim, H = hidden, K = num_tags, V = vocab_size)::

    embedding.weight                              (V, E)
    gru.layers.{k}.{fw|bw}.input_proj.weight      (E or 2H, 3H)
    gru.layers.{k}.{fw|bw}.input_proj.bias        (3H,)
    gru.layers.{k}.{fw|bw}.weight_hh              (H, 3H)   Paddle's flat-buffer layout
    gru.layers.{k}.{fw|bw}.bias_hh                (1, 3H)
    emission.weight                               (2H, K)
    emission.bias                                 (K,)
    crf.transition                                (K+2, K)

:data:`OFFICIAL_NAMES` maps the 20 arrays of the official ``lac_model`` onto them.
"""
import numpy

from framework import backend, nn
from framework.nn import initializer as init
from framework.registry import MODELS

__all__ = ["BiGRUCRF", "OFFICIAL_NAMES", "official_state_dict"]


def _official_names(num_layers):
    """{official parameter name: our name} for a LAC model of ``num_layers`` BiGRU layers."""
    names = {"word_emb": "embedding.weight", "crfw": "crf.transition",
             f"fc_{2 * num_layers}.w_0": "emission.weight", f"fc_{2 * num_layers}.b_0": "emission.bias"}
    for k in range(num_layers):
        for offset, direction in enumerate(("fw", "bw")):
            unit, index = f"gru.layers.{k}.{direction}", 2 * k + offset
            names.update({f"fc_{index}.w_0": f"{unit}.input_proj.weight", f"fc_{index}.b_0": f"{unit}.input_proj.bias",
                          f"gru_{index}.w_0": f"{unit}.weight_hh", f"gru_{index}.b_0": f"{unit}.bias_hh"})
    return names


#: The official ``LAC/lac_model/model`` parameter files (2 BiGRU layers) -> our parameter names.
OFFICIAL_NAMES = _official_names(2)


def official_state_dict(params, dtype=numpy.float32):
    """Our state dict (name -> array of ``dtype``) from the official parameter arrays ``{file name: array}``.

    The number of layers is read from the ``gru_*`` names; every array of the
    official model must be present (the error lists the missing ones).
    """
    num_layers = sum(1 for name in params if name.startswith("gru_") and name.endswith(".w_0")) // 2
    names = _official_names(num_layers)
    missing = sorted(set(names) - set(params))
    if num_layers == 0 or missing:
        raise KeyError(f"official_state_dict: not a LAC model; missing {', '.join(missing) or 'gru_* weights'}")
    return {ours: numpy.asarray(params[theirs], dtype=dtype) for theirs, ours in names.items()}


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
    """

    def __init__(self, vocab_size: int, num_tags: int, emb_dim: int = 128, hidden: int = 128, num_layers: int = 2,
                 origin_mode: bool = False, init_bound: float = 0.1):
        super().__init__()
        self.vocab_size, self.num_tags = int(vocab_size), int(num_tags)
        self.embedding = nn.Embedding(vocab_size, emb_dim)
        self.gru = nn.GRU(emb_dim, hidden, num_layers=num_layers, direction="bidirect", origin_mode=origin_mode)
        self.emission = nn.Linear(2 * hidden, num_tags)
        self.crf = nn.LinearChainCRF(num_tags)
        uniform = init.Uniform(-init_bound, init_bound)
        for name, param in self.named_parameters():
            if name.startswith("crf."):
                continue
            fill = init.Constant(0.0) if name.endswith(("bias", "bias_hh")) else uniform
            param.data[...] = fill(param.shape, param.dtype, backend.get_array_module(param.data))

    def forward(self, tokens, lengths):
        """tokens (N, T) int64, lengths (N,) int64 -> emissions (N, T, K), 0 beyond each length's GRU output."""
        x = self.embedding(tokens)                     # (N, T, E)
        hidden, _ = self.gru(x, lengths)               # (N, T, 2H)
        return self.emission(hidden)                   # (N, T, K)

    @classmethod
    def from_official(cls, params):
        """A model holding the official LAC arrays ``{file name: array}`` (sizes read from them), in float32."""
        return cls.from_state_dict(official_state_dict(params))

    @classmethod
    def from_state_dict(cls, state):
        """A model sized after and holding ``state`` (our parameter names -> arrays)."""
        vocab_size, emb_dim = state["embedding.weight"].shape
        model = cls(vocab_size, state["crf.transition"].shape[1], emb_dim=emb_dim,
                    hidden=state["gru.layers.0.fw.weight_hh"].shape[0],
                    num_layers=sum(1 for name in state if name.endswith("fw.weight_hh")))
        model.set_state_dict(state)
        return model


MODELS.register(BiGRUCRF, name="lac")     # the official sizes are the defaults
