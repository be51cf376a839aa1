"""Specs for framework/ops/temporal.py: the reference moves channel folds with an explicit loop over frames."""
import numpy

from framework.nn import functional as F
from ..opspec import OpSpec


def temporal_shift_reference(x, seg_num, shift_ratio):
    """Frame t of each clip: channels [0, c1) from t - 1, [c1, c2) from t + 1, zeros past the clip's ends."""
    channels = x.shape[1]
    c1, c2 = int(channels * shift_ratio), int(channels * 2 * shift_ratio)
    clips = x.reshape((-1, seg_num) + x.shape[1:])
    out = numpy.zeros_like(clips)
    for t in range(seg_num):
        out[:, t, c2:] = clips[:, t, c2:]
        if t > 0:
            out[:, t, :c1] = clips[:, t - 1, :c1]
        if t < seg_num - 1:
            out[:, t, c1:c2] = clips[:, t + 1, c1:c2]
    return out.reshape(x.shape)


def _spec(shape, seg_num, ratio, label):
    return OpSpec("temporal_shift", lambda x: F.temporal_shift(x, seg_num, ratio),
                  lambda rng: [rng.uniform(-1, 1, shape)], lambda x: temporal_shift_reference(x, seg_num, ratio),
                  id=f"temporal.temporal_shift.{label}")


SPECS = [
    _spec((6, 8, 3, 2), 3, 0.125, "tsm_eighth"),
    _spec((8, 5, 2, 3), 4, 0.25, "quarter_odd_channels"),
    _spec((4, 4, 3), 2, 0.25, "1d_frames"),
    _spec((2, 8, 2, 2), 1, 0.125, "single_segment"),
]
