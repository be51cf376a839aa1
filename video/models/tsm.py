"""TSM: Temporal Shift Module.

Lin, Gan, Han, "TSM: Temporal Shift Module for Efficient Video
Understanding", ICCV 2019; as PaddleVideo 2019 (``tsm_res_model.py``) built
it: TSN whose ResNet shifts 1/8 of the channels one frame forward and 1/8
one frame backward in time (zero-padded) at the start of every residual
branch ("residual shift"), before its first convolution. The shift adds no
parameters, so TSM-R50 has TSN-R50's 24,327,632.

Input: clips (B, T, 3, H, W) with T = ``num_segments``. Output: scores (B, num_classes).
"""
import framework.nn.functional as F
from framework.registry import MODELS
from vision.models.resnet import BasicBlock, Bottleneck, ResNet

from .heads import check_clips
from .tsn import TSN, resnet_backbone

__all__ = ["TSM", "ResNetTSM", "ShiftedBasicBlock", "ShiftedBottleneck"]


class _ShiftFirst:
    """Mixin for residual blocks: the residual branch starts with ``F.temporal_shift``."""

    num_segments, shift_ratio = 8, 0.125

    def forward_residual(self, x):
        return super().forward_residual(F.temporal_shift(x, self.num_segments, self.shift_ratio))


class ShiftedBasicBlock(_ShiftFirst, BasicBlock):
    """BasicBlock whose residual branch shifts channels in time first. Shape as BasicBlock, N = B * T."""


class ShiftedBottleneck(_ShiftFirst, Bottleneck):
    """Bottleneck whose residual branch shifts channels in time first. Shape as Bottleneck, N = B * T."""


class ResNetTSM(ResNet):
    """ResNet with the residual temporal shift in every block (mmaction2's ResNetTSM).

    Args: ``num_segments`` (T of the clips whose frames it sees, clip-major),
    ``shift_ratio`` (fraction of channels shifted each way), the rest as ResNet.
    Shape: (B * T, 3, H, W) -> as ResNet.
    """

    shifted_types = {BasicBlock: ShiftedBasicBlock, Bottleneck: ShiftedBottleneck}

    def __init__(self, num_segments: int = 8, shift_ratio: float = 0.125, **kwargs):
        self.shift = (int(num_segments), float(shift_ratio))
        super().__init__(**kwargs)

    def make_block(self, block_type, stage, index, in_channels, channels, stride, dilation, downsample):
        block = self.shifted_types[block_type](in_channels, channels, stride=stride, dilation=dilation,
                                               downsample=downsample)
        block.num_segments, block.shift_ratio = self.shift
        return block


@MODELS.register()
class TSM(TSN):
    """TSN with a temporally shifting ResNet (see the module docstring).

    Args as :class:`TSN`, plus ``shift_ratio`` (1/8: 1/8 forward, 1/8 backward)
    and ``dropout`` 0.5 by default (Paddle's TSM). Clips must have exactly
    ``num_segments`` frames.

    Shape: (B, num_segments, 3, H, W) -> (B, num_classes).
    """

    def __init__(self, num_classes: int = 400, depth: int = 50, num_segments: int = 8, shift_ratio: float = 0.125,
                 base_channels: int = 64, dropout: float = 0.5, frozen_stages: int = -1, norm_eval: bool = False,
                 zero_init_residual: bool = False, pretrained: str = None, frozen_bn_stats: bool = True):
        self.shift_ratio = float(shift_ratio)
        self._segments = int(num_segments)
        super().__init__(num_classes, depth, num_segments, base_channels, dropout, frozen_stages, norm_eval,
                         zero_init_residual, pretrained, frozen_bn_stats)

    def build_backbone(self, depth, **kwargs):
        return resnet_backbone(ResNetTSM, depth, num_segments=self._segments, shift_ratio=self.shift_ratio, **kwargs)

    def forward(self, x):
        check_clips(self, x, 3, self.num_segments)
        return super().forward(x)
