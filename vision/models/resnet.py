"""ResNet-18/34/50/101.

He, Zhang, Ren, Sun, "Deep Residual Learning for Image Recognition", CVPR 2016,
as torchvision defines it ("ResNet v1.5": a bottleneck's stride sits on its
3x3 convolution, not on the first 1x1).

Input: images (N, in_channels, H, W). Output: logits (N, num_classes).
``forward_features`` returns the last stage's map (N, num_features, H/32, W/32)
with the default strides (H/8 with ``strides=[1, 2, 1, 1]``,
``dilations=[1, 1, 2, 4]``); ``forward_head`` average-pools it and applies
``fc``. With ``num_classes=0`` there is no ``fc`` and ``forward`` returns the
pooled features (N, num_features).

Parameter and buffer names and shapes are torchvision's (``conv1.weight``,
``bn1.running_mean``, ``layer1.0.conv1.weight``, ``layer1.0.downsample.0.weight``,
``fc.weight`` stored (num_classes, num_features)), so a torchvision state dict
loads with no renaming (``num_batches_tracked`` entries are ignored).

Reuse by video models (as mmaction2's ResNetTSM subclasses ResNet):

- a block's residual branch is ``forward_residual(x)``; a subclass of
  BasicBlock/Bottleneck overrides it (e.g. to shift channels in time first);
- ``ResNet.block_types`` maps "basic"/"bottleneck" to the block classes, and
  ``ResNet.make_block(stage, index, ...)`` builds each block, so a subclass can
  change blocks by position (e.g. add non-local blocks in stages 3 and 4);
- ``forward_stem`` and ``stage_names`` let a subclass run the stages itself
  (e.g. temporal modules between stages).
"""
import framework.nn.functional as F
from framework import nn
from framework.registry import MODELS

from .common import ImageClassifier, TorchLinear, make_conv, register_variant

__all__ = ["ResidualBlock", "BasicBlock", "Bottleneck", "ResNet", "ARCHS",
           "resnet18", "resnet34", "resnet50", "resnet101"]

# depth -> (block type, blocks per stage); ResNet-10 is the small net of the generated-video configs
ARCHS = {10: ("basic", (1, 1, 1, 1)), 18: ("basic", (2, 2, 2, 2)), 34: ("basic", (3, 4, 6, 3)),
         50: ("bottleneck", (3, 4, 6, 3)), 101: ("bottleneck", (3, 4, 23, 3))}


class ResidualBlock(nn.Layer):
    """Base of the residual blocks: ``relu(forward_residual(x) + shortcut(x))``.

    ``downsample`` is the shortcut layer when the shape changes (else the
    shortcut is the identity); subclasses define ``forward_residual`` and
    ``last_norm`` and set ``expansion`` (output channels / ``channels``).
    """

    expansion = 1

    def forward_residual(self, x):
        """The residual branch: (N, C_in, H, W) -> (N, C_out, H_out, W_out), before the addition."""
        raise NotImplementedError

    def last_norm(self):
        """The BatchNorm closing the residual branch (zeroed by ``zero_init_residual``)."""
        raise NotImplementedError

    def forward(self, x):
        shortcut = x if self.downsample is None else self.downsample(x)
        return F.relu(self.forward_residual(x) + shortcut)


class BasicBlock(ResidualBlock):
    """Two 3x3 conv-BN layers plus a shortcut: relu(bn2(conv2(relu(bn1(conv1(x))))) + shortcut(x)).

    Args:
        in_channels: C_in. channels: C of both convolutions (output C = channels * expansion).
        stride: of conv1. dilation: of both 3x3 convolutions (padding = dilation).
        downsample: the shortcut layer (1x1 conv + BN) when the shape changes, else None.

    Shape: (N, C_in, H, W) -> (N, channels, H_out, W_out), H_out = ceil(H / stride).
    """

    expansion = 1

    def __init__(self, in_channels, channels, stride=1, dilation=1, downsample=None):
        super().__init__()
        self.conv1 = make_conv(in_channels, channels, 3, stride, padding=dilation, dilation=dilation)
        self.bn1 = nn.BatchNorm2D(channels)
        self.conv2 = make_conv(channels, channels, 3, padding=dilation, dilation=dilation)
        self.bn2 = nn.BatchNorm2D(channels)
        self.downsample = downsample

    def forward_residual(self, x):
        x = F.relu(self.bn1(self.conv1(x)))
        return self.bn2(self.conv2(x))

    def last_norm(self):
        return self.bn2


class Bottleneck(ResidualBlock):
    """1x1 reduce, 3x3 (strided, dilated), 1x1 expand (x4), each with BN, plus a shortcut.

    Args as :class:`BasicBlock`; the output has ``channels * 4`` channels.
    Shape: (N, C_in, H, W) -> (N, 4 * channels, H_out, W_out), H_out = ceil(H / stride).
    """

    expansion = 4

    def __init__(self, in_channels, channels, stride=1, dilation=1, downsample=None):
        super().__init__()
        self.conv1 = make_conv(in_channels, channels, 1)
        self.bn1 = nn.BatchNorm2D(channels)
        self.conv2 = make_conv(channels, channels, 3, stride, padding=dilation, dilation=dilation)
        self.bn2 = nn.BatchNorm2D(channels)
        self.conv3 = make_conv(channels, channels * self.expansion, 1)
        self.bn3 = nn.BatchNorm2D(channels * self.expansion)
        self.downsample = downsample

    def forward_residual(self, x):
        x = F.relu(self.bn1(self.conv1(x)))
        x = F.relu(self.bn2(self.conv2(x)))
        return self.bn3(self.conv3(x))

    def last_norm(self):
        return self.bn3


@MODELS.register()
class ResNet(ImageClassifier):
    """A ResNet: stem (7x7/2 conv, BN, ReLU, 3x3/2 max pool), residual stages, average pool, fc.

    Args:
        block: "basic" (ResNet-18/34) or "bottleneck" (ResNet-50/101).
        layers: blocks per stage, e.g. [3, 4, 6, 3]; stage i is named ``layer{i+1}``
            and has ``base_channels * 2**i`` channels (times the block's expansion).
        num_classes: size of ``fc``; 0 gives a feature extractor without ``fc``.
        in_channels: channels of the input images (conv1's input).
        base_channels: width of the stem and the first stage (64 in every ResNet).
        strides: stride of each stage's first block (default [1, 2, 2, 2]).
        dilations: dilation of each stage's 3x3 convolutions (default all 1).
        frozen_stages: -1 freezes nothing; 0 freezes the stem (conv1, bn1); k
            also freezes layer1 .. layer{k} (parameters fixed, BN in eval mode).
        frozen_bn_stats: False lets the BatchNorm layers of the frozen stages keep
            normalising by batch statistics and updating their running ones in training
            (parameters still fixed; see :class:`ImageClassifier`).
        norm_eval: keep every BatchNorm in eval mode while training.
        zero_init_residual: start each residual branch's last BN scale at 0.

    Shape: (N, in_channels, H, W) -> (N, num_classes) (or (N, num_features) without fc).
    """

    block_types = {"basic": BasicBlock, "bottleneck": Bottleneck}

    def __init__(self, block: str = "bottleneck", layers: list = (3, 4, 6, 3), num_classes: int = 1000,
                 in_channels: int = 3, base_channels: int = 64, strides: list = None, dilations: list = None,
                 frozen_stages: int = -1, norm_eval: bool = False, zero_init_residual: bool = False,
                 frozen_bn_stats: bool = True):
        super().__init__(norm_eval=norm_eval, frozen_bn_stats=frozen_bn_stats)
        if block not in self.block_types:
            raise ValueError(f"ResNet: block must be one of {sorted(self.block_types)}, got {block!r}")
        layers = [int(n) for n in layers]
        stages = len(layers)
        strides = list(strides) if strides is not None else [1, 2, 2, 2][:stages]
        dilations = list(dilations) if dilations is not None else [1] * stages
        if not 1 <= stages <= 4 or len(strides) != stages or len(dilations) != stages or min(layers) < 1:
            raise ValueError(f"ResNet: layers {layers}, strides {strides} and dilations {dilations} must have "
                             f"one entry per stage (1 to 4 stages, at least one block each)")
        if not -1 <= frozen_stages <= stages:
            raise ValueError(f"ResNet: frozen_stages must be in [-1, {stages}], got {frozen_stages}")
        block_type = self.block_types[block]
        self.in_channels, self.num_classes = int(in_channels), int(num_classes)
        self.conv1 = make_conv(self.in_channels, base_channels, 7, stride=2, padding=3)
        self.bn1 = nn.BatchNorm2D(base_channels)
        channels_in = base_channels
        self.stage_names = []
        for i, (blocks, stride, dilation) in enumerate(zip(layers, strides, dilations)):
            channels = base_channels * 2 ** i
            stage = self.make_stage(block_type, i, channels_in, channels, blocks, stride, dilation)
            channels_in = channels * block_type.expansion
            setattr(self, f"layer{i + 1}", stage)
            self.stage_names.append(f"layer{i + 1}")
        self.num_features = channels_in
        self.fc = TorchLinear(self.num_features, self.num_classes) if self.num_classes > 0 else None
        if zero_init_residual:
            for name in self.stage_names:
                for residual_block in getattr(self, name):
                    residual_block.last_norm().weight.data[...] = 0
        self.base_frozen = tuple(["conv1", "bn1"] + self.stage_names[:frozen_stages]) if frozen_stages >= 0 else ()
        self.freeze(self.base_frozen)

    def make_stage(self, block_type, stage, in_channels, channels, blocks, stride, dilation):
        """Stage ``stage`` (0-based) as a Sequential of ``blocks`` blocks named '0', '1', …

        The first block takes ``in_channels`` and the stride, and gets a
        ``downsample`` shortcut (1x1 conv + BN, torchvision's) when its input and
        output shapes differ.
        """
        out_channels = channels * block_type.expansion
        downsample = None
        if stride != 1 or in_channels != out_channels:
            downsample = nn.Sequential(make_conv(in_channels, out_channels, 1, stride=stride),
                                       nn.BatchNorm2D(out_channels))
        blocks_list = [self.make_block(block_type, stage, 0, in_channels, channels, stride, dilation, downsample)]
        for index in range(1, blocks):
            blocks_list.append(self.make_block(block_type, stage, index, out_channels, channels, 1, dilation, None))
        return nn.Sequential(*blocks_list)

    def make_block(self, block_type, stage, index, in_channels, channels, stride, dilation, downsample):
        """Block ``index`` of stage ``stage``; subclasses override it to change blocks by position."""
        return block_type(in_channels, channels, stride=stride, dilation=dilation, downsample=downsample)

    def forward_stem(self, x):
        """(N, in_channels, H, W) -> (N, base_channels, H/4, W/4): conv1, bn1, ReLU, 3x3/2 max pool."""
        self.check_input(x, self.in_channels)
        x = F.relu(self.bn1(self.conv1(x)))
        return F.max_pool2d(x, 3, stride=2, padding=1)

    def forward_features(self, x):
        """(N, in_channels, H, W) -> (N, num_features, H/32, W/32) with the default strides."""
        x = self.forward_stem(x)
        for name in self.stage_names:
            x = getattr(self, name)(x)
        return x


def _resnet(depth):
    block, layers = ARCHS[depth]
    doc = (f"ResNet-{depth} ({block} blocks {list(layers)}); other arguments as :class:`ResNet`. "
           f"Shape: (N, 3, H, W) -> (N, num_classes).")
    return register_variant(f"resnet{depth}", ResNet, doc, block=block, layers=list(layers))


resnet18 = _resnet(18)
resnet34 = _resnet(34)
resnet50 = _resnet(50)
resnet101 = _resnet(101)
