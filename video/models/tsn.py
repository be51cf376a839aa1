"""TSN: Temporal Segment Networks.

Wang, Xiong, Wang, Qiao, Lin, Tang, Van Gool, "Temporal Segment Networks:
Towards Good Practices for Deep Action Recognition", ECCV 2016; as
PaddleVideo 2019 (``tsn_res_model.py``) built it: a ResNet runs on one frame
per segment, the pooled features are averaged over the segments (the
consensus), then dropout and fc. The consensus ignores frame order.

The paper's motion streams take a stack per segment instead of one RGB frame: ``in_channels`` 2k for k
stacked flow fields (x and y), 3k for k RGB differences (:mod:`video.data.modality`). Their first
convolution starts from the RGB network's, averaged over the colour channels and copied to every input
channel (the paper's cross-modality initialisation, :func:`cross_modality_conv1`).
:class:`~video.models.two_stream.TwoStreamTSN` fuses an RGB and a motion network.

Input: clips (B, T, in_channels, H, W), T segments of one frame (or stack) each. Output: scores (B, num_classes).
"""
import numpy

import framework
from framework import nn
from framework.registry import MODELS
from vision.models import load_pretrained
from vision.models.resnet import ARCHS, ResNet

from .heads import ClassifierHead, check_clips, frames_of

__all__ = ["TSN", "resnet_backbone", "read_backbone_state", "load_backbone", "cross_modality_conv1"]


def read_backbone_state(path):
    """The 2D ResNet entries ``{name: array}`` of weights file ``path``, without the classifier.

    The file may be a state dict or an oar checkpoint (``{"model": state}``); its keys are the ResNet's own
    (``conv1.weight``) or a video model's (``backbone.conv1.weight``); ``fc.*`` / ``head.*`` are dropped.
    """
    state = framework.load(path)
    state = state.get("model", state) if isinstance(state, dict) else state
    prefix = "backbone."
    if any(k.startswith(prefix) for k in state):
        state = {k[len(prefix):]: v for k, v in state.items() if k.startswith(prefix)}
    return {k: numpy.asarray(v) for k, v in state.items() if not k.startswith("fc.")}


def cross_modality_conv1(weight, channels):
    """TSN's cross-modality initialisation: an RGB conv1 weight (out, 3, kh, kw) averaged over its colour
    channels and repeated to ``channels`` input channels: (out, channels, kh, kw)."""
    weight = numpy.asarray(weight)
    return numpy.repeat(weight.mean(axis=1, keepdims=True), channels, axis=1).astype(weight.dtype)


def load_backbone(backbone, path, cross_modality=False, colour_channels=0):
    """Load the backbone entries of weights file ``path`` (see :func:`read_backbone_state`) into ``backbone``
    (a ResNet without fc).

    A conv1 that takes ``k`` stacked RGB frames (StNet's super-image, 3k channels) gets an RGB conv1
    repeated k times over its input channels and divided by k, as StNet inflated ImageNet weights: a
    super-image of k equal frames then gives the 2D network's response. With ``cross_modality`` an RGB conv1
    is averaged over colour and repeated to the backbone's input channels instead
    (:func:`cross_modality_conv1`, TSN's flow and RGB-difference networks); the first ``colour_channels``
    (3: a frame's colour before its motion stack) keep the RGB weights. Missing or mismatched entries
    raise :class:`vision.models.WeightsError` listing them.
    """
    state = read_backbone_state(path)
    conv1 = backbone.conv1.weight.shape[1]
    rgb_conv1 = "conv1.weight" in state and state["conv1.weight"].shape[1] == 3
    if rgb_conv1 and cross_modality and conv1 != 3:
        rgb = state["conv1.weight"]
        state["conv1.weight"] = cross_modality_conv1(rgb, conv1)
        state["conv1.weight"][:, :colour_channels] = rgb[:, :colour_channels]
    elif rgb_conv1 and conv1 % 3 == 0 and conv1 > 3:
        state["conv1.weight"] = numpy.tile(state["conv1.weight"], (1, conv1 // 3, 1, 1)) / (conv1 // 3)
    load_pretrained(backbone, state, source=path)


def resnet_backbone(cls, depth, **kwargs):
    """A ``cls`` (ResNet or a subclass) of ``depth`` (10/18/34/50/101) without fc: frames -> pooled features."""
    if depth not in ARCHS:
        raise ValueError(f"{cls.__name__}: depth must be one of {sorted(ARCHS)}, got {depth}")
    block, layers = ARCHS[depth]
    return cls(block=block, layers=list(layers), num_classes=0, **kwargs)


@MODELS.register()
class TSN(nn.Layer):
    """ResNet per segment, average consensus over the segments, dropout, fc.

    Args:
        num_classes: output classes.
        depth: ResNet depth (10, 18, 34, 50, 101).
        num_segments: segments per clip in training (any T works at test time).
        base_channels: width of the ResNet's first stage (64 in the standard nets).
        dropout: before fc.
        frozen_stages, norm_eval, zero_init_residual, frozen_bn_stats: as :class:`vision.models.ResNet`.
        pretrained: weights for the backbone (as the 2019 TSN/TSM started from ImageNet): a torchvision-style
            ResNet state dict file, or an oar checkpoint / state dict of a video model whose backbone has the
            same names under ``backbone.``; classifier entries are skipped. An RGB conv1 is given to a
            network with other ``in_channels`` by the cross-modality initialisation.
        in_channels: channels per segment: 3 (RGB), 2k (k stacked flow fields), 3k (k RGB differences),
            3 + 2k or 3 + 3k (the frame's colour, then its stack).
        colour_channels: 3 when in_channels start with the frame's colour before a motion stack (an
            ``rgb+flow`` or ``rgb+rgbdiff`` input, fused at the input as Feichtenhofer et al., CVPR 2016, fused
            streams early), else 0; the pretrained RGB conv1 is kept on those channels.

    Shape: (B, T, in_channels, H, W) -> (B, num_classes).
    """

    def __init__(self, num_classes: int = 400, depth: int = 50, num_segments: int = 3, base_channels: int = 64,
                 dropout: float = 0.0, frozen_stages: int = -1, norm_eval: bool = False,
                 zero_init_residual: bool = False, pretrained: str = None, frozen_bn_stats: bool = True,
                 in_channels: int = 3, colour_channels: int = 0):
        super().__init__()
        self.num_classes, self.num_segments, self.channels = int(num_classes), int(num_segments), int(in_channels)
        if colour_channels not in (0, 3) or (colour_channels and self.channels <= 3):
            raise ValueError(f"TSN: colour_channels must be 0, or 3 before a motion stack (in_channels > 3), "
                             f"got {colour_channels} with in_channels {in_channels}")
        self.colour_channels = int(colour_channels)
        self.backbone = self.build_backbone(depth, base_channels=base_channels, frozen_stages=frozen_stages,
                                            norm_eval=norm_eval, zero_init_residual=zero_init_residual,
                                            frozen_bn_stats=frozen_bn_stats, in_channels=self.channels)
        self.head = ClassifierHead(self.backbone.num_features, self.num_classes, dropout)
        if pretrained:
            load_backbone(self.backbone, pretrained, cross_modality=self.channels != 3,
                          colour_channels=self.colour_channels)

    def build_backbone(self, depth, **kwargs):
        """The per-frame network (subclasses change it)."""
        return resnet_backbone(ResNet, depth, **kwargs)

    def forward(self, x):
        check_clips(self, x, self.channels)
        b, t = x.shape[:2]
        features = self.backbone(frames_of(x))                   # (B*T, F)
        features = features.reshape((b, t, -1)).mean(axis=1)     # (B, F): average consensus
        return self.head(features)
