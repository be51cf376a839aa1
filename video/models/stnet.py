"""StNet: spatial-temporal modeling with super-images.

He, Gan, Chen, Zhou, Yu, Li, Wen, "StNet: Local and Global
Spatial-Temporal Modeling in Action Recognition", AAAI 2019; as PaddleVideo
2019 (``stnet_res_model.py``) built it:

- each of the T segments contributes ``seglen`` consecutive frames, stacked
  on the channel axis into one "super-image" (3 * seglen channels) that the
  ResNet's conv1 takes;
- after res3 and res4, a temporal block: 3x1x1 Conv3D (with bias) over the
  segments, ReLU, BatchNorm, plus the block's input;
- the pooled features (B, F, T) go through the temporal Xception block
  (:class:`TemporalXception`, F -> F / 2 channels), are max-pooled over
  time, and a fc gives the scores.

Input: clips (B, T * seglen, 3, H, W) (segment-major: the seglen frames of a
segment are consecutive). Output: scores (B, num_classes).
"""
import framework.nn.functional as F
from framework import nn
from framework.registry import MODELS
from vision.models.resnet import ResNet

from .heads import ClassifierHead, check_clips
from .tsn import load_backbone, resnet_backbone

__all__ = ["StNet", "TemporalConvBlock", "TemporalXception"]


class TemporalConvBlock(nn.Layer):
    """x + BN(ReLU(Conv3D_{3x1x1}(x))) over the T segments of each clip.

    Shape: ``forward(x, num_segments)``: (B * T, C, H, W) -> the same, T = ``num_segments``.
    """

    def __init__(self, channels):
        super().__init__()
        self.conv = nn.Conv3D(channels, channels, (3, 1, 1), padding=(1, 0, 0))
        self.bn = nn.BatchNorm3D(channels)

    def forward(self, x, num_segments):
        n_t, c, h, w = x.shape
        clips = x.reshape((n_t // num_segments, num_segments, c, h, w))  # (B, T, C, H, W)
        clips = clips.transpose((0, 2, 1, 3, 4))                                   # (B, C, T, H, W)
        out = self.bn(F.relu(self.conv(clips))) + clips
        return out.transpose((0, 2, 1, 3, 4)).reshape((n_t, c, h, w))              # (B*T, C, H, W)


class TemporalXception(nn.Layer):
    """StNet's temporal Xception block over a feature sequence (B, C, T) -> (B, C / 2, T).

    bn -> [depthwise 3-tap conv (C) -> 1x1 conv (C/2) -> BN, ReLU -> depthwise
    3-tap conv (C/2) -> 1x1 conv (C/2)] + [1x1 conv (C/2) of bn's output] ->
    BN -> ReLU. Every conv has a bias (as Paddle's).
    """

    def __init__(self, channels):
        super().__init__()
        half = channels // 2
        self.bn = nn.BatchNorm1D(channels)
        self.att_conv = nn.Conv1D(channels, channels, 3, padding=1, groups=channels)
        self.att_2 = nn.Conv1D(channels, half, 1)
        self.bndw = nn.BatchNorm1D(half)
        self.att1 = nn.Conv1D(half, half, 3, padding=1, groups=half)
        self.att1_2 = nn.Conv1D(half, half, 1)
        self.dw = nn.Conv1D(channels, half, 1)
        self.bn2 = nn.BatchNorm1D(half)

    def forward(self, x):
        x = self.bn(x)
        branch = F.relu(self.bndw(self.att_2(self.att_conv(x))))
        branch = self.att1_2(self.att1(branch))
        return F.relu(self.bn2(self.dw(x) + branch))


@MODELS.register()
class StNet(nn.Layer):
    """ResNet on super-images, temporal 3x1x1 blocks after res3 and res4, temporal Xception, max over time, fc.

    Args:
        num_classes: output classes.
        depth: ResNet depth (10, 18, 34, 50, 101).
        num_segments: T, the segments of a training clip (a clip of any T * seglen frames works).
        seglen: frames stacked into each super-image.
        base_channels: width of the ResNet's first stage.
        dropout: before fc (0 in Paddle's StNet).
        pretrained: weights of a 2D ResNet (or of a video model's ``backbone.``) for the backbone, conv1
            inflated to the super-image (see :func:`video.models.tsn.load_backbone`), as StNet started
            from ImageNet.
        frozen_stages, norm_eval, frozen_bn_stats: as :class:`vision.models.ResNet` (for the backbone; the
            temporal blocks and the head always train).

    Shape: (B, T * seglen, 3, H, W) -> (B, num_classes).
    """

    def __init__(self, num_classes: int = 400, depth: int = 50, num_segments: int = 7, seglen: int = 5,
                 base_channels: int = 64, dropout: float = 0.0, pretrained: str = None, frozen_stages: int = -1,
                 norm_eval: bool = False, frozen_bn_stats: bool = True):
        super().__init__()
        self.num_classes, self.num_segments, self.seglen = int(num_classes), int(num_segments), int(seglen)
        self.backbone = resnet_backbone(ResNet, depth, in_channels=3 * self.seglen, base_channels=base_channels,
                                        frozen_stages=frozen_stages, norm_eval=norm_eval,
                                        frozen_bn_stats=frozen_bn_stats)
        widths = [getattr(self.backbone, name)[-1].last_norm().num_features for name in self.backbone.stage_names]
        self.temporal3 = TemporalConvBlock(widths[1])
        self.temporal4 = TemporalConvBlock(widths[2])
        self.xception = TemporalXception(self.backbone.num_features)
        self.head = ClassifierHead(self.backbone.num_features // 2, self.num_classes, dropout)
        if pretrained:
            load_backbone(self.backbone, pretrained)

    def forward(self, x):
        check_clips(self, x, 3)
        b, frames, c, h, w = x.shape
        if frames % self.seglen:
            raise ValueError(f"StNet: clips of {frames} frames do not split into segments of seglen={self.seglen}")
        segments = frames // self.seglen
        x = x.reshape((b * segments, self.seglen * c, h, w))  # (B*T, seglen*3, H, W) super-images
        backbone = self.backbone
        x = backbone.forward_stem(x)
        temporal = {1: self.temporal3, 2: self.temporal4}
        for i, name in enumerate(backbone.stage_names):
            x = getattr(backbone, name)(x)
            if i in temporal:
                x = temporal[i](x, segments)
        x = F.adaptive_avg_pool2d(x, 1).reshape((b, segments, -1))  # (B, T, F)
        x = self.xception(x.transpose((0, 2, 1)))                            # (B, F/2, T)
        return self.head(x.max(axis=2))                                      # (B, num_classes)
