"""The framework ops that ONNX export leaves out on purpose, each with the reason (``{op class: reason}``).

Every :class:`framework.Function` subclass of the framework is either in
:data:`framework.onnx.CONVERTERS` or here; a test fails for one that is in
neither (private base classes such as the losses' ``_ReducedLoss``, never
applied themselves, are not ops). Export of a program holding one of these ops names the op, its layer
and this reason. (Importable without onnx.)
"""
from ..distributed.sync_batch_norm import SyncNormalize
from ..ops.boxes import SmoothL1
from ..ops.common import Dropout
from ..ops.crf import LinearChainCRF
from ..ops.loss import BinaryCrossEntropyWithLogits, MarginRanking, NllLoss, PairwiseLoss, SoftmaxCrossEntropy
from ..ops.math import ToDevice

__all__ = ["NOT_EXPORTED"]

_LOSS = "a training loss: an exported program serves inference, and the task computes its losses"

NOT_EXPORTED = {
    Dropout: "training only: a layer is traced in eval mode, where dropout records no op",
    SyncNormalize: "training only: the synchronised batch statistics of data-parallel training (eval mode "
                   "records a plain BatchNorm)",
    ToDevice: "a copy between devices; an exported model runs on the device its runtime chooses",
    LinearChainCRF: "the CRF log-likelihood is a training loss",
    BinaryCrossEntropyWithLogits: _LOSS,
    MarginRanking: _LOSS,
    NllLoss: _LOSS,
    PairwiseLoss: _LOSS,
    SoftmaxCrossEntropy: _LOSS,
    SmoothL1: _LOSS,
}
