"""SSD with a MobileNet V1 backbone.

Liu et al., "SSD: Single Shot MultiBox Detector", ECCV 2016, on Howard et al.'s MobileNet V1 (2017), as
the 2019 MobileNet-SSD (PaddleCV ``ssd/mobilenet_ssd.py``): the backbone's feature maps after the blocks
named in ``source_blocks`` (default: block 11, stride 16, and block 13, stride 32), then ``extra_channels``
extra layers (1x1 conv to half the channels, 3x3 stride-2 conv, each with BN and ReLU) halving the map
each time; on every map a 3x3 conv predicts 4 box offsets and C + 1 class scores (class 0: background)
for each of its A priors (:func:`framework.nn.functional.prior_boxes`, A = 2 + 2 len(aspect ratios)).

Input: images (N, 3, S, S), S = ``image_size``. Output (N, P, 4 + C + 1): in training the box offsets
(4) and the class logits (C + 1) of each prior; in eval mode the network decodes its own priors (so the
decoding is part of a traced or exported graph): corner boxes relative to the image (4) and the class
probabilities (C + 1, softmax).
P = sum over maps of H_k W_k A_k (``num_priors``: 2,278 at the defaults and S = 300).
"""
import framework
import framework.nn.functional as F
from framework import nn

from .common import ConvBNAct, register_variant
from .mobilenet import V1_BLOCKS, MobileNetV1
from .weights import WeightsError, read_weights

__all__ = ["SSDMobileNetV1", "ssd_mobilenet_v1", "default_prior_sizes"]


def default_prior_sizes(maps, min_scale=0.2, max_scale=0.95):
    """SSD's prior scales for ``maps`` feature maps: s_k = min + (max - min) k / (maps - 1), the first map
    at half of min_scale (as SSD300's conv4_3 at 0.1); returns (min_sizes, max_sizes), max_sizes[k] =
    s_{k+1} (the last: 1.0)."""
    steps = [min_scale + (max_scale - min_scale) * k / max(maps - 2, 1) for k in range(maps - 1)]
    scales = [min_scale / 2] + steps
    return scales, scales[1:] + [1.0]


def _halve(size):
    """Output side of a 3x3, stride-2, padding-1 convolution."""
    return (size - 1) // 2 + 1


class SSDMobileNetV1(nn.Layer):
    """SSD on MobileNet V1 (see the module docstring).

    Args:
        num_classes: object classes C (the background is added).
        scale: the backbone's width multiplier.
        image_size: the input side S.
        source_blocks: backbone blocks (1..13) whose outputs feed heads.
        extra_channels: output channels of each extra layer (one more map each), before ``scale``.
        min_sizes, max_sizes: prior sizes per map, fractions of the image (None: :func:`default_prior_sizes`).
        aspect_ratios: per map, the ratios besides 1 (None: [2] on the first map, [2, 3] on the others).
        variances: the box-coding variances (centre, size).
        pretrained: a weights file to start from: an SSD-MobileNetV1's (every entry whose name and shape
            fit is loaded: all of it for the same classes, all but the class heads for others) or a
            MobileNet V1's (its ``features``); the backbone's ``features`` must all be there.

    Shape: (N, 3, S, S) -> (N, P, 4 + C + 1): training [offsets | logits], eval [boxes | probabilities].
    """

    def __init__(self, num_classes: int = 20, scale: float = 1.0, image_size: int = 300,
                 source_blocks: list = (11, 13), extra_channels: list = (512, 256, 256, 128),
                 min_sizes: list = None, max_sizes: list = None, aspect_ratios: list = None,
                 variances: list = (0.1, 0.2), pretrained: str = None):
        super().__init__()
        if num_classes < 1 or image_size < 32:
            raise ValueError(f"SSDMobileNetV1: num_classes must be >= 1 and image_size >= 32, got {num_classes}, "
                             f"{image_size}")
        self.num_classes, self.image_size = int(num_classes), int(image_size)
        self.source_blocks, self.variances = [int(b) for b in source_blocks], tuple(float(v) for v in variances)
        if sorted(set(self.source_blocks)) != self.source_blocks or not 1 <= self.source_blocks[0] <= 13 \
                or self.source_blocks[-1] > 13:
            raise ValueError(f"SSDMobileNetV1: source_blocks must be increasing block numbers in 1..13, got "
                             f"{list(source_blocks)}")
        backbone = MobileNetV1(num_classes=0, scale=scale)
        self.features = backbone.features                                   # stem + 13 blocks, as MobileNetV1
        channels = [self.features[b][1][0].weight.shape[0] for b in self.source_blocks]
        sizes, side = [], _halve(self.image_size)                          # the stem has stride 2
        for block, (_, stride) in enumerate(V1_BLOCKS, start=1):
            side = _halve(side) if stride == 2 else side
            if block in self.source_blocks:
                sizes.append(side)
        extras, width = [], channels[-1]
        for out in extra_channels:
            out = max(int(out * scale), 8)
            extras.append(nn.Sequential(ConvBNAct(width, out // 2, 1), ConvBNAct(out // 2, out, 3, stride=2)))
            channels.append(out)
            sizes.append(_halve(sizes[-1]))
            width = out
        self.extras = nn.LayerList(extras)
        maps = len(sizes)
        default_min, default_max = default_prior_sizes(maps)
        self.min_sizes = [float(s) for s in (min_sizes or default_min)]
        self.max_sizes = [float(s) for s in (max_sizes or default_max)]
        self.aspect_ratios = [[float(r) for r in a] for a in
                              (aspect_ratios or [[2.0]] + [[2.0, 3.0]] * (maps - 1))]
        if not len(self.min_sizes) == len(self.max_sizes) == len(self.aspect_ratios) == maps:
            raise ValueError(f"SSDMobileNetV1: {maps} feature maps need {maps} min_sizes, max_sizes and "
                             f"aspect_ratios, got {len(self.min_sizes)}, {len(self.max_sizes)}, "
                             f"{len(self.aspect_ratios)}")
        self.feature_sizes = sizes
        anchors = [2 + 2 * len(r) for r in self.aspect_ratios]
        self.loc_heads = nn.LayerList([nn.Conv2D(c, a * 4, 3, padding=1) for c, a in zip(channels, anchors)])
        self.conf_heads = nn.LayerList([nn.Conv2D(c, a * (self.num_classes + 1), 3, padding=1)
                                        for c, a in zip(channels, anchors)])
        self.register_buffer("priors", F.prior_boxes(sizes, self.min_sizes, self.max_sizes, self.aspect_ratios),
                             persistable=False)
        self.num_priors = int(self.priors.shape[0])
        if pretrained:
            self.load_fitting(pretrained)

    def load_fitting(self, path):
        """Load every entry of the weights file ``path`` whose name and shape fit this model; the backbone's
        ``features`` must all fit (else :class:`~vision.models.WeightsError` naming the file). Returns the
        names loaded."""
        state, own = read_weights(path), self.state_dict()
        fitting = {k: v for k, v in state.items() if k in own and tuple(v.shape) == tuple(own[k].shape)}
        missing = [k for k in own if k.startswith("features.") and k not in fitting]
        if missing:
            raise WeightsError(f"{path} does not fit SSDMobileNetV1's backbone: {len(missing)} features entries "
                               f"missing or of another shape (first: {missing[0]} {tuple(own[missing[0]].shape)})")
        self.set_state_dict({**{k: v.numpy() for k, v in own.items()}, **fitting})
        return sorted(fitting)

    def feature_maps(self, x):
        """Images (N, 3, S, S) -> the list of feature maps the heads read."""
        maps = []
        for block, layer in enumerate(self.features):
            x = layer(x)
            if block in self.source_blocks:
                maps.append(x)
        for layer in self.extras:
            x = layer(x)
            maps.append(x)
        return maps

    def forward(self, x):
        if x.ndim != 4 or x.shape[1] != 3 or tuple(x.shape[2:]) != (self.image_size, self.image_size):
            raise ValueError(f"SSDMobileNetV1: expected images (N, 3, {self.image_size}, {self.image_size}), "
                             f"got {tuple(x.shape)}")
        n = x.shape[0]
        locs, confs = [], []
        for fmap, loc_head, conf_head in zip(self.feature_maps(x), self.loc_heads, self.conf_heads):
            locs.append(loc_head(fmap).transpose((0, 2, 3, 1)).reshape((n, -1, 4)))      # (N, H*W*A, 4)
            confs.append(conf_head(fmap).transpose((0, 2, 3, 1)).reshape((n, -1, self.num_classes + 1)))
        loc, conf = framework.concat(locs, axis=1), framework.concat(confs, axis=1)      # (N, P, 4), (N, P, C+1)
        if self.training:
            return framework.concat([loc, conf], axis=-1)                               # (N, P, 4 + C + 1)
        return framework.concat([F.decode_boxes(loc, self.priors, self.variances), F.softmax(conf, axis=-1)],
                                axis=-1)                                                 # (N, P, 4 + C + 1)


ssd_mobilenet_v1 = register_variant("ssd_mobilenet_v1", SSDMobileNetV1,
                                    "SSD on MobileNet V1; arguments as :class:`SSDMobileNetV1`.")
