"""Adam and AdamW (Paddle's formulas, bias-corrected)."""
import numbers

from .. import backend
from ..kernels.adam import adam_update
from .optimizer import Optimizer

__all__ = ["Adam", "AdamW"]


class Adam(Optimizer):
    """Adam, Paddle's formula. At update t (1, 2, … per parameter):

    ``m = beta1 * m + (1 - beta1) * grad``, ``v = beta2 * v + (1 - beta2) * grad ** 2``,
    ``param -= lr * sqrt(1 - beta2 ** t) / (1 - beta1 ** t) * m / (sqrt(v) + epsilon * sqrt(1 - beta2 ** t))``
    (the usual ``lr * m_hat / (sqrt(v_hat) + epsilon)``). ``m`` and ``v`` start at zero.

    Args:
        beta1, beta2 (float): decay of the first and second moments, in [0, 1).
        epsilon (float): added to the denominator.
        lazy_mode (bool): update only the rows (along axis 0) whose gradient is
            not all zero, leaving the moments of the other rows untouched, as
            Paddle does for sparse embedding gradients; for large embeddings.
        Others as :class:`Optimizer`; ``beta1``, ``beta2``, ``epsilon`` and
        ``lazy_mode`` may be set per group.
    """

    def __init__(self, learning_rate=0.001, beta1=0.9, beta2=0.999, epsilon=1e-8, parameters=None,
                 weight_decay=None, grad_clip=None, lazy_mode=False):
        super().__init__(learning_rate, parameters, weight_decay, grad_clip,
                         hyperparameters={"beta1": beta1, "beta2": beta2, "epsilon": epsilon,
                                          "lazy_mode": lazy_mode})

    def _check_group(self, group, index):
        super()._check_group(group, index)
        for key in ("beta1", "beta2"):
            if not 0 <= group[key] < 1:
                raise ValueError(f"{type(self).__name__}: parameter group {index} {key} must be in [0, 1), "
                                 f"got {group[key]!r}")
        if not group["epsilon"] >= 0:
            raise ValueError(f"{type(self).__name__}: parameter group {index} epsilon must be >= 0, "
                             f"got {group['epsilon']!r}")

    def _init_state(self, param, group):
        xp = backend.get_array_module(param)
        return {"moment1": xp.zeros_like(param), "moment2": xp.zeros_like(param), "step": 0}

    def _update(self, param, grad, state, lr, group):
        xp = backend.get_array_module(param.data)
        state["step"] += 1
        settings = lr, group["beta1"], group["beta2"], group["epsilon"], state["step"], xp
        if not (group["lazy_mode"] and grad.ndim):
            adam_update(param.data, state["moment1"], state["moment2"], grad, *settings)
            return
        rows = xp.flatnonzero(xp.any(grad.reshape(grad.shape[0], -1) != 0, axis=1))
        p, m, v = param.data[rows], state["moment1"][rows], state["moment2"][rows]
        adam_update(p, m, v, grad[rows], *settings)
        param.data[rows], state["moment1"][rows], state["moment2"][rows] = p, m, v


class AdamW(Adam):
    """Adam with decoupled weight decay: before the Adam update,
    ``param -= lr * weight_decay * param`` (``lr`` includes the group's multiplier).

    Args:
        weight_decay (float): the decoupled coefficient (default 0.01, as Paddle);
            may be set per group.
        apply_decay_param_fun (callable): ``fn(param.name) -> bool``; when given,
            only parameters for which it returns True are decayed.
        Others as :class:`Adam`; with ``lazy_mode`` the decay still applies to every row.
    """

    def __init__(self, learning_rate=0.001, beta1=0.9, beta2=0.999, epsilon=1e-8, parameters=None,
                 weight_decay=0.01, apply_decay_param_fun=None, grad_clip=None, lazy_mode=False):
        self._apply_decay_param_fun = apply_decay_param_fun
        super().__init__(learning_rate, beta1, beta2, epsilon, parameters, weight_decay, grad_clip, lazy_mode)

    def _checked_decay(self, weight_decay):
        if weight_decay is None:
            return 0.0
        if not isinstance(weight_decay, numbers.Real) or isinstance(weight_decay, bool):
            raise TypeError(f"AdamW: weight_decay is the decoupled decay coefficient, a float; "
                            f"got {weight_decay!r}")
        if weight_decay < 0:
            raise ValueError(f"AdamW: weight_decay must be >= 0, got {weight_decay!r}")
        return float(weight_decay)

    def _decayed(self, param, grad, group):
        return grad

    def _update(self, param, grad, state, lr, group):
        coeff = group["weight_decay"]
        if coeff and (self._apply_decay_param_fun is None or self._apply_decay_param_fun(param.name)):
            param.data -= (lr * coeff) * param.data
        super()._update(param, grad, state, lr, group)
