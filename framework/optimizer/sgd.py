"""Stochastic gradient descent, plain and with momentum (Paddle's formulas)."""
import numpy

from .. import backend, threadpool
from .optimizer import Optimizer

__all__ = ["SGD", "Momentum"]


class SGD(Optimizer):
    """Plain SGD: ``param -= lr * grad``.

    Args: as :class:`Optimizer` (``learning_rate``, ``parameters``, ``weight_decay``, ``grad_clip``).
    """

    def __init__(self, learning_rate=0.001, parameters=None, weight_decay=None, grad_clip=None):
        super().__init__(learning_rate, parameters, weight_decay, grad_clip)

    def _init_state(self, param, group):
        return {}

    def _update(self, param, grad, state, lr, group):
        param.data -= lr * grad


class Momentum(Optimizer):
    """SGD with momentum, Paddle's formula:

    ``velocity = momentum * velocity + grad``; then
    ``param -= lr * (grad + momentum * velocity)`` with ``use_nesterov``,
    else ``param -= lr * velocity``. ``velocity`` starts at zero.

    Args:
        momentum (float): the decay of the velocity (default 0.9).
        use_nesterov (bool): Nesterov's look-ahead update.
        Others as :class:`Optimizer`; ``momentum`` and ``use_nesterov`` may be set per group.
    """

    def __init__(self, learning_rate=0.001, momentum=0.9, parameters=None, use_nesterov=False,
                 weight_decay=None, grad_clip=None):
        super().__init__(learning_rate, parameters, weight_decay, grad_clip,
                         hyperparameters={"momentum": momentum, "use_nesterov": use_nesterov})

    def _check_group(self, group, index):
        super()._check_group(group, index)
        if not 0 <= group["momentum"]:
            raise ValueError(f"Momentum: parameter group {index} momentum must be >= 0, got {group['momentum']!r}")

    def _init_state(self, param, group):
        return {"velocity": backend.get_array_module(param).zeros_like(param)}

    def _update(self, param, grad, state, lr, group):
        mu, nesterov, velocity, data = group["momentum"], group["use_nesterov"], state["velocity"], param.data
        if isinstance(data, numpy.ndarray) and data.flags.c_contiguous and velocity.flags.c_contiguous:
            flat = [a.reshape(-1) for a in (data, velocity, grad)]     # elementwise: chunks change no bit
            threadpool.run_chunks(lambda lo, hi: _momentum_step(*(a[lo:hi] for a in flat), lr, mu, nesterov),
                                data.size)
        else:
            _momentum_step(data, velocity, grad, lr, mu, nesterov)


def _momentum_step(data, velocity, grad, lr, mu, nesterov):
    """velocity = mu * velocity + grad; data -= lr * (grad + mu * velocity) (Nesterov) or lr * velocity."""
    velocity *= mu
    velocity += grad
    if nesterov:
        data -= lr * (grad + mu * velocity)
    else:
        data -= lr * velocity
