"""Differentiable ops on Tensors, each a Function with forward/backward on raw arrays.

Tensor math (math, linalg, reduce, manipulation) is re-exported at the top level
of ``framework``; neural-network ops (activation, conv, pooling, norm, common,
loss, rnn, crf, temporal, boxes) are re-exported in ``framework.nn.functional``.
"""
from . import math, linalg, reduce, manipulation, activation, conv, pooling, norm, common, loss, rnn, crf, temporal
from . import boxes
from .math import *  # noqa: F401,F403
from .linalg import *  # noqa: F401,F403
from .reduce import *  # noqa: F401,F403
from .manipulation import *  # noqa: F401,F403
from .activation import *  # noqa: F401,F403
from .conv import *  # noqa: F401,F403
from .pooling import *  # noqa: F401,F403
from .norm import *  # noqa: F401,F403
from .common import *  # noqa: F401,F403
from .loss import *  # noqa: F401,F403
from .rnn import *  # noqa: F401,F403
from .crf import *  # noqa: F401,F403
from .temporal import *  # noqa: F401,F403
from .boxes import *  # noqa: F401,F403

TENSOR_MODULES = (math, linalg, reduce, manipulation)
NN_MODULES = (activation, conv, pooling, norm, common, loss, rnn, crf, temporal, boxes)
__all__ = [name for module in TENSOR_MODULES + NN_MODULES for name in module.__all__]
