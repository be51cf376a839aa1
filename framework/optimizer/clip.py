"""Gradient clipping, as Paddle 2's ``paddle.nn.ClipGrad*``.

A clip object is called on a list of ``(param, grad)`` pairs (``grad`` a
Tensor or None) and returns a new list with the same params and clipped
copies of the gradients; the gradients passed in are never modified. Pass one
as ``grad_clip=`` to an optimizer, which clips every gradient of every group
together before weight decay and the update.
"""
import numbers

from .. import backend
from ..tensor import Tensor

__all__ = ["ClipGradBase", "ClipGradByValue", "ClipGradByNorm", "ClipGradByGlobalNorm"]


def _positive(value, what, owner):
    if not isinstance(value, numbers.Real) or isinstance(value, bool) or not value > 0:
        raise ValueError(f"{owner}: {what} must be a number > 0, got {value!r}")
    return float(value)


class ClipGradBase:
    """Base of the clips: ``clip(params_grads) -> params_grads``; subclasses implement ``_clip``."""

    def __call__(self, params_grads):
        """Clip the gradients of a list of ``(param, grad)`` pairs (grad a Tensor or None).

        Returns a list of the same length and order; None gradients stay None.
        """
        params_grads = list(params_grads)
        clipped = iter(self._clip([g.data for _, g in params_grads if g is not None]))
        return [(p, None if g is None else Tensor(next(clipped))) for p, g in params_grads]

    def _clip(self, grads):
        """The clipped copies of a list of gradient arrays."""
        raise NotImplementedError


class ClipGradByValue(ClipGradBase):
    """Clip every gradient element into ``[min, max]``; ``min`` defaults to ``-max``."""

    def __init__(self, max, min=None):
        self.max = float(max)
        self.min = -self.max if min is None else float(min)
        if self.min > self.max:
            raise ValueError(f"ClipGradByValue: min ({self.min}) must not exceed max ({self.max})")

    def _clip(self, grads):
        return [backend.get_array_module(g).clip(g, self.min, self.max) for g in grads]

    def __repr__(self):
        return f"ClipGradByValue(max={self.max}, min={self.min})"


class ClipGradByNorm(ClipGradBase):
    """Scale each gradient ``g`` whose L2 norm exceeds ``clip_norm`` to norm ``clip_norm``:
    ``g * clip_norm / max(norm(g), clip_norm)``, per tensor."""

    def __init__(self, clip_norm):
        self.clip_norm = _positive(clip_norm, "clip_norm", "ClipGradByNorm")

    def _clip(self, grads):
        clipped = []
        for g in grads:
            xp = backend.get_array_module(g)
            norm = xp.sqrt(xp.sum(g * g))
            clipped.append(g * (self.clip_norm / xp.maximum(norm, self.clip_norm)))
        return clipped

    def __repr__(self):
        return f"ClipGradByNorm(clip_norm={self.clip_norm})"


class ClipGradByGlobalNorm(ClipGradBase):
    """Scale all gradients together: ``g * clip_norm / max(global_norm, clip_norm)``,
    where ``global_norm = sqrt(sum over all gradients of sum(g ** 2))``."""

    def __init__(self, clip_norm):
        self.clip_norm = _positive(clip_norm, "clip_norm", "ClipGradByGlobalNorm")

    def _clip(self, grads):
        if not grads:
            return []
        xp = backend.get_array_module(grads[0])
        global_norm = xp.sqrt(sum(xp.sum(g * g) for g in grads))
        scale = self.clip_norm / xp.maximum(global_norm, self.clip_norm)
        return [g * scale.astype(g.dtype) for g in grads]

    def __repr__(self):
        return f"ClipGradByGlobalNorm(clip_norm={self.clip_norm})"
