"""Optimizers, gradient clipping, weight decay and learning-rate schedules.

``framework.optimizer.Adam(learning_rate=..., parameters=model.parameters())``;
``learning_rate`` may be a schedule from ``framework.optimizer.lr``; pass
``grad_clip=ClipGradByGlobalNorm(5.0)`` to clip; give parameter groups their own
rate multiplier with ``parameters=[{"params": [...], "learning_rate": 0.1}, ...]``.
"""
from . import lr
from .optimizer import Optimizer
from .sgd import SGD, Momentum
from .adam import Adam, AdamW
from .rmsprop import RMSProp
from .adagrad import Adagrad
from .clip import ClipGradBase, ClipGradByValue, ClipGradByNorm, ClipGradByGlobalNorm
from .regularizer import WeightDecayRegularizer, L1Decay, L2Decay

__all__ = ["lr", "Optimizer", "SGD", "Momentum", "Adam", "AdamW", "RMSProp", "Adagrad",
           "ClipGradBase", "ClipGradByValue", "ClipGradByNorm", "ClipGradByGlobalNorm",
           "WeightDecayRegularizer", "L1Decay", "L2Decay"]


def _register_for_configs():
    """Make the optimizers and schedules buildable from config sections (``type: Adam``)."""
    from ..registry import OPTIMIZERS, SCHEDULERS
    for cls in (SGD, Momentum, Adam, AdamW, RMSProp, Adagrad):
        OPTIMIZERS.register(cls)
    for name in lr.__all__:
        obj = getattr(lr, name)
        if isinstance(obj, type) and issubclass(obj, lr.LRScheduler) and obj is not lr.LRScheduler:
            SCHEDULERS.register(obj)


_register_for_configs()
