"""Flow features: a fixed, training-free motion descriptor per sampled frame (the ``flow`` feature modality).

For each sampled frame i the dense optical flow i -> i + 1 (:func:`~video.data.flow.dense_flow`, in pixels,
on the frames cut to the geometry of the ``rgb`` features: short side resized, centre crop) is summarised by
one vector. Image coordinates: x to the right, y down; orientation ``atan2(dy, dx)``, so 90 degrees points
down. Bin ``k`` of a histogram of ``bins`` (a multiple of 4, default 8) is centred on ``k * 360 / bins``
degrees (bin 0: rightwards, bin 2 of 8: downwards). Layout of a descriptor, ``5 * bins + 6`` values (46 for
8 bins):

- ``[0, bins)``: orientation histogram of the whole frame, weighted by ``w = max(|v| - min_speed, 0)``
  (speed above the noise floor), normalised to sum 1 (all 0 when nothing moves);
- ``[bins, 5 * bins)``: the same for the cells of a 2 x 2 grid, in the order top-left, top-right,
  bottom-left, bottom-right (the middle row / column of an odd-sized frame belongs to no cell);
- ``5 * bins + 0, 1``: mean dx and mean dy of the moving pixels (``w``-weighted), divided by ``bound``;
- ``5 * bins + 2, 3``: divergence and curl (> 0: clockwise on screen) of the flow, from its first moments
  about the motion's centroid c (``w``-weighted, q = p - c): ``div = 2 sum(w q.v) / sum(w |q|^2)``,
  ``curl = 2 sum(w q x v) / sum(w |q|^2)``, exact for a linear field v = A q + t. They are multiplied by
  the motion's RMS radius ``sqrt(sum(w |q|^2) / sum(w))`` and divided by ``bound``: the expansion and
  rotation speed at the edge of what moves. (Finite differences averaged over the frame telescope to the
  frame's border, where nothing moves, so they cannot see an object growing or turning in the middle.)
- ``5 * bins + 4``: mean speed ``|v|`` over the frame, divided by ``bound``;
- ``5 * bins + 5``: moving fraction, the share of pixels faster than ``min_speed``.

:func:`mirror_flow_features` and :func:`reverse_flow_features` give the descriptors of the mirrored or
backwards-played video from the descriptors (histogram bins and grid cells permuted, signs flipped), so
mirrored training copies and :class:`~video.data.transforms.RandomTimeReverse` need no flow of their own.
:class:`FlowFeatureExtractor` reads each sampled frame with its successor from a video and makes the
descriptors; :func:`~video.data.features.extract_features` writes them as ``{out}/flow/{name}.npy``.

In a config: ``flow: {method: dis, bound: 1.0, bins: 8, min_speed: 0.3}`` (the defaults; read by
:func:`flow_features_from_config`).
"""
import dataclasses
import hashlib
import json

import numpy

from framework.config import ConfigError
from framework.errors import UserError
from vision.data.transforms import Compose

from .decode import VideoDecodeError
from .features import feature_transforms
from .flow import FlowSettings, dense_flow

__all__ = ["FlowFeatureSettings", "flow_features_from_config", "flow_feature_dim", "flow_descriptor",
           "mirror_flow_features", "reverse_flow_features", "pair_indices", "FlowFeatureError", "ShortVideoError",
           "FlowFeatureExtractor"]

_STATS = 6  # dx, dy, divergence, curl, mean speed, moving fraction
_CELLS = 4


class FlowFeatureError(UserError, ValueError):
    """A flow field or a flow descriptor array of the wrong shape; the message says which and where."""


class ShortVideoError(VideoDecodeError):
    """A video with fewer than 2 frames: it has no flow; the message names the file."""


@dataclasses.dataclass(frozen=True)
class FlowFeatureSettings:
    """How flow descriptors are made: ``flow`` (method; bound: the speed in pixels per frame that maps to 1,
    default 1 as the objects of small videos move a few pixels per frame at most), ``bins`` orientation bins
    (a multiple of 4), ``min_speed`` pixels per frame below which a pixel counts as still."""

    flow: FlowSettings = FlowSettings(bound=1.0)
    bins: int = 8
    min_speed: float = 0.3

    def __post_init__(self):
        if int(self.bins) < 4 or int(self.bins) % 4:
            raise ConfigError(f"flow features: bins must be a positive multiple of 4, got {self.bins!r}")
        if not float(self.min_speed) >= 0:
            raise ConfigError(f"flow features: min_speed must be a non-negative speed in pixels, "
                              f"got {self.min_speed!r}")

    @property
    def dim(self):
        """Values per frame: ``5 * bins + 6``."""
        return flow_feature_dim(self.bins)

    def key(self):
        """The settings as a JSON-ready dict (part of cache keys)."""
        return {"method": self.flow.method, "bound": float(self.flow.bound), "bins": int(self.bins),
                "min_speed": float(self.min_speed), "format": 1}

    def digest(self):
        """A short hex digest of :meth:`key`."""
        return hashlib.sha256(json.dumps(self.key(), sort_keys=True).encode()).hexdigest()[:16]


def flow_features_from_config(value):
    """:class:`FlowFeatureSettings` from a config value: None (the defaults), ``{method, bound, bins,
    min_speed}`` or FlowFeatureSettings."""
    if value is None:
        return FlowFeatureSettings()
    if isinstance(value, FlowFeatureSettings):
        return value
    known = {"method", "bound", "bins", "min_speed"}
    if not isinstance(value, dict) or set(value) - known:
        raise ConfigError(f"flow features: expected a mapping with keys among {sorted(known)}, got {value!r}")
    defaults = FlowFeatureSettings()
    flow = FlowSettings(value.get("method", defaults.flow.method), float(value.get("bound", defaults.flow.bound)))
    return FlowFeatureSettings(flow, int(value.get("bins", defaults.bins)),
                               float(value.get("min_speed", defaults.min_speed)))


def flow_feature_dim(bins=8):
    """Values per frame of a descriptor with ``bins`` orientation bins: ``5 * bins + 6``."""
    return (1 + _CELLS) * int(bins) + _STATS


def _bins_of(features, who):
    """The number of orientation bins of descriptors (..., D), checked against the layout."""
    dim = numpy.shape(features)[-1] if numpy.ndim(features) else 0
    bins = (dim - _STATS) // (1 + _CELLS)
    if bins < 4 or bins % 4 or flow_feature_dim(bins) != dim:
        raise FlowFeatureError(f"{who}: flow descriptors have 5 * bins + 6 values per frame (bins a multiple "
                               f"of 4), got shape {numpy.shape(features)}")
    return bins


def _cell_of(height, width):
    """(H, W) int: the 2 x 2 grid cell of each pixel (0 top-left ... 3 bottom-right), -1 on an odd middle line."""
    def halves(n):
        side = numpy.full(n, -1)
        side[:n // 2], side[n - n // 2:] = 0, 1
        return side
    rows, cols = halves(height), halves(width)
    return numpy.where((rows[:, None] >= 0) & (cols[None, :] >= 0), 2 * rows[:, None] + cols[None, :], -1)


def _histograms(flow, weight, bins):
    """Normalised orientation histograms (T, 5, bins): the whole frame, then the 4 grid cells."""
    frames, height, width = weight.shape
    angle = numpy.arctan2(flow[..., 1], flow[..., 0])                          # (T, H, W) in [-pi, pi]
    k = numpy.floor(angle * (bins / (2 * numpy.pi)) + 0.5).astype(numpy.int64) % bins
    cell = numpy.broadcast_to(_cell_of(height, width), weight.shape)
    t = numpy.broadcast_to(numpy.arange(frames)[:, None, None], weight.shape)
    whole = numpy.bincount((t * bins + k).ravel(), weight.ravel(), frames * bins).reshape(frames, 1, bins)
    inside = cell >= 0
    cells = numpy.bincount(((t * _CELLS + cell) * bins + k)[inside], weight[inside], frames * _CELLS * bins)
    hist = numpy.concatenate([whole, cells.reshape(frames, _CELLS, bins)], axis=1)
    total = hist.sum(axis=2, keepdims=True)
    return numpy.divide(hist, total, out=numpy.zeros_like(hist), where=total > 0)


def _moments(flow, weight, bound):
    """(T, 4): weighted mean dx, dy and the scaled divergence and curl (see the module docstring)."""
    height, width = weight.shape[1:]
    total = weight.sum(axis=(1, 2))                                                   # (T,)
    safe = numpy.where(total > 0, total, 1.0)
    mean = numpy.einsum("thw,thwc->tc", weight, flow) / safe[:, None]              # (T, 2)
    ys, xs = numpy.mgrid[0:height, 0:width].astype(numpy.float64)
    centre_x = numpy.einsum("thw,w->t", weight, xs[0]) / safe
    centre_y = numpy.einsum("thw,h->t", weight, ys[:, 0]) / safe
    qx = xs[None] - centre_x[:, None, None]                                         # (T, H, W)
    qy = ys[None] - centre_y[:, None, None]
    spread = (weight * (qx * qx + qy * qy)).sum(axis=(1, 2))                         # sum w |q|^2
    radial = (weight * (qx * flow[..., 0] + qy * flow[..., 1])).sum(axis=(1, 2))    # sum w q.v
    turning = (weight * (qx * flow[..., 1] - qy * flow[..., 0])).sum(axis=(1, 2))   # sum w q x v
    root = numpy.sqrt(spread * safe)                                                # RMS radius * sum w
    scale = numpy.divide(2.0, root, out=numpy.zeros_like(root), where=root > 0)
    return numpy.stack([mean[:, 0], mean[:, 1], radial * scale, turning * scale], axis=1) / bound


def flow_descriptor(flow, settings=FlowFeatureSettings()):
    """Descriptors of dense flow fields (T, H, W, 2) (dx, dy pixels per frame): (T, 5 * bins + 6) float32,
    laid out as the module docstring says; computed in float64."""
    flow = numpy.asarray(flow, dtype=numpy.float64)
    if flow.ndim != 4 or flow.shape[-1] != 2 or min(flow.shape[:3]) < 1:
        raise FlowFeatureError(f"flow_descriptor: expected flow fields (T, H, W, 2) with T, H, W >= 1, got "
                               f"shape {flow.shape}")
    bound = float(settings.flow.bound)
    speed = numpy.hypot(flow[..., 0], flow[..., 1])                                 # (T, H, W)
    weight = numpy.maximum(speed - settings.min_speed, 0.0)
    hist = _histograms(flow, weight, int(settings.bins)).reshape(len(flow), -1)
    moments = _moments(flow, weight, bound)
    overall = numpy.stack([speed.mean(axis=(1, 2)) / bound, (speed > settings.min_speed).mean(axis=(1, 2))], axis=1)
    return numpy.concatenate([hist, moments, overall], axis=1).astype(numpy.float32)


def _permute(features, bins, bin_map, cell_map):
    """Descriptors with bin k's content moved to bin ``bin_map[k]`` and cell j's to cell ``cell_map[j]``."""
    out = numpy.array(features, dtype=numpy.float32)
    hist = numpy.asarray(features)[..., :5 * bins].reshape(out.shape[:-1] + (1 + _CELLS, bins))
    moved = numpy.empty_like(hist)
    moved[..., numpy.asarray((0,) + tuple(1 + c for c in cell_map))[:, None], numpy.asarray(bin_map)] = hist
    out[..., :5 * bins] = moved.reshape(out.shape[:-1] + (5 * bins,))
    return out


def mirror_flow_features(features, which):
    """The descriptors (..., D) of the video mirrored by symmetry ``which`` of
    :func:`~video.data.transforms.mirror_array` (bit 0 left-right, 1 top-bottom, 2 about the diagonal, in
    that order): orientations reflected, grid cells moved, dx / dy negated or swapped, curl negated once per
    reflection; divergence, speed and moving fraction stay. Shape kept, float32."""
    bins = _bins_of(features, "mirror_flow_features")
    k = numpy.arange(bins)
    out = numpy.array(features, dtype=numpy.float32)
    stats = 5 * bins
    steps = [(1, (bins // 2 - k) % bins, (1, 0, 3, 2)),          # left-right: angle -> 180 - angle
             (2, (-k) % bins, (2, 3, 0, 1)),                     # top-bottom: angle -> -angle
             (4, (bins // 4 - k) % bins, (0, 2, 1, 3))]          # diagonal: angle -> 90 - angle
    for bit, bin_map, cell_map in steps:
        if not which & bit:
            continue
        out = _permute(out, bins, bin_map, cell_map)
        if bit == 4:
            out[..., [stats, stats + 1]] = out[..., [stats + 1, stats]]
        else:
            out[..., stats + (0 if bit == 1 else 1)] *= -1
        out[..., stats + 3] *= -1
    return out


def reverse_flow_features(features):
    """The descriptors (..., D) of the same frames' motion played backwards (v -> -v): histograms turned by
    180 degrees, dx, dy, divergence and curl negated. Frame order is left as it is. Shape kept, float32."""
    bins = _bins_of(features, "reverse_flow_features")
    out = _permute(features, bins, (numpy.arange(bins) + bins // 2) % bins, (0, 1, 2, 3))
    out[..., 5 * bins:5 * bins + 4] *= -1
    return out


def pair_indices(indices, count, path="video"):
    """The frame pairs (T, 2) whose flow describes sampled frames ``indices`` (T,) of a ``count``-frame video:
    (i, i + 1), or (count - 2, count - 1) for the last frame. A video of fewer than 2 frames raises
    :class:`ShortVideoError` naming ``path``."""
    if count < 2:
        raise ShortVideoError(f"video {path}: flow features need at least 2 frames, it has {count}")
    start = numpy.minimum(numpy.asarray(indices, dtype=numpy.int64), count - 2)
    return numpy.stack([start, start + 1], axis=1)


class FlowFeatureExtractor:
    """Flow descriptors of frame pairs: ``extractor(pairs)`` with pairs (T, 2, H, W, 3) uint8 (each sampled
    frame and its successor) -> (T, 5 * bins + 6) float32.

    The frames are first cut as the ``rgb`` features' frames are (:func:`~video.data.features.feature_transforms`:
    short side to ``resize``, default ``size * 8 // 7``, centre crop ``size``). :meth:`frame_indices` names the
    pairs a video's sampled frames need (:func:`~video.data.features.frames_for` decodes them).
    """

    def __init__(self, size=224, resize=None, settings=FlowFeatureSettings()):
        self.geometry = Compose(feature_transforms(size, resize)[:2])   # its resize and centre crop only
        self.settings = flow_features_from_config(settings)

    @property
    def dim(self):
        """Values per frame."""
        return self.settings.dim

    def frame_indices(self, indices, count, path="video"):
        """The frames the descriptors of sampled frames ``indices`` (T,) need: (T, 2) pairs
        (:func:`pair_indices`), for :func:`~video.data.features.frames_for`."""
        return pair_indices(indices, count, path)

    def __call__(self, pairs):
        pairs = numpy.asarray(pairs)
        if pairs.ndim != 5 or pairs.shape[1] != 2 or pairs.shape[-1] != 3:
            raise FlowFeatureError(f"FlowFeatureExtractor: expected frame pairs (T, 2, H, W, 3), got shape "
                                   f"{pairs.shape}")
        frames = self.geometry({"imgs": pairs.reshape((-1,) + pairs.shape[2:])})["imgs"]     # (2T, h, w, 3)
        flows = numpy.stack([dense_flow(a, b, self.settings.flow.method) for a, b in zip(frames[::2], frames[1::2])])
        return flow_descriptor(flows, self.settings)
