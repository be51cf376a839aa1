"""Photometric transforms: colour, grey and blur, drawn once per sample (every frame of a clip alike).

They take uint8 RGB images (..., H, W, 3), as decoded, and give uint8, so they go
before :class:`~vision.data.transforms.Normalize`:

- :class:`ColorJitter`: brightness, contrast, saturation and hue factors drawn
  as torchvision draws them, applied as one affine colour map per sample
  (clipped once, at the end; contrast pivots on the sample's mean grey, the
  mean over a clip's frames; hue turns the chroma plane of YIQ, the way HSV's
  hue grows: red toward yellow and green);
- :class:`RandomGrayscale`: the luma (ITU-R 601) in all three channels;
- :class:`GaussianBlur`: one sigma per sample.

Registered in ``TRANSFORMS``.
"""
import math

import numpy

from framework.registry import TRANSFORMS

from .transforms import ImageTransform, require_cv2

__all__ = ["ColorJitter", "RandomGrayscale", "GaussianBlur", "LUMA"]

LUMA = numpy.array([0.299, 0.587, 0.114])
_YIQ = numpy.array([[0.299, 0.587, 0.114], [0.596, -0.274, -0.322], [0.211, -0.523, 0.312]])


def _probability(p, who):
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"{who}: p must be in [0, 1], got {p}")
    return float(p)


def _factor_range(value, who, name, center=1.0, bound=None, floor=-math.inf):
    """``value`` as torchvision reads it: a number v gives [max(floor, center - v), center + v], a pair is the
    range; either must lie within ``bound``."""
    low, high = (max(floor, center - value), center + value) if isinstance(value, (int, float)) else tuple(value)
    if not low <= high or (bound is not None and not bound[0] <= low <= high <= bound[1]):
        raise ValueError(f"{who}: {name} must give a range within {bound}, got {value!r}")
    return float(low), float(high)


def _to_uint8(images):
    return numpy.clip(images + 0.5, 0, 255).astype(numpy.uint8)


@TRANSFORMS.register()
class ColorJitter(ImageTransform):
    """Random brightness, contrast, saturation and hue, the same for every frame of a sample.

    Args (as torchvision's): ``brightness``, ``contrast``, ``saturation``: v draws a factor from
    [max(0, 1 - v), 1 + v] (or give (low, high)); ``hue``: v in [0, 0.5] draws a hue turn from
    [-v, v] of a full turn; ``p``: the probability of jittering at all.

    Shape: (..., H, W, 3) uint8 -> the same.
    """

    random = True

    def __init__(self, brightness: float = 0.0, contrast: float = 0.0, saturation: float = 0.0, hue: float = 0.0,
                 p: float = 1.0):
        who = "ColorJitter"
        self.brightness, self.contrast, self.saturation = (
            _factor_range(v, who, name, bound=(0.0, math.inf), floor=0.0)
            for v, name in ((brightness, "brightness"), (contrast, "contrast"), (saturation, "saturation")))
        self.hue = _factor_range(hue, who, "hue", center=0.0, bound=(-0.5, 0.5))
        self.p = _probability(p, who)

    def params(self, height, width, rng):
        """(brightness, contrast, saturation, hue turn), or None when the sample is left alone."""
        factors = tuple(float(rng.uniform(*r)) for r in (self.brightness, self.contrast, self.saturation, self.hue))
        return factors if rng.random() < self.p else None

    def apply(self, images, params):
        if params is None:
            return images
        if images.shape[-1] != 3:
            raise ValueError(f"ColorJitter: needs RGB images (..., H, W, 3), got shape {images.shape}")
        brightness, contrast, saturation, hue = params
        # brightness x -> b x, contrast -> c x + (1 - c) * mean grey, saturation and hue are linear maps that
        # keep grey pixels grey: together c b H S x + (1 - c) b m
        turn = 2 * math.pi * hue
        rotation = numpy.array([[1, 0, 0], [0, math.cos(turn), math.sin(turn)], [0, -math.sin(turn), math.cos(turn)]])
        hue_map = numpy.linalg.inv(_YIQ) @ rotation @ _YIQ
        saturation_map = saturation * numpy.eye(3) + (1 - saturation) * numpy.outer(numpy.ones(3), LUMA)
        matrix = (contrast * brightness * hue_map @ saturation_map).astype(numpy.float32)
        mean_grey = float(images.reshape(-1, 3).mean(axis=0, dtype=numpy.float64) @ LUMA)
        offset = numpy.float32((1 - contrast) * brightness * mean_grey)
        return _to_uint8(images.astype(numpy.float32) @ matrix.T + offset)


@TRANSFORMS.register()
class RandomGrayscale(ImageTransform):
    """With probability ``p`` (default 0.1), every frame in grey: its luma in all three channels.

    Shape: (..., H, W, 3) uint8 -> the same.
    """

    random = True

    def __init__(self, p: float = 0.1):
        self.p = _probability(p, "RandomGrayscale")

    def params(self, height, width, rng):
        return bool(rng.random() < self.p)

    def apply(self, images, grey):
        if not grey:
            return images
        luma = images.astype(numpy.float32) @ LUMA.astype(numpy.float32)
        return _to_uint8(numpy.repeat(luma[..., None], 3, axis=-1))


@TRANSFORMS.register()
class GaussianBlur(ImageTransform):
    """With probability ``p``, blur every frame with one Gaussian whose sigma is drawn from ``sigma``
    (low, high) pixels (the kernel spans 3 sigma each side, as OpenCV's default).

    Shape: (..., H, W, C) uint8 -> the same.
    """

    random = True

    def __init__(self, sigma: list = (0.1, 2.0), p: float = 0.5):
        self.sigma = _factor_range(sigma, "GaussianBlur", "sigma", bound=(1e-3, math.inf))
        self.p = _probability(p, "GaussianBlur")

    def params(self, height, width, rng):
        sigma = float(rng.uniform(*self.sigma))
        return sigma if rng.random() < self.p else None

    def apply(self, images, sigma):
        if sigma is None:
            return images
        cv2 = require_cv2()
        flat = images.reshape((-1,) + images.shape[-3:])
        out = numpy.stack([cv2.GaussianBlur(frame, (0, 0), sigma) for frame in flat])
        return out.reshape(images.shape)
