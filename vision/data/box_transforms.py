"""Transforms that move boxes with the image (SSD's augmentation, Liu et al. 2016, section 2.2).

A detection sample holds ``"img"`` (H, W, 3), ``"boxes"`` (G, 4) pixel corners (x1, y1, x2, y2),
``"labels"`` (G,) and ``"difficult"`` (G,); transforms keep them aligned (objects cut away are dropped
from all three). Photometric transforms (:class:`~vision.data.photometric.ColorJitter`) touch only the
image and compose with these. :class:`DetectionResize` ends a pipeline: a square image and boxes in
coordinates relative to the image (0-1), what the detector trains on.
"""
import numpy

from framework.io import sample_rng
from framework.registry import TRANSFORMS

from .transforms import resize_images

__all__ = ["RandomExpand", "RandomIoUCrop", "RandomFlipBoxes", "DetectionResize"]

_PER_OBJECT = ("boxes", "labels", "difficult")


def _check(sample, who):
    if not isinstance(sample, dict) or "img" not in sample or "boxes" not in sample:
        raise ValueError(f"{who}: a detection sample needs 'img' and 'boxes'")
    return sample["img"], numpy.asarray(sample["boxes"], dtype=numpy.float32).reshape(-1, 4)


def _keep(sample, keep, boxes, img):
    out = {**sample, "img": img, "boxes": boxes[keep]}
    for key in _PER_OBJECT[1:]:
        if key in sample:
            out[key] = numpy.asarray(sample[key])[keep]
    return out


@TRANSFORMS.register()
class RandomExpand:
    """With probability ``p``, place the image at a random spot of a canvas ``r`` times its size
    (r uniform in [1, max_ratio]) filled with ``fill`` (zoom-out: objects get smaller).

    Shape: (H, W, 3) -> (rH, rW, 3); boxes shifted by the offset.
    """

    def __init__(self, max_ratio: float = 3.0, p: float = 0.5, fill: list = (124, 116, 104)):
        if max_ratio < 1 or not 0 <= p <= 1:
            raise ValueError(f"RandomExpand: max_ratio must be >= 1 and p in [0, 1], got {max_ratio}, {p}")
        self.max_ratio, self.p, self.fill = float(max_ratio), float(p), numpy.asarray(fill, dtype=numpy.uint8)

    def __call__(self, sample, rng=None):
        img, boxes = _check(sample, "RandomExpand")
        rng = sample_rng() if rng is None else rng
        if rng.random() >= self.p:
            return sample
        h, w = img.shape[:2]
        ratio = rng.uniform(1, self.max_ratio)
        top, left = int(rng.uniform(0, h * ratio - h)), int(rng.uniform(0, w * ratio - w))
        canvas = numpy.empty((int(h * ratio), int(w * ratio), img.shape[2]), dtype=img.dtype)
        canvas[:] = self.fill
        canvas[top:top + h, left:left + w] = img
        return {**sample, "img": canvas, "boxes": boxes + numpy.float32([left, top, left, top])}


@TRANSFORMS.register()
class RandomIoUCrop:
    """SSD's random crop: pick a minimum IoU from ``min_ious`` (None: keep the whole image), then try up to
    ``trials`` crops of ``scale`` of each side and aspect ratio in ``ratio``; a crop counts when every
    object overlaps it with at least that IoU and some object's centre lies inside. Objects whose centre
    is outside are dropped, the others clipped to the crop.

    Shape: (H, W, 3) -> (h, w, 3), h <= H, w <= W.
    """

    def __init__(self, min_ious: list = (None, 0.1, 0.3, 0.5, 0.7, 0.9, 0.0), scale: list = (0.3, 1.0),
                 ratio: list = (0.5, 2.0), trials: int = 50):
        self.min_ious, self.scale, self.ratio, self.trials = list(min_ious), tuple(scale), tuple(ratio), int(trials)

    def __call__(self, sample, rng=None):
        img, boxes = _check(sample, "RandomIoUCrop")
        rng = sample_rng() if rng is None else rng
        h, w = img.shape[:2]
        min_iou = self.min_ious[int(rng.integers(len(self.min_ious)))]
        if min_iou is None or not len(boxes):
            return sample
        for _ in range(self.trials):
            cw, ch = rng.uniform(*self.scale) * w, rng.uniform(*self.scale) * h
            if not self.ratio[0] <= cw / ch <= self.ratio[1]:
                continue
            left, top = rng.uniform(0, w - cw), rng.uniform(0, h - ch)
            crop = numpy.float32([left, top, left + cw, top + ch])
            lt, rb = numpy.maximum(boxes[:, :2], crop[:2]), numpy.minimum(boxes[:, 2:], crop[2:])
            inter = numpy.prod(numpy.clip(rb - lt, 0, None), axis=1)
            union = numpy.prod(boxes[:, 2:] - boxes[:, :2], axis=1) + cw * ch - inter
            if (inter / numpy.maximum(union, 1e-6)).min() < min_iou:
                continue
            centres = (boxes[:, :2] + boxes[:, 2:]) / 2
            keep = ((centres > crop[:2]) & (centres < crop[2:])).all(axis=1)
            if not keep.any():
                continue
            x0, y0, x1, y1 = int(left), int(top), int(left + cw), int(top + ch)
            moved = numpy.clip(boxes, [x0, y0, x0, y0], [x1, y1, x1, y1]) - numpy.float32([x0, y0, x0, y0])
            return _keep(sample, keep, moved, img[y0:y1, x0:x1])
        return sample


@TRANSFORMS.register()
class RandomFlipBoxes:
    """Mirror the image left-right with probability ``p``; x1' = W - x2, x2' = W - x1."""

    def __init__(self, p: float = 0.5):
        self.p = float(p)

    def __call__(self, sample, rng=None):
        img, boxes = _check(sample, "RandomFlipBoxes")
        rng = sample_rng() if rng is None else rng
        if rng.random() >= self.p:
            return sample
        w = img.shape[1]
        flipped = numpy.stack([w - boxes[:, 2], boxes[:, 1], w - boxes[:, 0], boxes[:, 3]], axis=1)
        return {**sample, "img": numpy.ascontiguousarray(img[:, ::-1]), "boxes": flipped}


@TRANSFORMS.register()
class DetectionResize:
    """Resize the image to ``size`` x ``size`` and express the boxes relative to the image (divided by its
    width and height, so 0-1); boxes narrower or lower than ``min_size`` relative units are dropped.

    Shape: (H, W, 3) -> (size, size, 3); boxes (G, 4) pixels -> (G', 4) in [0, 1].
    """

    def __init__(self, size: int = 300, min_size: float = 0.002, interpolation: str = "bilinear"):
        self.size, self.min_size, self.interpolation = int(size), float(min_size), interpolation

    def __call__(self, sample, rng=None):
        img, boxes = _check(sample, "DetectionResize")
        h, w = img.shape[:2]
        relative = numpy.clip(boxes / numpy.float32([w, h, w, h]), 0, 1)
        keep = ((relative[:, 2:] - relative[:, :2]) >= self.min_size).all(axis=1)
        return _keep(sample, keep, relative, resize_images(img, self.size, self.size, self.interpolation))
