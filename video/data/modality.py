"""What a clip's frames hold: RGB, stacked optical flow, stacked RGB difference, or RGB with either.

TSN's inputs (Wang et al., ECCV 2016): for each sampled frame i, the flow stack is the x and y flow of the
``stack`` = k frame pairs i -> i + 1, …, i + k - 1 -> i + k, 2k channels ``(dx_0, dy_0, dx_1, dy_1, …)``; the
RGB difference stack is the k differences ``frame[i + j + 1] - frame[i + j]``, 3k channels. Frames past the
end repeat the last flow / frame. ``rgb+flow`` puts a frame's 3 colour channels before its flow stack
(3 + 2k channels) and ``rgb+rgbdiff`` before its difference stack (3 + 3k), the inputs of the two-stream TSN,
so every spatial transform crops both alike.

:class:`Modality` reads them (:meth:`Modality.read`): flow comes from the per-video cache
(:class:`~video.data.flow.FlowCache`, computed in the loader's worker on first use), dequantised to pixels;
differences are computed from the decoded frames. Frames are (F, H, W, C) float32 (uint8 for plain RGB),
colour on 0..255, motion signed (pixels, or grey-level differences). The sample says which: ``modality``
(a name) and ``stack`` (k), so that :func:`mirror_motion` and :func:`reverse_motion` can move the motion
with a mirror or a time reversal (a left-right mirror negates dx, a top-bottom one dy, the diagonal swaps
them; a reversed clip plays each stack backwards with its motion negated).

In a config: ``modality: flow`` or ``modality: {name: flow, stack: 5, method: dis, bound: 8.0}`` on a video
dataset or the recognition task.
"""
import dataclasses

import numpy

from framework.config import ConfigError

from .flow import FlowCache, FlowSettings, dequantise_flow

__all__ = ["MODALITIES", "Modality", "modality_from_config", "rgb_difference", "colour_channels_of", "mirror_motion",
           "reverse_motion"]

MODALITIES = ("rgb", "flow", "rgbdiff", "rgb+flow", "rgb+rgbdiff")
_MOTION_CHANNELS = {"flow": 2, "rgbdiff": 3}


@dataclasses.dataclass(frozen=True)
class Modality:
    """A modality (see the module docstring): ``name`` in :data:`MODALITIES`, ``stack`` k motion frames per
    sampled frame, ``flow`` the flow settings (method, bound)."""

    name: str = "rgb"
    stack: int = 5
    flow: FlowSettings = FlowSettings()

    def __post_init__(self):
        if self.name not in MODALITIES:
            raise ConfigError(f"modality must be one of {MODALITIES}, got {self.name!r}")
        if int(self.stack) < 1:
            raise ConfigError(f"modality stack must be a positive number of frames, got {self.stack!r}")

    @property
    def motion(self):
        """"flow", "rgbdiff" or None (plain RGB)."""
        return {"flow": "flow", "rgb+flow": "flow", "rgbdiff": "rgbdiff", "rgb+rgbdiff": "rgbdiff"}.get(self.name)

    @property
    def colour_channels(self):
        """3 when the frames hold their colour, else 0."""
        return colour_channels_of({"modality": self.name})

    @property
    def channels(self):
        """Channels per frame: 3, 2k, 3k, 3 + 2k or 3 + 3k."""
        motion = self.motion
        return self.colour_channels + (self.stack * _MOTION_CHANNELS[motion] if motion else 0)

    def read(self, reader, path, indices, cache=None):
        """Frames ``indices`` (F,) of an open :class:`~video.data.decode.VideoReader` of file ``path`` in this
        modality: (F, H, W, channels); ``cache`` a :class:`FlowCache` with this modality's flow settings."""
        indices = numpy.asarray(indices, dtype=numpy.int64)
        count = len(reader)
        if self.motion is None:
            return reader.get_frames(indices)
        steps = indices[:, None] + numpy.arange(self.stack)                          # (F, k): motion frames
        parts = []
        if self.colour_channels:
            parts.append(reader.get_frames(indices).astype(numpy.float32))
        if self.motion == "flow":
            cache = cache or FlowCache(self.flow)
            flow = cache.get(path, lambda: reader.get_frames(numpy.arange(count)),
                             expected=(count, reader.height, reader.width))       # (count - 1, H, W, 2) uint8
            picked = flow[numpy.minimum(steps, len(flow) - 1).reshape(-1)]          # (F * k, H, W, 2)
            motion = dequantise_flow(picked, self.flow.bound)
        else:
            ends = numpy.minimum(numpy.concatenate([steps, steps[:, -1:] + 1], axis=1), count - 1)  # (F, k + 1)
            wanted, where = numpy.unique(ends.reshape(-1), return_inverse=True)    # each frame decoded once
            frames = reader.get_frames(wanted)[where]                                # (F * (k + 1), H, W, 3)
            motion = rgb_difference(frames.reshape((len(indices), self.stack + 1) + frames.shape[1:]))
            motion = motion.reshape((-1,) + motion.shape[2:])                        # (F * k, H, W, 3)
        f, h, w = len(indices), motion.shape[1], motion.shape[2]
        motion = motion.reshape(f, self.stack, h, w, -1).transpose(0, 2, 3, 1, 4)    # (F, H, W, k, c)
        parts.append(motion.reshape(f, h, w, -1))                                    # (F, H, W, k * c)
        return numpy.ascontiguousarray(numpy.concatenate(parts, axis=-1), dtype=numpy.float32)


def modality_from_config(value):
    """A :class:`Modality` from a config value: None, a name, ``{name, stack, method, bound}`` or a Modality."""
    if value is None:
        return Modality()
    if isinstance(value, Modality):
        return value
    if isinstance(value, str):
        return Modality(value)
    if not isinstance(value, dict):
        raise ConfigError(f"modality must be a name {MODALITIES} or {{name, stack, method, bound}}, got {value!r}")
    unknown = sorted(set(value) - {"name", "stack", "method", "bound"})
    if unknown:
        raise ConfigError(f"modality: unknown keys {unknown} (known: name, stack, method, bound)")
    flow = FlowSettings(value.get("method", "dis"), float(value.get("bound", FlowSettings.bound)))
    return Modality(value.get("name", "rgb"), int(value.get("stack", 5)), flow)


def rgb_difference(frames):
    """Differences of consecutive frames: (..., k + 1, H, W, 3) uint8 -> (..., k, H, W, 3) float32."""
    frames = frames.astype(numpy.float32)
    return frames[..., 1:, :, :, :] - frames[..., :-1, :, :, :]


def colour_channels_of(sample):
    """3 when the sample's frames start with colour channels (``modality`` rgb, rgb+flow or rgb+rgbdiff, the
    default rgb), else 0."""
    return 0 if sample.get("modality", "rgb") in ("flow", "rgbdiff") else 3


def _motion_view(images, sample):
    """(start channel, channels per stack frame, k) of the sample's motion channels, or None."""
    modality = sample.get("modality", "rgb")
    motion = Modality(modality).motion if modality in MODALITIES else None
    if motion is None:
        return None
    start = colour_channels_of(sample)
    per = _MOTION_CHANNELS[motion]
    k = int(sample.get("stack", 1))
    if images.shape[-1] != start + per * k:
        raise ValueError(f"{modality} frames with stack {k} need {start + per * k} channels, got {images.shape}")
    return start, per, k


def mirror_motion(images, sample, which):
    """Frames (..., H, W, C) already mirrored by symmetry ``which`` (bit 0 left-right, 1 top-bottom,
    2 diagonal), their flow components moved to match (dx negated, dy negated, dx and dy swapped, in that
    order); plain RGB and RGB differences are returned as they are."""
    view = _motion_view(images, sample)
    if view is None or view[1] != 2:
        return images
    start = view[0]
    images = numpy.array(images, dtype=numpy.float32)
    dx, dy = images[..., start::2], images[..., start + 1::2]
    if which & 1:
        dx *= -1
    if which & 2:
        dy *= -1
    if which & 4:
        images[..., start::2], images[..., start + 1::2] = dy.copy(), dx.copy()
    return images


def reverse_motion(images, sample):
    """Frames (..., H, W, C) of a clip played backwards: each frame's motion stack in reverse order and
    negated (the motion from frame i + k back to frame i).

    Played backwards, a stack starts at its last frame: with ``rgb+rgbdiff`` the colour channels become
    frame i + k (frame i plus the stack's differences), so the colour and the differences still tell an
    object that appears from one that disappears. Flow cannot rebuild that frame: with ``rgb+flow`` the
    colour channels stay frame i's."""
    view = _motion_view(images, sample)
    if view is None:
        return images
    start, per, k = view
    images = numpy.array(images, dtype=numpy.float32)
    motion = images[..., start:].reshape(images.shape[:-1] + (k, per))
    if start and per == _MOTION_CHANNELS["rgbdiff"]:          # colour + differences: move to the stack's end
        images[..., :start] += motion.sum(axis=-2)
    images[..., start:] = -motion[..., ::-1, :].reshape(images.shape[:-1] + (k * per,))
    return images
