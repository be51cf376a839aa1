"""Two-stream TSN: an RGB network and a motion network (stacked optical flow or RGB difference), trained
apart and fused by a weighted average of their class scores.

Wang et al., "Temporal Segment Networks", ECCV 2016, section 3.3 and 4.3: each stream is a TSN of its own
(:class:`~video.models.tsn.TSN`), the motion stream's first convolution initialised from the RGB network's
(cross-modality initialisation); at test time the streams' consensus scores are averaged with weights
(1 for RGB, 1.5 for flow in the paper). The streams are trained separately, each by its own config;
this model holds both, and its weights file holds the two networks' weights under ``rgb.`` and
``motion.`` (:func:`fuse_states`).

Input: clips (B, T, 3 + C, H, W): each segment's RGB frame followed by its motion stack of C channels
(the ``rgb+flow`` or ``rgb+rgbdiff`` modality of :mod:`video.data.modality`, so one crop and one mirror move
both).
A motion network built with ``colour_channels: 3`` takes the whole input, colour and stack (the streams
fused at the input as well as at the scores: on RGB differences alone an object that appears and one that
disappears differ only in the sign of an object of unknown colour).
Output: fused scores (B, num_classes) = (w_rgb * s_rgb + w_motion * s_motion) / (w_rgb + w_motion).
"""
from framework import nn
from framework.config import ConfigError
from framework.registry import MODELS

from .heads import check_clips
from .tsn import TSN

__all__ = ["TwoStreamTSN", "fuse_states"]


def fuse_states(rgb_state, motion_state):
    """One state dict of both streams from the RGB and the motion TSN's: ``rgb.<name>`` and ``motion.<name>``."""
    return {**{f"rgb.{k}": v for k, v in rgb_state.items()}, **{f"motion.{k}": v for k, v in motion_state.items()}}


@MODELS.register()
class TwoStreamTSN(nn.Layer):
    """An RGB TSN and a motion TSN, scores fused by a weighted average.

    Args:
        rgb: the RGB network's TSN arguments (``in_channels`` 3), e.g. ``{num_classes: 12, depth: 18, …}``.
        motion: the motion network's TSN arguments (``in_channels`` 2k for flow, 3k for RGB difference; with
            ``colour_channels: 3`` 3 more, and it sees the colour too).
        fusion: the weights (w_rgb, w_motion) of the score average (the paper: 1 and 1.5).

    Shape: (B, T, 3 + C, H, W) -> (B, num_classes), C the motion stack's channels.
    """

    def __init__(self, rgb: dict, motion: dict, fusion: list = (1.0, 1.5)):
        super().__init__()
        weights = [float(w) for w in fusion]
        if len(weights) != 2 or min(weights) < 0 or sum(weights) <= 0:
            raise ConfigError(f"TwoStreamTSN: fusion must be two non-negative weights (rgb, motion) with a "
                              f"positive sum, got {fusion!r}")
        self.rgb = TSN(**{**rgb, "in_channels": 3})
        self.motion = TSN(**motion)
        if self.rgb.num_classes != self.motion.num_classes:
            raise ConfigError(f"TwoStreamTSN: the streams have {self.rgb.num_classes} and "
                              f"{self.motion.num_classes} classes")
        self.num_classes, self.num_segments = self.rgb.num_classes, self.rgb.num_segments
        self.fusion = (weights[0] / sum(weights), weights[1] / sum(weights))

    def stream_scores(self, x):
        """(RGB scores, motion scores), (B, num_classes) each, of clips x (B, T, 3 + C, H, W)."""
        check_clips(self, x, 3 - self.motion.colour_channels + self.motion.channels)
        return self.rgb(x[:, :, :3]), self.motion(x[:, :, 3 - self.motion.colour_channels:])

    def forward(self, x):
        rgb, motion = self.stream_scores(x)
        return rgb * self.fusion[0] + motion * self.fusion[1]
