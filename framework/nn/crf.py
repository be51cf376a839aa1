"""Linear-chain CRF layers: LinearChainCRF (training loss) and ViterbiDecoder (decoding).

Both use Baidu LAC's transition layout (K+2, K): row 0 start scores, row 1 stop
scores, rows 2.. ``trans[from, to]`` (see :mod:`framework.ops.crf`). A decoder
built from a CRF's ``transition`` shares that Parameter.
"""
from ..tensor import Tensor
from . import functional as F
from .layer import Layer

__all__ = ["LinearChainCRF", "ViterbiDecoder"]


class LinearChainCRF(Layer):
    """Negative log-likelihood of tag sequences under a linear-chain CRF.

    Args:
        num_tags: K.
        weight_attr: ParamAttr / initializer of the transition (e.g. its own
            learning rate); XavierUniform by default.

    Shape: forward(emissions (N, T, K), labels (N, T) int64, lengths (N,) or None) -> nll (N,).

    Attributes:
        transition: (K+2, K) Parameter.
    """

    def __init__(self, num_tags, weight_attr=None):
        super().__init__()
        self.num_tags = int(num_tags)
        self.transition = self.create_parameter([self.num_tags + 2, self.num_tags], attr=weight_attr)

    def forward(self, emissions, labels, lengths=None):
        return F.linear_chain_crf(emissions, labels, lengths, self.transition)

    def extra_repr(self):
        return f"num_tags={self.num_tags}"


class ViterbiDecoder(Layer):
    """Best tag path of each sequence (Paddle 2's ``paddle.text.ViterbiDecoder``, LAC layout).

    Args:
        transition: a (K+2, K) Tensor or Parameter (shared, e.g.
            ``LinearChainCRF.transition``), or an int K to create a new
            Parameter of that shape.
        include_bos_eos_tag: use the start and stop rows; when False the
            transition is (K, K) tag-to-tag scores only.

    Shape: forward(emissions (N, T, K), lengths (N,) or None) -> (scores (N,), paths (N, T) int64).
    """

    def __init__(self, transition, include_bos_eos_tag=True):
        super().__init__()
        self.include_bos_eos_tag = bool(include_bos_eos_tag)
        if isinstance(transition, Tensor):
            self.transition = transition
        else:
            k = int(transition)
            self.transition = self.create_parameter([k + 2 if self.include_bos_eos_tag else k, k])

    def forward(self, emissions, lengths=None):
        return F.viterbi_decode(emissions, self.transition, lengths, include_bos_eos_tag=self.include_bos_eos_tag)

    def extra_repr(self):
        return f"num_tags={self.transition.shape[1]}, include_bos_eos_tag={self.include_bos_eos_tag}"
