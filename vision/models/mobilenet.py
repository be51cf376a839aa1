"""MobileNet V1 and V2.

- V1: Howard et al., "MobileNets: Efficient Convolutional Neural Networks for
  Mobile Vision Applications", 2017 (Table 1). A 3x3/2 conv, then 13
  depthwise-separable blocks (3x3 depthwise conv-BN-ReLU, 1x1 conv-BN-ReLU),
  average pool, fc. The width multiplier ``scale`` gives every layer
  ``int(channels * scale)`` channels, as PaddleCV's 2019 ``MobileNet(scale)``
  and Keras' ``alpha``. The last depthwise conv has stride 1 (Table 1's
  "s2" there is a known misprint: its input and output are both 7x7; Keras
  and PaddleCV use stride 1). At scale 1.0 and 1000 classes: 4,231,976
  parameters, Keras' trainable count for ``MobileNet(alpha=1.0)``.
- V2: Sandler et al., "MobileNetV2: Inverted Residuals and Linear
  Bottlenecks", CVPR 2018, exactly as torchvision defines it (names
  ``features.{i}…``, ``classifier.1.weight`` stored (num_classes, 1280); channel
  counts rounded to multiples of 8 by ``make_divisible``); 3,504,872
  parameters at width 1.0 and 1000 classes.

Input: images (N, 3, H, W). Output: logits (N, num_classes);
``forward_features`` gives (N, num_features, H/32, W/32); ``num_classes=0``
drops the classifier and ``forward`` returns pooled features (N, num_features).
"""
from framework import nn

from .common import ConvBNAct, ImageClassifier, TorchLinear, make_conv, register_variant

__all__ = ["MobileNetV1", "MobileNetV2", "InvertedResidual", "make_divisible", "mobilenet_v1", "mobilenet_v2"]

# MobileNet V1 after the stem: (output channels, stride) of each depthwise-separable block
V1_BLOCKS = ((64, 1), (128, 2), (128, 1), (256, 2), (256, 1), (512, 2),
             (512, 1), (512, 1), (512, 1), (512, 1), (512, 1), (1024, 2), (1024, 1))

# MobileNet V2: (expansion t, output channels c, repeats n, first stride s), as in the paper's Table 2
V2_SETTINGS = ((1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2),
               (6, 96, 3, 1), (6, 160, 3, 2), (6, 320, 1, 1))


class MobileNetV1(ImageClassifier):
    """MobileNet V1 with a width multiplier (see the module docstring).

    Args:
        num_classes: size of ``fc``; 0 gives a feature extractor.
        scale: width multiplier (1.0, 0.75, 0.5, 0.25 in the paper).
        in_channels: channels of the input images.
        norm_eval: keep every BatchNorm in eval mode while training.

    Names: ``features.0`` is the stem (ConvBNAct: ``.0`` conv, ``.1`` BN);
    ``features.{i}`` (i = 1..13) is a block whose ``.0`` is the depthwise and
    ``.1`` the pointwise ConvBNAct; ``fc.weight`` is (num_classes, num_features).

    Shape: (N, in_channels, H, W) -> (N, num_classes).
    """

    def __init__(self, num_classes: int = 1000, scale: float = 1.0, in_channels: int = 3, norm_eval: bool = False):
        super().__init__(norm_eval=norm_eval)
        if scale <= 0:
            raise ValueError(f"MobileNetV1: scale must be positive, got {scale}")
        self.in_channels, self.num_classes = int(in_channels), int(num_classes)
        width = int(32 * scale)
        layers = [ConvBNAct(self.in_channels, width, 3, stride=2)]
        for channels, stride in V1_BLOCKS:
            out = int(channels * scale)
            layers.append(nn.Sequential(ConvBNAct(width, width, 3, stride=stride, groups=width),
                                        ConvBNAct(width, out, 1)))
            width = out
        self.features = nn.Sequential(*layers)
        self.num_features = width
        self.fc = TorchLinear(width, self.num_classes) if self.num_classes > 0 else None

    def forward_features(self, x):
        """(N, in_channels, H, W) -> (N, num_features, H/32, W/32)."""
        self.check_input(x, self.in_channels)
        return self.features(x)


def make_divisible(value, divisor=8, min_value=None):
    """``value`` rounded to the nearest multiple of ``divisor`` (at least ``min_value``, default
    ``divisor``) and never below 90% of ``value`` (torchvision's ``_make_divisible``)."""
    min_value = divisor if min_value is None else min_value
    rounded = max(min_value, int(value + divisor / 2) // divisor * divisor)
    return rounded + divisor if rounded < 0.9 * value else rounded


class InvertedResidual(nn.Layer):
    """MobileNet V2 block: 1x1 expand (ReLU6, skipped when ``expand_ratio`` is 1), 3x3 depthwise
    (ReLU6), 1x1 linear projection + BN; the input is added back when stride is 1 and the
    channels match.

    Names as torchvision: ``conv.{0,1,…}`` (expand and depthwise ConvBNActs, the
    projection conv, its BN).

    Shape: (N, in_channels, H, W) -> (N, out_channels, ceil(H / stride), ceil(W / stride)).
    """

    def __init__(self, in_channels, out_channels, stride, expand_ratio):
        super().__init__()
        hidden = int(round(in_channels * expand_ratio))
        self.use_shortcut = stride == 1 and in_channels == out_channels
        layers = [ConvBNAct(in_channels, hidden, 1, activation="relu6")] if expand_ratio != 1 else []
        layers += [ConvBNAct(hidden, hidden, 3, stride=stride, groups=hidden, activation="relu6"),
                   make_conv(hidden, out_channels, 1), nn.BatchNorm2D(out_channels)]
        self.conv = nn.Sequential(*layers)

    def forward(self, x):
        y = self.conv(x)
        return x + y if self.use_shortcut else y


class MobileNetV2(ImageClassifier):
    """MobileNet V2 as torchvision (see the module docstring).

    Args:
        num_classes: size of the classifier; 0 gives a feature extractor.
        width_mult: width multiplier; channels are ``make_divisible(c * width_mult)``
            and the last conv has ``make_divisible(1280 * max(1, width_mult))``.
        dropout: dropout before the classifier (0.2 in torchvision).
        in_channels: channels of the input images.
        norm_eval: keep every BatchNorm in eval mode while training.

    Names: ``features.0`` stem, ``features.1..17`` InvertedResidual blocks,
    ``features.18`` the last 1x1 ConvBNAct, ``classifier.1`` the linear layer
    (``classifier.0`` is the dropout).

    Shape: (N, in_channels, H, W) -> (N, num_classes).
    """

    head_name = "classifier"

    def __init__(self, num_classes: int = 1000, width_mult: float = 1.0, dropout: float = 0.2,
                 in_channels: int = 3, norm_eval: bool = False):
        super().__init__(norm_eval=norm_eval)
        if width_mult <= 0:
            raise ValueError(f"MobileNetV2: width_mult must be positive, got {width_mult}")
        self.in_channels, self.num_classes = int(in_channels), int(num_classes)
        width = make_divisible(32 * width_mult)
        self.num_features = make_divisible(1280 * max(1.0, width_mult))
        layers = [ConvBNAct(self.in_channels, width, 3, stride=2, activation="relu6")]
        for expand_ratio, channels, repeats, stride in V2_SETTINGS:
            out = make_divisible(channels * width_mult)
            for i in range(repeats):
                layers.append(InvertedResidual(width, out, stride if i == 0 else 1, expand_ratio))
                width = out
        layers.append(ConvBNAct(width, self.num_features, 1, activation="relu6"))
        self.features = nn.Sequential(*layers)
        self.classifier = (nn.Sequential(nn.Dropout(dropout), TorchLinear(self.num_features, self.num_classes,
                                                                          weight_std=0.01))
                           if self.num_classes > 0 else None)

    def forward_features(self, x):
        """(N, in_channels, H, W) -> (N, num_features, H/32, W/32)."""
        self.check_input(x, self.in_channels)
        return self.features(x)


mobilenet_v1 = register_variant("mobilenet_v1", MobileNetV1,
                                "MobileNet V1 (width multiplier ``scale``); arguments as :class:`MobileNetV1`.")
mobilenet_v2 = register_variant("mobilenet_v2", MobileNetV2,
                                "MobileNet V2 as torchvision; arguments as :class:`MobileNetV2`.")
