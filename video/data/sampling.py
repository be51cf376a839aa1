"""Which frames of a video a clip uses: pure functions of the frame count (and a random generator).

Every function returns int64 frame indices of shape (num_views, frames per
view). Training draws one view at random from ``rng`` (pass
``framework.io.sample_rng()`` in a dataset, so a sample gets the same frames for
any number of loader workers); testing takes ``num_views`` fixed views spread
evenly over the allowed range, view v at ``floor(room * (2v + 1) / (2 * num_views))``
when the start may lie in ``0 .. room`` (one view: the centre, ``room // 2``).

Videos shorter than asked for: ``short="loop"`` (default, PaddleVideo's
readers) wraps indices around (``i % num_frames``), ``short="pad"`` repeats the
last frame (``min(i, num_frames - 1)``).

- :func:`segment_indices`: TSN / TSM / StNet. The video is cut into
  ``num_segments`` equal segments of ``num_frames // num_segments`` frames; each
  gives ``seglen`` consecutive frames starting at a random offset inside the
  segment (train) or at the spread offsets (test). PaddleVideo's reader rules
  for short videos are kept: segments shorter than ``seglen`` start at the
  segment's first frame; with fewer frames than segments, segment i starts at
  frame i.
- :func:`clip_indices`: dense clips (Non-local, I3D): ``clip_len`` frames
  ``frame_interval`` apart, starting at a random frame (train) or at spread
  starts (test: e.g. 10 clips).
- :func:`uniform_indices` / :func:`random_indices`: ``num`` single frames
  spread evenly / drawn at random, for sequences of frame features.

:class:`SegmentSampler` and :class:`ClipSampler` wrap the first two for configs
(registered in ``TRANSFORMS``): dict in (``num_frames``), dict out (adds
``frame_inds`` (num_views, T) and ``clip_len`` T).
"""
import numpy

from framework.io import sample_rng
from framework.registry import TRANSFORMS

__all__ = ["segment_indices", "clip_indices", "uniform_indices", "random_indices", "SegmentSampler", "ClipSampler",
           "MODES", "SHORT_RULES"]

MODES = ("train", "test")
SHORT_RULES = ("loop", "pad")


def _check_options(mode, num_views, short, who):
    if mode not in MODES:
        raise ValueError(f"{who}: mode must be one of {MODES}, got {mode!r}")
    if short not in SHORT_RULES:
        raise ValueError(f"{who}: short must be one of {SHORT_RULES}, got {short!r}")
    if int(num_views) < 1 or (mode == "train" and num_views != 1):
        raise ValueError(f"{who}: num_views must be at least 1, and 1 in training, got {num_views} ({mode})")


def _check(num_frames, mode, rng, num_views, short, who):
    _check_options(mode, num_views, short, who)
    if int(num_frames) < 1:
        raise ValueError(f"{who}: the video has no frames (num_frames={num_frames})")
    if mode == "train" and rng is None:
        raise ValueError(f"{who}: training draws from a random generator; pass rng")


def _spread(room, num_views):
    """The starts of ``num_views`` test views over ``0 .. room``: (num_views,) int64."""
    v = numpy.arange(num_views, dtype=numpy.int64)
    return (max(int(room), 0) * (2 * v + 1)) // (2 * num_views)


def _fit(indices, num_frames, short):
    """Indices past the end wrapped around (loop) or clamped to the last frame (pad)."""
    return indices % num_frames if short == "loop" else numpy.minimum(indices, num_frames - 1)


def segment_indices(num_frames, num_segments, seglen=1, mode="test", rng=None, num_views=1, short="loop"):
    """Segment sampling (TSN; StNet with ``seglen`` > 1): (num_views, num_segments * seglen) int64.

    Segment i covers frames ``[i * d, (i + 1) * d)`` with ``d = num_frames //
    num_segments``; it contributes frames ``start .. start + seglen - 1`` with
    ``start = i * d + offset``, the offset drawn from ``0 .. d - seglen`` (train,
    the same range as Python's ``randint``) or spread as in the module
    docstring (test; the one-view offset is the centre ``(d - seglen) // 2``).
    """
    _check(num_frames, mode, rng, num_views, short, "segment_indices")
    if num_segments < 1 or seglen < 1:
        raise ValueError(f"segment_indices: num_segments and seglen must be positive, got {num_segments}, {seglen}")
    duration = num_frames // num_segments
    segments = numpy.arange(num_segments, dtype=numpy.int64)
    if duration >= seglen:
        if mode == "train":
            offsets = rng.integers(0, duration - seglen + 1, size=(1, num_segments))
        else:
            offsets = numpy.repeat(_spread(duration - seglen, num_views)[:, None], num_segments, axis=1)
        starts = segments * duration + offsets  # (num_views, num_segments)
    else:
        starts = numpy.repeat((segments * duration if duration >= 1 else segments)[None], num_views, axis=0)
    indices = starts[:, :, None] + numpy.arange(seglen)  # (num_views, num_segments, seglen)
    return _fit(indices.reshape(num_views, num_segments * seglen), num_frames, short)


def clip_indices(num_frames, clip_len, frame_interval=1, mode="test", rng=None, num_views=1, short="loop"):
    """Dense clip sampling (Non-local: 8 frames at interval 8): (num_views, clip_len) int64.

    A clip spans ``clip_len * frame_interval`` frames: ``start + k *
    frame_interval`` for k < clip_len. The start is drawn from ``0 ..
    num_frames - span`` (train) or spread over that range (test); when the
    video is shorter than the span the start is 0 and ``short`` decides.
    """
    _check(num_frames, mode, rng, num_views, short, "clip_indices")
    if clip_len < 1 or frame_interval < 1:
        raise ValueError(f"clip_indices: clip_len and frame_interval must be positive, "
                         f"got {clip_len}, {frame_interval}")
    room = num_frames - clip_len * frame_interval
    if mode == "train":
        starts = rng.integers(0, max(room, 0) + 1, size=1)
    else:
        starts = _spread(room, num_views)
    indices = starts[:, None] + frame_interval * numpy.arange(clip_len, dtype=numpy.int64)
    return _fit(indices.astype(numpy.int64), num_frames, short)


def uniform_indices(num_frames, num):
    """The centre frame of each of ``num`` equal parts of the video: (1, num) int64.

    Frame ``floor((k + 0.5) * num_frames / num)`` for k < num; with fewer
    frames than ``num`` some frames repeat (in order).
    """
    if num_frames < 1 or num < 1:
        raise ValueError(f"uniform_indices: num_frames and num must be positive, got {num_frames}, {num}")
    k = numpy.arange(num, dtype=numpy.int64)
    return ((2 * k + 1) * num_frames // (2 * num))[None]


def random_indices(num_frames, num, rng):
    """``num`` frames drawn at random, in time order: (1, num) int64.

    Without replacement when the video has at least ``num`` frames; otherwise
    every frame once and the rest drawn with replacement.
    """
    if num_frames < 1 or num < 1:
        raise ValueError(f"random_indices: num_frames and num must be positive, got {num_frames}, {num}")
    if num_frames >= num:
        chosen = rng.choice(num_frames, size=num, replace=False)
    else:
        chosen = numpy.concatenate([numpy.arange(num_frames), rng.integers(0, num_frames, size=num - num_frames)])
    return numpy.sort(chosen).astype(numpy.int64)[None]


class _Sampler:
    """Base of the config samplers: ``sampler(sample, rng=None)`` adds ``frame_inds`` and ``clip_len``."""

    def __call__(self, sample, rng=None):
        if "num_frames" not in sample:
            raise KeyError(f"{type(self).__name__}: the sample has no 'num_frames' (keys: {sorted(sample)})")
        rng = (sample_rng() if rng is None else rng) if self.mode == "train" else None
        indices = self.indices(int(sample["num_frames"]), rng)
        return {**sample, "frame_inds": indices, "clip_len": indices.shape[1]}

    def __repr__(self):
        return f"{type(self).__name__}({', '.join(f'{k}={v!r}' for k, v in vars(self).items())})"


@TRANSFORMS.register()
class SegmentSampler(_Sampler):
    """Segment sampling as a transform (see :func:`segment_indices`); ``frame_inds`` (num_views, num_segments * seglen)."""

    def __init__(self, num_segments: int = 3, seglen: int = 1, mode: str = "train", num_views: int = 1,
                 short: str = "loop"):
        self.num_segments, self.seglen, self.mode, self.num_views, self.short = (
            int(num_segments), int(seglen), mode, int(num_views), short)
        _check_options(mode, num_views, short, "SegmentSampler")
        if self.num_segments < 1 or self.seglen < 1:
            raise ValueError(f"SegmentSampler: num_segments and seglen must be positive, got {num_segments}, {seglen}")

    def indices(self, num_frames, rng):
        return segment_indices(num_frames, self.num_segments, self.seglen, self.mode, rng, self.num_views,
                               self.short)


@TRANSFORMS.register()
class ClipSampler(_Sampler):
    """Dense clip sampling as a transform (see :func:`clip_indices`); ``frame_inds`` (num_views, clip_len)."""

    def __init__(self, clip_len: int = 8, frame_interval: int = 8, mode: str = "train", num_views: int = 1,
                 short: str = "loop"):
        self.clip_len, self.frame_interval, self.mode, self.num_views, self.short = (
            int(clip_len), int(frame_interval), mode, int(num_views), short)
        _check_options(mode, num_views, short, "ClipSampler")
        if self.clip_len < 1 or self.frame_interval < 1:
            raise ValueError(f"ClipSampler: clip_len and frame_interval must be positive, got {clip_len}, "
                             f"{frame_interval}")

    def indices(self, num_frames, rng):
        return clip_indices(num_frames, self.clip_len, self.frame_interval, self.mode, rng, self.num_views,
                            self.short)
