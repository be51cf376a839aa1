"""RMSProp (Paddle's formula, optionally centered and with momentum)."""
from .. import backend
from .optimizer import Optimizer

__all__ = ["RMSProp"]


class RMSProp(Optimizer):
    """RMSProp, Paddle's formula:

    ``mean_square = rho * mean_square + (1 - rho) * grad ** 2``; with ``centered``,
    ``mean_grad = rho * mean_grad + (1 - rho) * grad`` and
    ``denom = mean_square - mean_grad ** 2 + epsilon``, else ``denom = mean_square + epsilon``;
    ``moment = momentum * moment + lr * grad / sqrt(denom)``; ``param -= moment``.
    All accumulators start at zero.

    Args:
        rho (float): decay of the running averages (default 0.95).
        epsilon (float): added inside the square root (default 1e-6).
        momentum (float): decay of ``moment`` (default 0).
        centered (bool): divide by the variance estimate instead of the raw second moment.
        Others as :class:`Optimizer`; ``rho``, ``epsilon``, ``momentum`` and ``centered`` may be set per group.
    """

    def __init__(self, learning_rate=0.001, rho=0.95, epsilon=1e-6, momentum=0.0, centered=False,
                 parameters=None, weight_decay=None, grad_clip=None):
        super().__init__(learning_rate, parameters, weight_decay, grad_clip,
                         hyperparameters={"rho": rho, "epsilon": epsilon, "momentum": momentum,
                                          "centered": centered})

    def _init_state(self, param, group):
        xp = backend.get_array_module(param)
        names = ("mean_square", "moment", "mean_grad") if group["centered"] else ("mean_square", "moment")
        return {name: xp.zeros_like(param) for name in names}

    def _update(self, param, grad, state, lr, group):
        xp = backend.get_array_module(param.data)
        rho = group["rho"]
        mean_square, moment = state["mean_square"], state["moment"]
        mean_square *= rho
        mean_square += (1 - rho) * grad * grad
        if group["centered"]:
            mean_grad = state["mean_grad"]
            mean_grad *= rho
            mean_grad += (1 - rho) * grad
            denom = mean_square - mean_grad * mean_grad + group["epsilon"]
        else:
            denom = mean_square + group["epsilon"]
        moment *= group["momentum"]
        moment += lr * grad / xp.sqrt(denom)
        param.data -= moment
