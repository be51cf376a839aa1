"""Non-local neural networks (C2D and I3D ResNets with embedded-Gaussian non-local blocks).

Wang, Girshick, Gupta, He, "Non-local Neural Networks", CVPR 2018; as
PaddleVideo 2019 ported facebookresearch/video-nonlocal-net:

- a 3-D ResNet on dense clips (B, 3, T, H, W): conv1 1x7x7 (C2D) or 5x7x7
  (I3D), stride (1, 2, 2); max pool 1x3x3 stride (1, 2, 2); a temporal max
  pool 2x1x1 stride 2 after res2; residual stages as ResNet's, where I3D
  inflates the first convolution of alternate blocks to 3 frames (res2 all
  blocks, res3/res4 the even-numbered ones, res5 the odd-numbered ones;
  ResNet-18/34 blocks inflate their first 3x3 to 3x3x3);
- an embedded-Gaussian non-local block (:class:`NonLocalBlock`) after every
  odd-numbered block of res3 and res4 (2 + 3 blocks in ResNet-50);
- global average pool, dropout, fc.

Input: clips (B, T, 3, H, W) (the data pipeline's layout; transposed inside).
Output: scores (B, num_classes).
"""

import numpy

import framework
import framework.nn.functional as F
from framework import nn
from framework.nn import initializer as init
from framework.registry import MODELS
from vision.models import load_pretrained
from vision.models.resnet import ARCHS

from .heads import ClassifierHead, check_clips
from .tsn import read_backbone_state

__all__ = ["NonLocalNet", "NonLocalBlock", "ResNet3D", "MODES", "INFLATE_INITS", "inflate_2d_state", "load_inflated"]

MODES = ("c2d", "i3d")


def conv3d(in_channels, out_channels, kernel, stride=(1, 1, 1), bias=False):
    """A Conv3D with "same" padding for odd kernels and torchvision-style N(0, sqrt(2 / fan_out)) weights."""
    fan_out = out_channels * kernel[0] * kernel[1] * kernel[2]
    return nn.Conv3D(in_channels, out_channels, kernel, stride=stride, padding=tuple(k // 2 for k in kernel),
                     bias_attr=None if bias else False, weight_attr=init.KaimingNormal(fan_in=fan_out))


class NonLocalBlock(nn.Layer):
    """Embedded-Gaussian non-local block with a residual connection.

    theta, phi, g: 1x1x1 convs to ``channels // 2``; phi and g are max-pooled
    1x2x2 (subsampling); attention softmax(theta^T phi / sqrt(C/2)) over the
    pooled positions; W: 1x1x1 conv back to ``channels``, then BatchNorm with
    its scale starting at 0 (so the block starts as the identity).

    Shape: (B, C, T, H, W) -> the same.
    """

    def __init__(self, channels, subsample=True):
        super().__init__()
        self.inner = channels // 2
        self.theta = conv3d(channels, self.inner, (1, 1, 1), bias=True)
        self.phi = conv3d(channels, self.inner, (1, 1, 1), bias=True)
        self.g = conv3d(channels, self.inner, (1, 1, 1), bias=True)
        self.out = conv3d(self.inner, channels, (1, 1, 1), bias=True)
        self.bn = nn.BatchNorm3D(channels)
        self.bn.weight.data[...] = 0
        self.subsample = bool(subsample)

    def forward(self, x):
        b, c, t, h, w = x.shape
        theta = self.theta(x).reshape((b, self.inner, -1))                 # (B, C', THW)
        phi, g = self.phi(x), self.g(x)
        if self.subsample:
            phi = F.max_pool3d(phi, (1, 2, 2), stride=(1, 2, 2))
            g = F.max_pool3d(g, (1, 2, 2), stride=(1, 2, 2))
        phi = phi.reshape((b, self.inner, -1))                             # (B, C', M)
        g = g.reshape((b, self.inner, -1))                                 # (B, C', M)
        attention = F.softmax(framework.matmul(theta.transpose((0, 2, 1)), phi) * (self.inner ** -0.5), axis=-1)
        y = framework.matmul(attention, g.transpose((0, 2, 1)))           # (B, THW, C')
        y = y.transpose((0, 2, 1)).reshape((b, self.inner, t, h, w))      # (B, C', T, H, W)
        return x + self.bn(self.out(y))


class Block3D(nn.Layer):
    """A residual block (basic or bottleneck) with an optional temporal kernel and non-local block after it.

    Bottleneck: 1x1 (t x 1 x 1 when inflated), 1x3x3 (spatial stride), 1x1 (x4).
    Basic: 3x3 (t x 3 x 3 when inflated, spatial stride), 1x3x3.
    Shape: (B, C_in, T, H, W) -> (B, C_out, T, H_out, W_out).
    """

    def __init__(self, kind, in_channels, channels, stride, inflate, nonlocal_block):
        super().__init__()
        t = 3 if inflate else 1
        spatial = (1, stride, stride)
        if kind == "bottleneck":
            out_channels = channels * 4
            specs = [(in_channels, channels, (t, 1, 1), (1, 1, 1)), (channels, channels, (1, 3, 3), spatial),
                     (channels, out_channels, (1, 1, 1), (1, 1, 1))]
        else:
            out_channels = channels
            specs = [(in_channels, channels, (t, 3, 3), spatial), (channels, channels, (1, 3, 3), (1, 1, 1))]
        self.convs = nn.LayerList([conv3d(i, o, k, s) for i, o, k, s in specs])
        self.bns = nn.LayerList([nn.BatchNorm3D(o) for _, o, _, _ in specs])
        self.downsample = None
        if stride != 1 or in_channels != out_channels:
            self.downsample = nn.Sequential(conv3d(in_channels, out_channels, (1, 1, 1), spatial),
                                            nn.BatchNorm3D(out_channels))
        self.nonlocal_block = NonLocalBlock(out_channels) if nonlocal_block else None
        self.out_channels = out_channels

    def forward(self, x):
        shortcut = x if self.downsample is None else self.downsample(x)
        y = x
        for i, (conv, bn) in enumerate(zip(self.convs, self.bns)):
            y = bn(conv(y))
            if i < len(self.convs) - 1:
                y = F.relu(y)
        y = F.relu(y + shortcut)
        return y if self.nonlocal_block is None else self.nonlocal_block(y)


class ResNet3D(nn.Layer):
    """The 3-D ResNet of the module docstring, without a head.

    Args:
        depth: 10, 18, 34, 50 or 101. mode: "c2d" or "i3d". base_channels: width of
        res2 (64 standard). nonlocal_stages: stage indices (0-based, res2 = 0)
        that get a non-local block after each odd-numbered block.

    Shape: (B, 3, T, H, W) -> (B, num_features, T / 2, H / 32, W / 32).
    """

    head_name = "fc"  # it has none: weights files of 2D ResNets name their classifier so

    def __init__(self, depth=50, mode="c2d", base_channels=64, nonlocal_stages=(1, 2)):
        super().__init__()
        if depth not in ARCHS or mode not in MODES:
            raise ValueError(f"ResNet3D: depth must be one of {sorted(ARCHS)} and mode one of {MODES}, "
                             f"got {depth}, {mode!r}")
        kind, layers = ARCHS[depth]
        inflated = mode == "i3d"
        self.conv1 = conv3d(3, base_channels, (5 if inflated else 1, 7, 7), (1, 2, 2))
        self.bn1 = nn.BatchNorm3D(base_channels)
        channels_in = base_channels
        self.stages = nn.LayerList()
        for stage, blocks in enumerate(layers):
            channels = base_channels * 2 ** stage
            inflate_parity = 1 if stage == 3 else 0
            stage_blocks = []
            for index in range(blocks):
                inflate = inflated and (stage == 0 or index % 2 == inflate_parity)
                block = Block3D(kind, channels_in, channels, 2 if index == 0 and stage > 0 else 1, inflate,
                                stage in nonlocal_stages and index % 2 == 1)
                channels_in = block.out_channels
                stage_blocks.append(block)
            self.stages.append(nn.Sequential(*stage_blocks))
        self.num_features = channels_in

    def forward(self, x):
        x = F.relu(self.bn1(self.conv1(x)))
        x = F.max_pool3d(x, (1, 3, 3), stride=(1, 2, 2), padding=(0, 1, 1))
        for i, stage in enumerate(self.stages):
            x = stage(x)
            if i == 0:
                x = F.max_pool3d(x, (2, 1, 1), stride=(2, 1, 1))  # temporal pooling after res2
        return x


#: How a 2D kernel fills the t frames of a 3D one. "average": repeated over the frames and divided by t, as I3D
#: and the 2019 Non-local nets started from ImageNet, so a clip of equal frames gives the 2D network's
#: response. "centre": the 2D kernel on the middle frame and zeros on the others, so each frame starts seen
#: on its own (what the averaged kernel blurs: frames spread over a video show a turning mark at several
#: angles, and their average has no orientation left); the temporal weights grow from zero in training.
INFLATE_INITS = ("average", "centre")


def _check_inflate_init(inflate_init):
    if inflate_init not in INFLATE_INITS:
        raise ValueError(f"inflate_init must be one of {sorted(INFLATE_INITS)}, got {inflate_init!r}")


def _inflate(kernel, t, inflate_init):
    """A 2D kernel (O, I, kh, kw) as a 3D one (O, I, t, kh, kw) by ``inflate_init``."""
    if inflate_init == "average":
        return numpy.repeat(kernel[:, :, None], t, axis=2) / t
    out = numpy.zeros(kernel.shape[:2] + (t,) + kernel.shape[2:], dtype=kernel.dtype)
    out[:, :, t // 2] = kernel
    return out


def inflate_2d_state(state):
    """A 2D ResNet's entries (torchvision names: ``conv1``, ``layer2.0.conv1``, ``layer2.0.bn1``,
    ``layer2.0.downsample.0``) renamed to :class:`ResNet3D`'s (``stages.1.0.convs.0``, ``bns.0``, …),
    kernels still 2D (see :func:`load_inflated`)."""
    renamed = {}
    for key, value in state.items():
        parts = key.split(".")
        if parts[0].startswith("layer") and parts[0][5:].isdigit():
            stage = int(parts[0][5:]) - 1
            layer = parts[2]
            if layer[:-1] in ("conv", "bn") and layer[-1].isdigit():
                layer = f"{layer[:-1]}s.{int(layer[-1]) - 1}"
            key = ".".join(["stages", str(stage), parts[1], layer] + parts[3:])
        renamed[key] = value
    return renamed


def load_inflated(backbone, path, inflate_init="average"):
    """Load the 2D ResNet in weights file ``path`` into ``backbone`` (a :class:`ResNet3D`): each 2D kernel
    (O, I, kh, kw) becomes (O, I, t, kh, kw) by ``inflate_init`` (see :data:`INFLATE_INITS`). The non-local
    blocks keep their initialisation (their output BN starts at 0, so each block starts as the identity).
    Missing or mismatched entries raise :class:`vision.models.WeightsError`."""
    _check_inflate_init(inflate_init)
    state = inflate_2d_state(read_backbone_state(path))
    own = backbone.state_dict()
    for key, value in state.items():
        target = own.get(key)
        if target is not None and value.ndim == 4 and target.ndim == 5:
            state[key] = _inflate(value, target.shape[2], inflate_init)
    state.update({k: v.numpy() for k, v in own.items() if ".nonlocal_block." in k})
    load_pretrained(backbone, state, source=path)


@MODELS.register()
class NonLocalNet(nn.Layer):
    """C2D / I3D ResNet with non-local blocks in res3 and res4, average pool, dropout, fc.

    Args:
        num_classes: output classes.
        depth: ResNet depth (10, 18, 34, 50, 101).
        mode: "c2d" (2-D kernels; blind to frame order except through the
            non-local blocks) or "i3d" (inflated temporal kernels).
        base_channels: width of res2.
        dropout: before fc (0.5 in the 2019 config).
        nonlocal_stages: which stages get non-local blocks (default res3, res4).
        pretrained: weights of a 2D ResNet of the same depth and width (or a video model's ``backbone.``),
            inflated into the 3D kernels (see :func:`load_inflated`).
        inflate_init: how the pretrained 2D kernels fill the temporal ones, "average" (the paper's) or
            "centre" (:data:`INFLATE_INITS`).

    Shape: (B, T, 3, H, W) with even T -> (B, num_classes).
    """

    def __init__(self, num_classes: int = 400, depth: int = 50, mode: str = "c2d", base_channels: int = 64,
                 dropout: float = 0.5, nonlocal_stages: list = (1, 2), pretrained: str = None,
                 inflate_init: str = "average"):
        super().__init__()
        self.num_classes = int(num_classes)
        _check_inflate_init(inflate_init)           # checked with or without weights to inflate
        self.backbone = ResNet3D(depth, mode, base_channels, tuple(int(s) for s in nonlocal_stages))
        self.head = ClassifierHead(self.backbone.num_features, self.num_classes, dropout)
        if pretrained:
            load_inflated(self.backbone, pretrained, inflate_init)

    def forward(self, x):
        check_clips(self, x, 3)
        x = self.backbone(x.transpose((0, 2, 1, 3, 4)))                  # (B, F, T', h, w) from (B, 3, T, H, W)
        return self.head(F.adaptive_avg_pool3d(x, 1).flatten(1))        # (B, num_classes)
