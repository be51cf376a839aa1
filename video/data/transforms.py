"""Clip transforms: what video adds to :mod:`vision.data.transforms`.

A clip is ``sample["imgs"]``: frames (F, H, W, C), where F = views x T for a
sample holding several temporal views of ``sample["clip_len"]`` = T frames
each (see :mod:`video.data.sampling`). Vision's transforms (``Resize``,
``CenterCrop``, ``RandomResizedCrop``, ``RandomHorizontalFlip``,
``Normalize``, …) already draw their random parameters once per sample and
apply them to every frame, so a clip keeps one crop and one flip; this module
adds, with the same contract:

- :class:`RandomShortSideScale`: short side to a random length (Non-local's
  scale jitter [256, 320]);
- :class:`RandomCrop`: a fixed-size crop at a random position (TSN, Non-local);
- :class:`MultiScaleCrop`: TSN/TSM's corner-and-centre multi-scale crop;
- :class:`ThreeCrop` / :class:`TenCrop`: test views (3 crops along the long
  side; 4 corners + centre, and their mirror images); they multiply the frames,
  crop-major: (K * F, h, w, C);
- :class:`FormatClips`: (F, H, W, C) -> (N, T, C, H, W) (or (N, C, T, H, W)),
  N = F / T views (temporal views x crops), float32 and contiguous;
- :class:`RandomFlip` / :class:`RandomTimeReverse`: mirror the frames, or play
  the clip backwards, moving the label with ``label_map`` (as mmaction2's
  ``flip_label_map``): a mirrored move_left is a move_right, a reversed
  grow is a shrink. They need the sample's ``label``, which the datasets put
  in before the transforms run, and move the flow or RGB-difference channels
  of a motion modality with the frames (:mod:`video.data.modality`);
- :class:`NormalizeModality`: colour as ``Normalize``, motion channels scaled.

All are registered in ``TRANSFORMS``.
"""
import numpy

from framework.io import sample_rng
from framework.registry import TRANSFORMS
from vision.data.transforms import IMAGENET_MEAN, IMAGENET_STD, ImageTransform, Normalize, Resize, image_key

from .flow_features import reverse_flow_features
from .modality import colour_channels_of, mirror_motion, reverse_motion

__all__ = ["RandomShortSideScale", "RandomCrop", "MultiScaleCrop", "ThreeCrop", "TenCrop", "FormatClips",
           "NormalizeModality", "RandomFlip", "RandomTimeReverse", "check_label_map", "remap_label", "mirror_array",
           "LAYOUTS"]

LAYOUTS = ("NTCHW", "NCTHW")


def _size_pair(value, who):
    pair = (value, value) if isinstance(value, (int, numpy.integer)) else tuple(int(v) for v in value)
    if len(pair) != 2 or min(pair) < 1:
        raise ValueError(f"{who}: size must be a positive int or (height, width), got {value!r}")
    return pair


def _check_fits(height, width, size, who):
    if size[0] > height or size[1] > width:
        raise ValueError(f"{who}: the frames are {height}x{width}, smaller than the crop {size[0]}x{size[1]}; "
                         "resize them first (e.g. Resize(short_side=...))")


def _clip_key(sample, who):
    key = image_key(sample, who)
    if key != "imgs":
        raise ValueError(f"{who}: works on clips, sample['imgs'] (F, H, W, C); got a single 'img'")
    return key


@TRANSFORMS.register()
class RandomShortSideScale(ImageTransform):
    """Resize so the short side is a random integer in ``[low, high]`` (both included), keeping the aspect ratio.

    Shape: (..., H, W, C) -> (..., H', W', C).
    """

    random = True

    def __init__(self, low: int = 256, high: int = 320, interpolation: str = "bilinear"):
        if not 1 <= low <= high:
            raise ValueError(f"RandomShortSideScale: need 1 <= low <= high, got {low}, {high}")
        self.low, self.high = int(low), int(high)
        self.interpolation = Resize(short_side=self.low, interpolation=interpolation).interpolation  # checked there

    def params(self, height, width, rng):
        return int(rng.integers(self.low, self.high + 1))

    def apply(self, images, short_side):
        return Resize(short_side=short_side, interpolation=self.interpolation).apply(images, None)


@TRANSFORMS.register()
class RandomCrop(ImageTransform):
    """Cut a ``size`` (height, width) region at a uniformly random position. Shape: (..., H, W, C) -> (..., h, w, C)."""

    random = True

    def __init__(self, size: list = (224, 224)):
        self.size = _size_pair(size, "RandomCrop")

    def params(self, height, width, rng):
        _check_fits(height, width, self.size, "RandomCrop")
        return int(rng.integers(0, height - self.size[0] + 1)), int(rng.integers(0, width - self.size[1] + 1))

    def apply(self, images, offset):
        top, left = offset
        return images[..., top:top + self.size[0], left:left + self.size[1], :]


@TRANSFORMS.register()
class MultiScaleCrop(ImageTransform):
    """TSN/TSM's multi-scale crop: a crop of random scale and position, resized to ``size``.

    Crop sides are ``int(min(H, W) * s)`` for ``s`` in ``scales``, snapped to the
    output side when within 3 pixels; a (width, height) pair is drawn among the
    pairs whose scale indices differ by at most ``max_distort``. The position
    is drawn among 13 fixed points (corners, centre, edge centres and quarter
    points) when ``fixed_offsets`` (5 without ``more_fixed_offsets``), else
    uniformly. Shape: (..., H, W, C) -> (..., size_h, size_w, C).
    """

    random = True

    def __init__(self, size: list = (224, 224), scales: list = (1.0, 0.875, 0.75, 0.66), max_distort: int = 1,
                 fixed_offsets: bool = True, more_fixed_offsets: bool = True, interpolation: str = "bilinear"):
        self.size = _size_pair(size, "MultiScaleCrop")
        self.scales = tuple(float(s) for s in scales)
        if not self.scales or not all(0 < s <= 1 for s in self.scales):
            raise ValueError(f"MultiScaleCrop: scales must be fractions in (0, 1], got {scales!r}")
        self.max_distort, self.fixed_offsets, self.more_fixed_offsets = int(max_distort), fixed_offsets, \
            more_fixed_offsets
        self.resize = Resize(size=self.size, interpolation=interpolation)

    def _offsets(self, width_step, height_step):
        """The fixed (left, top) positions, in units of a quarter of the free room."""
        points = [(0, 0), (4, 0), (0, 4), (4, 4), (2, 2)]
        if self.more_fixed_offsets:
            points += [(0, 2), (4, 2), (2, 4), (2, 0), (1, 1), (3, 1), (1, 3), (3, 3)]
        return [(int(i * width_step), int(j * height_step)) for i, j in points]

    def params(self, height, width, rng):
        """(top, left, crop height, crop width)."""
        base = min(height, width)
        sides = [int(base * s) for s in self.scales]
        crop_h = [self.size[0] if abs(side - self.size[0]) < 3 else side for side in sides]
        crop_w = [self.size[1] if abs(side - self.size[1]) < 3 else side for side in sides]
        pairs = [(h, w) for i, h in enumerate(crop_h) for j, w in enumerate(crop_w)
                 if abs(i - j) <= self.max_distort and h <= height and w <= width]
        if not pairs:
            raise ValueError(f"MultiScaleCrop: the frames are {height}x{width}, too small for the crop sizes "
                             f"{sorted(set(crop_h))}; resize them first")
        h, w = pairs[int(rng.integers(len(pairs)))]
        if self.fixed_offsets:
            offsets = self._offsets((width - w) / 4, (height - h) / 4)
            left, top = offsets[int(rng.integers(len(offsets)))]
        else:
            left, top = int(rng.integers(0, width - w + 1)), int(rng.integers(0, height - h + 1))
        return top, left, h, w

    def apply(self, images, params):
        top, left, h, w = params
        return self.resize.apply(images[..., top:top + h, left:left + w, :], None)


class _MultiCrop(ImageTransform):
    """Base of the test-view crops: ``corners(H, W)`` lists (top, left, flip) per crop."""

    def __init__(self, size):
        self.size = _size_pair(size, type(self).__name__)

    def __call__(self, sample, rng=None):
        key = _clip_key(sample, type(self).__name__)
        return {**sample, key: self.apply(sample[key], None)}

    def apply(self, images, params):
        height, width = images.shape[-3:-1]
        _check_fits(height, width, self.size, type(self).__name__)
        h, w = self.size
        crops = []
        for top, left, flip in self.corners(height, width):
            crop = images[..., top:top + h, left:left + w, :]
            crops.append(crop[..., ::-1, :] if flip else crop)
        return numpy.concatenate(crops, axis=0)


@TRANSFORMS.register()
class ThreeCrop(_MultiCrop):
    """Three ``size`` crops along the longer side (start, centre, end; centred on the shorter side).

    Shape: (F, H, W, C) -> (3 F, h, w, C), crop-major. Non-local's 3-crop test
    (with ``size`` equal to the short side after resizing).
    """

    def __init__(self, size: list = (256, 256)):
        super().__init__(size)

    def corners(self, height, width):
        h, w = self.size
        if width - w >= height - h:
            top = (height - h) // 2
            return [(top, 0, False), (top, (width - w) // 2, False), (top, width - w, False)]
        left = (width - w) // 2
        return [(0, left, False), ((height - h) // 2, left, False), (height - h, left, False)]


@TRANSFORMS.register()
class TenCrop(_MultiCrop):
    """Four corner crops and the centre crop, then the same five mirrored left-right.

    Shape: (F, H, W, C) -> (10 F, h, w, C), crop-major.
    """

    def __init__(self, size: list = (224, 224)):
        super().__init__(size)

    def corners(self, height, width):
        h, w = self.size
        five = [(0, 0), (0, width - w), (height - h, 0), (height - h, width - w),
                (int(round((height - h) / 2)), int(round((width - w) / 2)))]
        return [(top, left, flip) for flip in (False, True) for top, left in five]


@TRANSFORMS.register()
class FormatClips(ImageTransform):
    """Frames (F, H, W, C) -> clips (N, T, C, H, W) (``layout="NTCHW"``) or (N, C, T, H, W) (``"NCTHW"``).

    T is ``sample["clip_len"]`` (set by the sampler) and N = F / T; float32,
    contiguous. Frames of one clip must be consecutive in F (the samplers and
    the multi-crop transforms keep them so).
    """

    def __init__(self, layout: str = "NTCHW"):
        if layout not in LAYOUTS:
            raise ValueError(f"FormatClips: layout must be one of {LAYOUTS}, got {layout!r}")
        self.layout = layout

    def __call__(self, sample, rng=None):
        key = _clip_key(sample, "FormatClips")
        frames = sample[key]
        clip_len = int(sample.get("clip_len", len(frames)))
        if clip_len < 1 or len(frames) % clip_len:
            raise ValueError(f"FormatClips: {len(frames)} frames do not split into clips of clip_len={clip_len}")
        clips = frames.reshape((-1, clip_len) + frames.shape[1:])  # (N, T, H, W, C)
        axes = (0, 1, 4, 2, 3) if self.layout == "NTCHW" else (0, 4, 1, 2, 3)
        return {**sample, key: numpy.ascontiguousarray(clips.transpose(axes), dtype=numpy.float32)}


def mirror_array(array, which, row_axis):
    """``array`` mirrored by symmetry ``which`` (0-7) of the square: bit 0 left-right, bit 1 top-bottom,
    bit 2 about the diagonal (rows become columns; square images only), in that order. Image rows are
    axis ``row_axis`` and columns the next one. Returns a contiguous copy."""
    column_axis = row_axis + 1
    if which & 1:
        array = numpy.flip(array, column_axis)
    if which & 2:
        array = numpy.flip(array, row_axis)
    if which & 4:
        array = array.swapaxes(row_axis, column_axis)
    return numpy.ascontiguousarray(array)


def _happens(p, rng=None):
    """One draw: True with probability ``p`` (from ``rng``, default the sample's generator)."""
    return (sample_rng() if rng is None else rng).random() < p


def check_label_map(label_map, who):
    """``label_map`` as an int64 array, checked to be a permutation of 0..K-1 (or None)."""
    if label_map is None:
        return None
    mapping = numpy.asarray(label_map)
    if mapping.ndim != 1 or mapping.dtype.kind not in "iu" or sorted(mapping.tolist()) != list(range(len(mapping))):
        raise ValueError(f"{who}: label_map must list each of the classes 0..K-1 once (class i becomes "
                         f"label_map[i]), got {label_map!r}")
    return mapping.astype(numpy.int64)


def remap_label(sample, label_map, who):
    """The sample with its ``label`` moved by ``label_map`` (K,): class id i becomes ``label_map[i]``; in a
    multi-hot label (C,) with C >= K, entry i moves to ``label_map[i]``. Classes from K on, and samples
    without a label (prediction), are unchanged."""
    if label_map is None or "label" not in sample:
        return sample
    label = numpy.asarray(sample["label"])
    if label.ndim == 0:
        moved = numpy.int64(label_map[label]) if 0 <= label < len(label_map) else label
    elif label.ndim == 1 and label.size >= len(label_map):
        moved = label.copy()
        moved[label_map] = label[:len(label_map)]
    else:
        raise ValueError(f"{who}: label_map has {len(label_map)} classes; the sample's label has shape "
                         f"{label.shape}")
    return {**sample, "label": moved}


@TRANSFORMS.register()
class RandomFlip(ImageTransform):
    """Mirror every frame with probability ``p`` and move the label by ``label_map`` when mirrored (e.g.
    move_left <-> move_right). ``direction``: "horizontal" (left-right), "vertical" (top-bottom) or
    "diagonal" (about the main diagonal: rows become columns; square frames only). Shape unchanged."""

    random = True
    DIRECTIONS = ("horizontal", "vertical", "diagonal")

    def __init__(self, direction: str = "horizontal", p: float = 0.5, label_map: list = None):
        if direction not in self.DIRECTIONS or not 0.0 <= p <= 1.0:
            raise ValueError(f"RandomFlip: direction must be one of {self.DIRECTIONS} and p in [0, 1], "
                             f"got {direction!r}, {p}")
        self.direction, self.p = direction, float(p)
        self.label_map = check_label_map(label_map, "RandomFlip")

    def __call__(self, sample, rng=None):
        key = image_key(sample, "RandomFlip")
        images = sample[key]
        if self.direction == "diagonal" and images.shape[-3] != images.shape[-2]:
            raise ValueError(f"RandomFlip: a diagonal mirror needs square frames, got {images.shape[-3]}x"
                             f"{images.shape[-2]}; crop them first")
        if not _happens(self.p, rng):
            return sample
        which = 1 << self.DIRECTIONS.index(self.direction)
        images = mirror_motion(mirror_array(images, which, row_axis=-3), sample, which)
        return remap_label({**sample, key: images}, self.label_map, "RandomFlip")


@TRANSFORMS.register()
class RandomTimeReverse(ImageTransform):
    """Play the clip backwards with probability ``p`` and move the label by ``label_map`` (e.g. grow <->
    shrink, appear <-> disappear).

    ``keys``: the arrays to reverse: by default the clip ``imgs`` (F, H, W, C), reversed inside each
    temporal view of ``clip_len`` frames (``frame_inds`` (views, T) follows); any other key (e.g. frame
    features ``rgb`` (T, D)) is reversed along its first axis. ``flow_keys``: those of ``keys`` holding flow
    descriptors (T, D) (:mod:`video.data.flow_features`, e.g. ``[flow]``), whose motion is also negated
    (:func:`~video.data.flow_features.reverse_flow_features`).
    """

    random = True

    def __init__(self, p: float = 0.5, label_map: list = None, keys: list = ("imgs",), flow_keys: list = ()):
        if not 0.0 <= p <= 1.0 or not keys or set(flow_keys) - set(keys):
            raise ValueError(f"RandomTimeReverse: p must be in [0, 1], keys name at least one array and flow_keys "
                             f"only some of them, got {p}, {keys!r}, {flow_keys!r}")
        self.p, self.keys, self.flow_keys = float(p), [str(k) for k in keys], {str(k) for k in flow_keys}
        self.label_map = check_label_map(label_map, "RandomTimeReverse")

    def __call__(self, sample, rng=None):
        missing = [k for k in self.keys if k not in sample]
        if missing:
            raise KeyError(f"RandomTimeReverse: the sample has no {missing} (keys: {sorted(sample)})")
        if not _happens(self.p, rng):
            return sample
        out = dict(sample)
        for key in self.keys:
            array = numpy.asarray(sample[key])
            if key == "imgs":                                   # reverse inside each view of clip_len frames
                views = array.reshape((-1, int(sample.get("clip_len", len(array)))) + array.shape[1:])
                out[key] = reverse_motion(numpy.ascontiguousarray(views[:, ::-1]).reshape(array.shape), sample)
            elif key in self.flow_keys:
                out[key] = reverse_flow_features(array[::-1])
            else:
                out[key] = numpy.ascontiguousarray(array[::-1])
        if "frame_inds" in sample and "imgs" in self.keys:
            out["frame_inds"] = numpy.ascontiguousarray(numpy.asarray(sample["frame_inds"])[..., ::-1])
        return remap_label(out, self.label_map, "RandomTimeReverse")


@TRANSFORMS.register()
class NormalizeModality(ImageTransform):
    """Normalise frames of any :mod:`~video.data.modality`: colour channels as
    :class:`~vision.data.transforms.Normalize` (``(x - mean) / std`` on 0..255), motion channels (flow in
    pixels, RGB differences) divided by ``motion_std``. Shape (F, H, W, C) -> the same, float32."""

    def __init__(self, mean: list = IMAGENET_MEAN, std: list = IMAGENET_STD, motion_std: float = 1.0):
        self.colour = Normalize(mean, std)
        if not float(motion_std) > 0:
            raise ValueError(f"NormalizeModality: motion_std must be positive, got {motion_std!r}")
        self.motion_std = float(motion_std)

    def __call__(self, sample, rng=None):
        key = _clip_key(sample, "NormalizeModality")
        images = numpy.asarray(sample[key], dtype=numpy.float32)
        colour = colour_channels_of(sample)
        out = numpy.empty(images.shape, dtype=numpy.float32)
        if colour:
            out[..., :colour] = self.colour.apply(images[..., :colour], None)
        out[..., colour:] = images[..., colour:] / self.motion_std
        return {**sample, key: out}
