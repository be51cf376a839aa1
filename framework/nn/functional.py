"""``framework.nn.functional`` (imported as ``F``): activations, linear, conv,
pooling, normalisation, embedding, dropout, losses, sequence ops and the temporal shift."""
from ..ops import NN_MODULES
from ..ops.activation import *  # noqa: F401,F403
from ..ops.conv import *  # noqa: F401,F403
from ..ops.pooling import *  # noqa: F401,F403
from ..ops.norm import *  # noqa: F401,F403
from ..ops.common import *  # noqa: F401,F403
from ..ops.loss import *  # noqa: F401,F403
from ..ops.rnn import *  # noqa: F401,F403
from ..ops.crf import *  # noqa: F401,F403
from ..ops.temporal import *  # noqa: F401,F403
from ..ops.boxes import *  # noqa: F401,F403
from ..ops.linalg import linear  # noqa: F401

__all__ = ["linear"] + [name for module in NN_MODULES for name in module.__all__]
