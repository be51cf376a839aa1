"""Weight decay added to the gradient before the update (coupled), as Paddle's
``paddle.regularizer``: ``L2Decay`` adds ``coeff * param``, ``L1Decay`` adds
``coeff * sign(param)``. AdamW's decoupled decay is not a regularizer; it is
part of :class:`framework.optimizer.AdamW`."""
import numbers

from .. import backend

__all__ = ["WeightDecayRegularizer", "L1Decay", "L2Decay"]


class WeightDecayRegularizer:
    """Base of the coupled weight decays: ``reg(param, grad)`` returns a new gradient array.

    Args:
        coeff (float): the decay coefficient (>= 0).
    """

    def __init__(self, coeff=0.0):
        if not isinstance(coeff, numbers.Real) or isinstance(coeff, bool) or coeff < 0:
            raise ValueError(f"{type(self).__name__}: coeff must be a number >= 0, got {coeff!r}")
        self.coeff = float(coeff)

    def __call__(self, param, grad):
        """``grad`` plus the decay term of ``param`` (arrays of one shape); ``grad`` is not modified."""
        raise NotImplementedError

    def __repr__(self):
        return f"{type(self).__name__}(coeff={self.coeff})"


class L2Decay(WeightDecayRegularizer):
    """L2 decay, the gradient of ``coeff / 2 * sum(param ** 2)``: ``grad + coeff * param``."""

    def __call__(self, param, grad):
        return grad + self.coeff * param


class L1Decay(WeightDecayRegularizer):
    """L1 decay, the gradient of ``coeff * sum(abs(param))``: ``grad + coeff * sign(param)``."""

    def __call__(self, param, grad):
        return grad + self.coeff * backend.get_array_module(param).sign(param)
