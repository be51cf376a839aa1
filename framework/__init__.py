"""oar's framework: eager autograd on NumPy (CPU) and CuPy (GPU).

Tensor math lives here (``framework.matmul``, ``framework.concat`` …) and as
Tensor methods; layers in ``framework.nn``; optimizers in ``framework.optimizer``.
"""
from .runtime import set_up
set_up()                                          # before NumPy loads: framework/runtime.py says why
from .backend import set_device, get_device, is_gpu_available, DeviceError
from .tensor import Tensor, Function, OpError, to_tensor, no_grad, enable_grad, is_grad_enabled, set_grad_enabled
from .random import seed, get_rng_state, set_rng_state
from .ops.math import *  # noqa: F401,F403
from .ops.linalg import *  # noqa: F401,F403
from .ops.reduce import *  # noqa: F401,F403
from .ops.manipulation import *  # noqa: F401,F403
from .ops.activation import tanh, sigmoid  # noqa: F401
from . import amp, nn, optimizer
from .serialization import save, load
from .compat import dygraph, layers
