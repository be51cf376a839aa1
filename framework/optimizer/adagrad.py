"""Adagrad (Paddle's formula)."""
from .. import backend
from .optimizer import Optimizer

__all__ = ["Adagrad"]


class Adagrad(Optimizer):
    """Adagrad, Paddle's formula: ``moment += grad ** 2``;
    ``param -= lr * grad / (sqrt(moment) + epsilon)``.

    Args:
        epsilon (float): added to the denominator (default 1e-6).
        initial_accumulator_value (float): the starting value of ``moment``.
        Others as :class:`Optimizer`; ``epsilon`` and ``initial_accumulator_value`` may be set per group.
    """

    def __init__(self, learning_rate=0.001, epsilon=1e-6, parameters=None, weight_decay=None,
                 grad_clip=None, initial_accumulator_value=0.0):
        super().__init__(learning_rate, parameters, weight_decay, grad_clip,
                         hyperparameters={"epsilon": epsilon,
                                          "initial_accumulator_value": initial_accumulator_value})

    def _init_state(self, param, group):
        return {"moment": backend.get_array_module(param).full_like(param, group["initial_accumulator_value"])}

    def _update(self, param, grad, state, lr, group):
        moment = state["moment"]
        moment += grad * grad
        param.data -= lr * grad / (backend.get_array_module(param.data).sqrt(moment) + group["epsilon"])
