"""Layers (``framework.nn.Linear`` …), initializers and ``functional`` as F."""
from . import functional, initializer
from .layer import *  # noqa: F401,F403
from .layers import *  # noqa: F401,F403
from .rnn import *  # noqa: F401,F403
from .crf import *  # noqa: F401,F403
