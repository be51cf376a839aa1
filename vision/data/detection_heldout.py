"""A second, independently written renderer of the six detection shapes, for held-out evaluation only.

It shares no drawing code with :mod:`vision.data.detection_shapes`: shapes are rasterised in NumPy by an
even-odd point-in-polygon test (circles by distance) on a 3 x 3 supersampled grid, over value-noise,
checkerboard or radial backgrounds, with soft drop shadows instead of outlines, other size and colour
ranges (HSV), and its own definitions of the star (inner radius 0.45-0.6) and cross (arm width
0.28-0.38). Images are 256-448 px a side with 1-7 objects of 20-150 px, each at most 30 % hidden.
``make_heldout_detection_set(root, count, seed)`` writes a VOC folder with the split ``test``.
"""
import math
import os

import numpy

from .detection_shapes import DETECTION_SHAPES, write_voc_annotation
from .transforms import require_cv2

__all__ = ["render_heldout_image", "make_heldout_detection_set"]

SUPERSAMPLE = 3


def _hsv_colour(rng, value_range=(0.35, 1.0)):
    h, s, v = rng.uniform(0, 1), rng.uniform(0.3, 1.0), rng.uniform(*value_range)
    i, f = int(h * 6) % 6, h * 6 - int(h * 6)
    p, q, t = v * (1 - s), v * (1 - f * s), v * (1 - (1 - f) * s)
    return numpy.array([(v, t, p), (q, v, p), (p, v, t), (p, q, v), (t, p, v), (v, p, q)][i]) * 255


def _background(height, width, rng):
    kind = rng.integers(3)
    y, x = numpy.mgrid[0:height, 0:width].astype(numpy.float64)
    a, b = _hsv_colour(rng, (0.1, 0.9)), _hsv_colour(rng, (0.1, 0.9))
    if kind == 0:                                       # value noise: bilinear blend of a coarse random grid
        cells = rng.uniform(0, 1, (6, 6))
        gy, gx = y / height * 5, x / width * 5
        iy, ix = gy.astype(int), gx.astype(int)
        fy, fx = gy - iy, gx - ix
        t = (cells[iy, ix] * (1 - fx) * (1 - fy) + cells[iy, ix + 1] * fx * (1 - fy)
             + cells[iy + 1, ix] * (1 - fx) * fy + cells[iy + 1, ix + 1] * fx * fy)
    elif kind == 1:                                     # checkerboard
        size = rng.uniform(12, 48)
        t = ((x // size + y // size) % 2) * rng.uniform(0.2, 0.6)
    else:                                               # radial
        cy, cx = rng.uniform(0, height), rng.uniform(0, width)
        t = numpy.clip(numpy.hypot(y - cy, x - cx) / max(height, width), 0, 1)
    image = a * (1 - t[..., None]) + b * t[..., None]
    return image + rng.normal(0, 4, image.shape)


def _vertices(shape, rng):
    """Unit polygon of ``shape`` (None for circle and ring), rotated at random."""
    angle = rng.uniform(0, 2 * math.pi)
    if shape in ("circle", "ring"):
        return None
    if shape == "square":
        turns = angle + math.pi / 4 + numpy.arange(4) * math.pi / 2
        radius = numpy.ones(4)
    elif shape == "triangle":
        turns = angle + numpy.arange(3) * 2 * math.pi / 3
        radius = numpy.ones(3)
    elif shape == "star":
        turns = angle + numpy.arange(10) * math.pi / 5
        radius = numpy.where(numpy.arange(10) % 2 == 0, 1.0, rng.uniform(0.45, 0.6))
    else:
        w = rng.uniform(0.28, 0.38) / 2
        points = numpy.array([[w, 1], [w, w], [1, w], [1, -w], [w, -w], [w, -1], [-w, -1], [-w, -w], [-1, -w],
                              [-1, w], [-w, w], [-w, 1]])
        c, s = math.cos(angle), math.sin(angle)
        return points @ numpy.array([[c, s], [-s, c]])
    return numpy.stack([radius * numpy.cos(turns), radius * numpy.sin(turns)], axis=1)


def _inside(px, py, polygon):
    """Even-odd test of points (any shape) against a polygon (K, 2)."""
    result = numpy.zeros(px.shape, dtype=bool)
    for (x1, y1), (x2, y2) in zip(polygon, numpy.roll(polygon, -1, axis=0)):
        crosses = (y1 > py) != (y2 > py)
        x_at = x1 + (py - y1) * (x2 - x1) / numpy.where(y2 != y1, y2 - y1, 1)
        result ^= crosses & (px < x_at)
    return result


def _coverage(shape, polygon, inner, centre, radius, height, width):
    """Fractional coverage (H, W) of the shape and its pixel box (x1, y1, x2, y2)."""
    if polygon is None:
        box = (centre[0] - radius, centre[1] - radius, centre[0] + radius, centre[1] + radius)
    else:
        pts = polygon * radius + centre
        box = (pts[:, 0].min(), pts[:, 1].min(), pts[:, 0].max(), pts[:, 1].max())
    offsets = (numpy.arange(SUPERSAMPLE) + 0.5) / SUPERSAMPLE
    y, x = numpy.mgrid[0:height, 0:width].astype(numpy.float64)
    cover = numpy.zeros((height, width))
    for oy in offsets:
        for ox in offsets:
            u, v = (x + ox - centre[0]) / radius, (y + oy - centre[1]) / radius
            if polygon is None:
                r = numpy.hypot(u, v)
                hit = (r <= 1) & (r >= inner) if shape == "ring" else r <= 1
            else:
                hit = _inside(u, v, polygon)
            cover += hit
    return cover / SUPERSAMPLE ** 2, box


def render_heldout_image(rng):
    """One image ``(rgb (H, W, 3) uint8, boxes (G, 4) pixel corners, labels (G,) int64)``."""
    height, width = (int(v) for v in rng.integers(256, 449, 2))
    image = _background(height, width, rng)
    owner = numpy.full((height, width), -1)
    areas, boxes, labels = [], [], []
    for _ in range(int(rng.integers(1, 8))):
        for _attempt in range(25):
            label = int(rng.integers(len(DETECTION_SHAPES)))
            shape = DETECTION_SHAPES[label]
            polygon = _vertices(shape, rng)
            extent = 2.0 if polygon is None else max(numpy.ptp(polygon[:, 0]), numpy.ptp(polygon[:, 1]))
            radius = rng.uniform(20, 150) / extent
            reach = numpy.abs(polygon).max(axis=0) * radius if polygon is not None else numpy.array([radius] * 2)
            if (2 * reach + 4 >= [width, height]).any():
                continue
            centre = rng.uniform(reach + 2, numpy.array([width, height]) - reach - 2)
            cover, box = _coverage(shape, polygon, rng.uniform(0.45, 0.75), centre, radius, height, width)
            inside = cover > 0.5
            if inside.sum() < 16:
                continue
            covered = numpy.bincount(owner[inside][owner[inside] >= 0], minlength=len(areas))
            visible = numpy.bincount(owner[owner >= 0], minlength=len(areas))
            if len(areas) and ((visible - covered) < 0.7 * numpy.asarray(areas)).any():
                continue
            shadow = numpy.roll(numpy.roll(cover, 3, axis=0), 3, axis=1)[..., None] * 0.35
            image = image * (1 - shadow)
            colour = _hsv_colour(rng)
            while numpy.linalg.norm(colour - image[inside].mean(axis=0)) < 80:
                colour = _hsv_colour(rng)
            image = image * (1 - cover[..., None]) + colour * cover[..., None]
            owner[inside] = len(areas)
            areas.append(int(inside.sum()))
            boxes.append(box)
            labels.append(label)
            break
    if not boxes:
        return render_heldout_image(rng)
    return (numpy.clip(image, 0, 255).astype(numpy.uint8), numpy.asarray(boxes, dtype=numpy.float64),
            numpy.asarray(labels, dtype=numpy.int64))


def make_heldout_detection_set(root, count=200, seed=1000):
    """Write ``count`` held-out images as a VOC folder (split ``test``) under ``root``; returns ``root``."""
    cv2 = require_cv2()
    for folder in ("JPEGImages", "Annotations", os.path.join("ImageSets", "Main")):
        os.makedirs(os.path.join(root, folder), exist_ok=True)
    names = []
    for index in range(count):
        rng = numpy.random.default_rng((seed, index))
        rgb, boxes, labels = render_heldout_image(rng)
        name = f"h{index:05d}"
        cv2.imwrite(os.path.join(root, "JPEGImages", name + ".jpg"), cv2.cvtColor(rgb, cv2.COLOR_RGB2BGR),
                    [cv2.IMWRITE_JPEG_QUALITY, int(rng.integers(50, 91))])
        write_voc_annotation(os.path.join(root, "Annotations", name + ".xml"), name + ".jpg", rgb.shape[:2], boxes,
                             [DETECTION_SHAPES[c] for c in labels])
        names.append(name)
    with open(os.path.join(root, "ImageSets", "Main", "test.txt"), "w", encoding="utf-8") as f:
        f.write("".join(n + "\n" for n in names))
    return root
