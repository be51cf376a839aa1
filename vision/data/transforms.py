"""Image transforms: dict in, dict out, on one image or a stack of video frames.

A sample holds ``"img"``, one image (H, W, C), or ``"imgs"``, frames of one clip
(T, H, W, C) that share their size. A random transform draws its parameters
once per sample (``params``) and applies them to every frame (``apply``), so a
clip gets one crop and one flip. Draws come from the ``rng`` argument or, by
default, ``framework.io.sample_rng()``, which gives a sample the same draws for
any number and kind of DataLoader workers. The other keys pass through.

Images are RGB, uint8 (as decoded) until :class:`Normalize` makes them float32.
Resizing needs OpenCV (``cv2``, from the ``video`` extra); it is imported when
first used.

Registered in ``framework.registry.TRANSFORMS``; a config lists them as
``[{type: Resize, short_side: 256}, {type: CenterCrop, size: 224}, …]``
(built by :class:`Compose`).
"""
import math

import numpy

from framework.io import sample_rng
from framework.registry import TRANSFORMS

__all__ = ["resize_images", "ImageTransform", "Resize", "RandomResizedCrop", "CenterCrop", "RandomHorizontalFlip", "Normalize",
           "ToCHW", "Compose", "image_key", "require_cv2", "IMAGENET_MEAN", "IMAGENET_STD",
           "train_transforms", "eval_transforms"]

IMAGENET_MEAN = (123.675, 116.28, 103.53)  # torchvision's (0.485, 0.456, 0.406) on the 0-255 scale
IMAGENET_STD = (58.395, 57.12, 57.375)  # (0.229, 0.224, 0.225) * 255
IMAGE_KEYS = ("img", "imgs")


def require_cv2():
    """The ``cv2`` module, or an ImportError that says how to install it."""
    try:
        import cv2
    except ImportError:
        raise ImportError("vision data needs OpenCV: pip install opencv-python-headless "
                          "(or pip install 'oar[video]')") from None
    return cv2


def image_key(sample, who):
    """"img" or "imgs", whichever ``sample`` holds, checked to be (H, W, C) or (T, H, W, C)."""
    if not isinstance(sample, dict):
        raise TypeError(f"{who}: expected a sample dict with 'img' or 'imgs', got {type(sample).__name__}")
    for key, ndim in zip(IMAGE_KEYS, (3, 4)):
        if key in sample:
            shape = getattr(sample[key], "shape", None)
            if shape is None or len(shape) != ndim:
                layout = "(H, W, C)" if key == "img" else "(T, H, W, C)"
                raise ValueError(f"{who}: sample[{key!r}] must be an array {layout}, got shape {shape}")
            return key
    raise KeyError(f"{who}: the sample has neither 'img' nor 'imgs' (keys: {sorted(sample)})")


def _pair(value, what, who):
    """An int or a pair as (height, width)."""
    pair = (value, value) if isinstance(value, (int, numpy.integer)) else tuple(value)
    if len(pair) != 2 or min(pair) < 1:
        raise ValueError(f"{who}: {what} must be a positive int or (height, width), got {value!r}")
    return int(pair[0]), int(pair[1])


_INTERPOLATIONS = ("nearest", "bilinear", "bicubic", "area")


def resize_images(images, height, width, interpolation):
    """(..., H, W, C) -> (..., height, width, C) with cv2, frame by frame."""
    if images.shape[-3:-1] == (height, width):
        return images
    cv2 = require_cv2()
    flag = {"nearest": cv2.INTER_NEAREST, "bilinear": cv2.INTER_LINEAR, "bicubic": cv2.INTER_CUBIC,
            "area": cv2.INTER_AREA}[interpolation]
    frames = images.reshape((-1,) + images.shape[-3:])  # (T, H, W, C)
    out = numpy.empty((len(frames), height, width, images.shape[-1]), dtype=images.dtype)
    for i, frame in enumerate(frames):
        out[i] = cv2.resize(frame, (width, height), interpolation=flag).reshape(height, width, -1)
    return out.reshape(images.shape[:-3] + out.shape[1:])


def _check_interpolation(interpolation, who):
    if interpolation not in _INTERPOLATIONS:
        raise ValueError(f"{who}: interpolation must be one of {_INTERPOLATIONS}, got {interpolation!r}")
    return interpolation


class ImageTransform:
    """Base class: ``__call__(sample, rng=None)`` returns a new sample with ``img``/``imgs`` transformed.

    Subclasses define ``apply(images, params)`` on (..., H, W, C) arrays and,
    when random, ``params(height, width, rng)``, drawn once per sample.
    """

    random = False

    def __call__(self, sample, rng=None):
        key = image_key(sample, type(self).__name__)
        images = sample[key]
        params = None
        if self.random:
            params = self.params(images.shape[-3], images.shape[-2], sample_rng() if rng is None else rng)
        return {**sample, key: self.apply(images, params)}

    def params(self, height, width, rng):
        """The random parameters for an image of ``height`` x ``width``."""
        return None

    def apply(self, images, params):
        """Transform (..., H, W, C) -> (..., H', W', C')."""
        raise NotImplementedError

    def __repr__(self):
        args = ", ".join(f"{k}={v!r}" for k, v in vars(self).items())
        return f"{type(self).__name__}({args})"


@TRANSFORMS.register()
class Resize(ImageTransform):
    """Resize to a fixed size, or so that the short side has a given length.

    Args:
        short_side: the new length of the shorter side; the longer side is
            scaled by the same factor, ``int(short_side * long / short)`` (torchvision).
        size: (height, width) or an int (square), instead of ``short_side``.
        interpolation: "bilinear" (default), "nearest", "bicubic" or "area".

    Shape: (..., H, W, C) -> (..., H', W', C).
    """

    def __init__(self, short_side: int = None, size: list = None, interpolation: str = "bilinear"):
        if (short_side is None) == (size is None):
            raise ValueError(f"Resize: give exactly one of short_side and size, got short_side={short_side!r}, "
                             f"size={size!r}")
        if short_side is not None and short_side < 1:
            raise ValueError(f"Resize: short_side must be positive, got {short_side}")
        self.short_side = short_side
        self.size = None if size is None else _pair(size, "size", "Resize")
        self.interpolation = _check_interpolation(interpolation, "Resize")

    def apply(self, images, params):
        height, width = images.shape[-3:-1]
        if self.size is not None:
            return resize_images(images, *self.size, self.interpolation)
        if height <= width:
            new = (self.short_side, int(self.short_side * width / height))
        else:
            new = (int(self.short_side * height / width), self.short_side)
        return resize_images(images, *new, self.interpolation)


def _crop(images, top, left, height, width):
    return images[..., top:top + height, left:left + width, :]


@TRANSFORMS.register()
class RandomResizedCrop(ImageTransform):
    """Crop a random area and aspect ratio, then resize it to ``size`` (torchvision's algorithm).

    Up to 10 tries draw an area fraction from ``scale`` and a log-uniform aspect
    ratio (width / height) from ``ratio``; when none fits, the central crop with
    the aspect ratio clamped into ``ratio`` is used.

    Args:
        size: output (height, width) or an int (square).
        scale: range of the crop's area as a fraction of the image's.
        ratio: range of the crop's aspect ratio.
        interpolation: as :class:`Resize`.

    Shape: (..., H, W, C) -> (..., size_h, size_w, C).
    """

    random = True

    def __init__(self, size: list = (224, 224), scale: list = (0.08, 1.0), ratio: list = (3 / 4, 4 / 3),
                 interpolation: str = "bilinear"):
        self.size = _pair(size, "size", "RandomResizedCrop")
        self.scale, self.ratio = tuple(float(s) for s in scale), tuple(float(r) for r in ratio)
        if len(self.scale) != 2 or not 0 < self.scale[0] <= self.scale[1] <= 1:
            raise ValueError(f"RandomResizedCrop: scale must be (low, high) with 0 < low <= high <= 1, got {scale!r}")
        if len(self.ratio) != 2 or not 0 < self.ratio[0] <= self.ratio[1]:
            raise ValueError(f"RandomResizedCrop: ratio must be (low, high) with 0 < low <= high, got {ratio!r}")
        self.interpolation = _check_interpolation(interpolation, "RandomResizedCrop")

    def params(self, height, width, rng):
        """(top, left, crop height, crop width)."""
        area = height * width
        log_ratio = (math.log(self.ratio[0]), math.log(self.ratio[1]))
        for _ in range(10):
            target = area * rng.uniform(*self.scale)
            aspect = math.exp(rng.uniform(*log_ratio))
            w = int(round(math.sqrt(target * aspect)))
            h = int(round(math.sqrt(target / aspect)))
            if 0 < w <= width and 0 < h <= height:
                return int(rng.integers(0, height - h + 1)), int(rng.integers(0, width - w + 1)), h, w
        aspect = width / height
        if aspect < self.ratio[0]:
            w, h = width, int(round(width / self.ratio[0]))
        elif aspect > self.ratio[1]:
            h, w = height, int(round(height * self.ratio[1]))
        else:
            h, w = height, width
        return (height - h) // 2, (width - w) // 2, h, w

    def apply(self, images, params):
        return resize_images(_crop(images, *params), *self.size, self.interpolation)


@TRANSFORMS.register()
class CenterCrop(ImageTransform):
    """Cut the central ``size`` region (top = round((H - h) / 2), as torchvision).

    Args: size: (height, width) or an int. Shape: (..., H, W, C) -> (..., h, w, C).
    An image smaller than ``size`` is an error naming both sizes (resize it first).
    """

    def __init__(self, size: list = (224, 224)):
        self.size = _pair(size, "size", "CenterCrop")

    def apply(self, images, params):
        height, width = images.shape[-3:-1]
        h, w = self.size
        if h > height or w > width:
            raise ValueError(f"CenterCrop: the image is {height}x{width}, smaller than the crop {h}x{w}; "
                             "resize it first (e.g. Resize(short_side=...))")
        return _crop(images, int(round((height - h) / 2)), int(round((width - w) / 2)), h, w)


@TRANSFORMS.register()
class RandomHorizontalFlip(ImageTransform):
    """Mirror left-right with probability ``p`` (every frame of a clip together). Shape unchanged."""

    random = True

    def __init__(self, p: float = 0.5):
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"RandomHorizontalFlip: p must be in [0, 1], got {p}")
        self.p = float(p)

    def params(self, height, width, rng):
        return bool(rng.random() < self.p)

    def apply(self, images, flip):
        return images[..., ::-1, :] if flip else images


@TRANSFORMS.register()
class Normalize(ImageTransform):
    """(x - mean) / std per channel, as float32, on the 0-255 scale of decoded images.

    The defaults are ImageNet's statistics, which give the same values as
    torchvision's ``ToTensor()`` + ``Normalize((0.485, 0.456, 0.406), (0.229, 0.224, 0.225))``.
    Shape: (..., H, W, C) -> the same, float32.
    """

    def __init__(self, mean: list = IMAGENET_MEAN, std: list = IMAGENET_STD):
        self.mean = numpy.asarray(mean, dtype=numpy.float32)
        self.std = numpy.asarray(std, dtype=numpy.float32)
        if self.mean.ndim != 1 or self.mean.shape != self.std.shape or (self.std <= 0).any():
            raise ValueError(f"Normalize: mean {mean!r} and std {std!r} must be lists of one value per "
                             "channel, std positive")

    def apply(self, images, params):
        if images.shape[-1] != len(self.mean):
            raise ValueError(f"Normalize: {len(self.mean)} channel statistics for images with "
                             f"{images.shape[-1]} channels (shape {images.shape})")
        return (images.astype(numpy.float32) - self.mean) / self.std


@TRANSFORMS.register()
class ToCHW(ImageTransform):
    """Channels first, contiguous: (H, W, C) -> (C, H, W); frames (T, H, W, C) -> (T, C, H, W)."""

    def apply(self, images, params):
        return numpy.ascontiguousarray(numpy.moveaxis(images, -1, -3))


class Compose:
    """Apply transforms in order: ``Compose([{type: Resize, short_side: 256}, CenterCrop(224), …])``.

    Items are transform objects (any callable taking and returning a sample)
    or ``{type: …}`` dicts built through ``TRANSFORMS``. With an explicit
    ``rng`` every random transform draws from it, in order.
    """

    def __init__(self, transforms=()):
        self.transforms = [TRANSFORMS.build(t, where="transforms") if isinstance(t, dict) else t
                           for t in (transforms or ())]
        for t in self.transforms:
            if not callable(t):
                raise TypeError(f"Compose: {t!r} is neither a transform nor a {{type: ...}} dict")

    def __call__(self, sample, rng=None):
        for t in self.transforms:
            sample = t(sample, rng=rng) if isinstance(t, ImageTransform) else t(sample)
        return sample

    def __repr__(self):
        return "Compose([" + ", ".join(repr(t) for t in self.transforms) + "])"


def train_transforms(size=224, scale=(0.08, 1.0)):
    """The ImageNet training pipeline as config dicts: random resized crop, flip, normalise, CHW."""
    return [{"type": "RandomResizedCrop", "size": size, "scale": list(scale)},
            {"type": "RandomHorizontalFlip"}, {"type": "Normalize"}, {"type": "ToCHW"}]


def eval_transforms(size=224, resize=256):
    """The ImageNet evaluation pipeline as config dicts: short side to ``resize``, centre crop, normalise, CHW."""
    return [{"type": "Resize", "short_side": resize}, {"type": "CenterCrop", "size": size},
            {"type": "Normalize"}, {"type": "ToCHW"}]
