"""Compiled Adam update, one pass over the parameter, its two moments and its gradient (NumPy's version makes
nine passes, each reading or writing whole arrays).

The same operations in the same order as the NumPy passes (:func:`framework.kernels.adam.adam_update`), compiled
without fastmath (no fused multiply-adds, exact division and square root), on the same scalars of the arrays'
dtype: the same bits. Elements [first, stop) of the flat arrays per call, so the threads of
:mod:`framework.threadpool` split them. The scalars: ``beta1``, ``rest1`` (1 - beta1, rounded once),
``beta2``, ``rest2``, ``epsilon`` (already multiplied by sqrt(1 - beta2^t)) and ``step_size``
(lr * sqrt(1 - beta2^t) / (1 - beta1^t)).

Shapes: p, m, v, g (K,) of one float dtype, C-contiguous; p, m and v updated in place.
"""
import math

from .compiler import kernel

__all__ = ["adam_elements"]


@kernel(fastmath=False)
def adam_elements(p, m, v, g, first, stop, beta1, rest1, beta2, rest2, epsilon, step_size):
    """Elements [first, stop) of one Adam update; see the module docstring."""
    for i in range(first, stop):
        grad = g[i]
        moment1 = beta1 * m[i] + rest1 * grad
        moment2 = beta2 * v[i] + rest2 * (grad * grad)
        m[i] = moment1
        v[i] = moment2
        p[i] -= step_size * (moment1 / (math.sqrt(moment2) + epsilon))
