"""Vision models: ResNet-18/34/50/101, MobileNet V1/V2, SSD-MobileNetV1 (registered in ``framework.registry.MODELS``)."""
from . import mobilenet, resnet, ssd
from .common import ImageClassifier, TorchLinear, ConvBNAct
from .mobilenet import *  # noqa: F401,F403
from .resnet import *  # noqa: F401,F403
from .ssd import *  # noqa: F401,F403
from .weights import read_weights, load_pretrained, WeightsError

__all__ = (["ImageClassifier", "TorchLinear", "ConvBNAct", "read_weights", "load_pretrained", "WeightsError"]
           + resnet.__all__ + mobilenet.__all__ + ssd.__all__)
