"""Ops along the time axis of clip-major frame batches: temporal_shift (TSM)."""
from ..kernels.temporal_shift import temporal_shift_backward, temporal_shift_forward
from ..tensor import Function, OpError

__all__ = ["temporal_shift"]


class TemporalShift(Function):
    """Shift channel folds one step in time (see :mod:`framework.kernels.temporal_shift`)."""

    def forward(self, x):
        return temporal_shift_forward(x, self.num_segments, self.shift_ratio)

    def backward(self, gy):
        return temporal_shift_backward(gy, self.num_segments, self.shift_ratio)


def temporal_shift(x, seg_num, shift_ratio=0.25):
    """Temporal Shift Module (Lin, Gan, Han, ICCV 2019), PaddlePaddle's ``temporal_shift``.

    ``x`` holds the frames of N clips of ``seg_num`` frames each, clip-major.
    With c1 = int(C * shift_ratio) and c2 = int(2 * C * shift_ratio), output
    frame t takes channels [0, c1) from frame t - 1, channels [c1, c2) from
    frame t + 1 (zeros past either end of its clip) and the rest from frame t.

    Shapes: x (N * seg_num, C, *spatial) -> the same.
    """
    seg_num = int(seg_num)
    if x.ndim < 2 or seg_num < 1 or x.shape[0] % seg_num:
        raise OpError(f"temporal_shift: x must be (N * seg_num, C, ...) with seg_num={seg_num} dividing the first "
                      f"axis, got {x.shape}")
    if not 0 <= shift_ratio <= 0.5:
        raise OpError(f"temporal_shift: shift_ratio must be in [0, 0.5], got {shift_ratio}")
    return TemporalShift.apply(x, num_segments=seg_num, shift_ratio=float(shift_ratio))
