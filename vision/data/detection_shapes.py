"""A generated shapes-detection set, written as a PASCAL VOC folder.

Six classes (:data:`DETECTION_SHAPES`): ``circle`` (filled disc), ``ring`` (annulus, inner radius
0.45-0.75 of the outer), ``square``, ``triangle`` (equilateral), ``star`` (five-pointed) and ``cross`` (a
plus sign whose arms are 0.25-0.4 of its length wide), every one but the circle at any rotation. Each
image is 240-480 px a side with 1-8 objects of 16-160 px (the longer side of the box); an object may be
hidden by later ones up to 30 % of its area, and its box is the whole shape's. Backgrounds are flat,
graded, blotched or striped; objects take random colours (kept apart from the background under them),
some with an outline of another colour; thin lines and irregular blobs that are not objects are drawn
too, and every image is saved as a JPEG of quality 35-95.

``make_detection_shapes(root, num_train, num_val, num_test, seed)`` writes ``JPEGImages/*.jpg``,
``Annotations/*.xml`` and ``ImageSets/Main/{train,val,test}.txt``, plus ``labels.txt`` (the class names,
one a line). Nothing in the detector depends on this generator: it reads any VOC folder.
"""
import math
import os

import numpy

from .transforms import require_cv2

__all__ = ["DETECTION_SHAPES", "render_detection_image", "write_voc_annotation", "make_detection_shapes"]

DETECTION_SHAPES = ("circle", "ring", "square", "triangle", "star", "cross")
MAX_HIDDEN = 0.3              # the largest part of an object that later objects may cover
SCALE = 4                     # sub-pixel precision of cv2's polygon drawing (shift = 2 bits)


def _colour(rng, avoid):
    """A random RGB colour at least 90 away (Euclidean) from the colour ``avoid``."""
    for _ in range(50):
        c = rng.integers(0, 256, 3)
        if numpy.linalg.norm(c - avoid) > 90:
            return c
    return 255 - numpy.asarray(avoid, dtype=int)


def _background(height, width, rng):
    """(H, W, 3) float32: flat, a linear gradient, low-frequency blotches or stripes, plus pixel noise."""
    cv2 = require_cv2()
    a, b = rng.integers(0, 256, 3).astype(numpy.float32), rng.integers(0, 256, 3).astype(numpy.float32)
    kind = rng.integers(4)
    if kind == 0:
        image = numpy.broadcast_to(a, (height, width, 3)).copy()
    elif kind == 1:
        angle = rng.uniform(0, 2 * math.pi)
        y, x = numpy.mgrid[0:height, 0:width]
        t = (x * math.cos(angle) + y * math.sin(angle))
        t = ((t - t.min()) / max(t.max() - t.min(), 1))[..., None]
        image = a * (1 - t) + b * t
    elif kind == 2:
        coarse = rng.random((rng.integers(3, 8), rng.integers(3, 8), 1)).astype(numpy.float32)
        t = cv2.resize(coarse, (width, height), interpolation=cv2.INTER_CUBIC).clip(0, 1)[..., None]
        image = a * (1 - t) + b * t
    else:
        period, angle = rng.uniform(8, 40), rng.uniform(0, math.pi)
        y, x = numpy.mgrid[0:height, 0:width]
        t = (numpy.sin((x * math.cos(angle) + y * math.sin(angle)) * 2 * math.pi / period) > 0)[..., None]
        image = numpy.where(t, a, a * 0.6 + b * 0.4)
    return (image + rng.normal(0, rng.uniform(0, 12), (height, width, 3))).astype(numpy.float32)


def _star(n_points=5, inner=0.45):
    turns = numpy.arange(2 * n_points) * math.pi / n_points - math.pi / 2
    radius = numpy.where(numpy.arange(2 * n_points) % 2 == 0, 1.0, inner)
    return numpy.stack([radius * numpy.cos(turns), radius * numpy.sin(turns)], axis=1)


def _cross(width):
    w = width / 2
    return numpy.array([[-w, -1], [w, -1], [w, -w], [1, -w], [1, w], [w, w], [w, 1], [-w, 1], [-w, w], [-1, w],
                        [-1, -w], [-w, -w]])


def _outline(shape, rng):
    """Unit outline(s) of ``shape`` around (0, 0): a list of (K, 2) polygons, the second a hole (ring)."""
    angle = rng.uniform(0, 2 * math.pi)
    rotation = numpy.array([[math.cos(angle), -math.sin(angle)], [math.sin(angle), math.cos(angle)]])
    circle = numpy.stack([numpy.cos(numpy.linspace(0, 2 * math.pi, 64, endpoint=False)),
                          numpy.sin(numpy.linspace(0, 2 * math.pi, 64, endpoint=False))], axis=1)
    if shape == "circle":
        return [circle]
    if shape == "ring":
        return [circle, circle * rng.uniform(0.45, 0.75)]
    if shape == "square":
        unit = numpy.array([[-1, -1], [1, -1], [1, 1], [-1, 1]]) / math.sqrt(2)
    elif shape == "triangle":
        turns = -math.pi / 2 + 2 * math.pi * numpy.arange(3) / 3
        unit = numpy.stack([numpy.cos(turns), numpy.sin(turns)], axis=1)
    elif shape == "star":
        unit = _star(inner=rng.uniform(0.38, 0.5))
    else:
        unit = _cross(rng.uniform(0.25, 0.4))
    return [unit @ rotation.T]


def _shape_mask(polygons, centre, radius, height, width):
    """(H, W) uint8 mask (255 inside, antialiased) of ``polygons`` scaled by ``radius`` around ``centre``;
    also the tight box (x1, y1, x2, y2) of the outer polygon."""
    cv2 = require_cv2()
    mask = numpy.zeros((height, width), dtype=numpy.uint8)
    points = [numpy.round((p * radius + centre) * SCALE).astype(numpy.int32) for p in polygons]
    cv2.fillPoly(mask, [points[0]], 255, cv2.LINE_AA, shift=2)
    for hole in points[1:]:
        cv2.fillPoly(mask, [hole], 0, cv2.LINE_AA, shift=2)
    outer = polygons[0] * radius + centre
    return mask, (outer[:, 0].min(), outer[:, 1].min(), outer[:, 0].max(), outer[:, 1].max())


def _distractors(image, rng):
    """Thin lines and irregular blobs (not objects) drawn onto ``image`` (H, W, 3) float32 in place."""
    cv2 = require_cv2()
    height, width = image.shape[:2]
    for _ in range(rng.integers(0, 6)):
        p1, p2 = rng.integers(0, [width, height], 2), rng.integers(0, [width, height], 2)
        cv2.line(image, tuple(int(v) for v in p1), tuple(int(v) for v in p2), rng.integers(0, 256, 3).tolist(),
                 int(rng.integers(1, 3)), cv2.LINE_AA)
    for _ in range(rng.integers(0, 4)):
        k = int(rng.integers(7, 13))
        turns = numpy.sort(rng.uniform(0, 2 * math.pi, k))
        radii = rng.uniform(6, 40) * rng.uniform(0.4, 1.0, k)
        centre = rng.uniform([0, 0], [width, height])
        points = numpy.stack([centre[0] + radii * numpy.cos(turns), centre[1] + radii * numpy.sin(turns)], axis=1)
        cv2.fillPoly(image, [numpy.round(points).astype(numpy.int32)], rng.integers(0, 256, 3).tolist(), cv2.LINE_AA)


def render_detection_image(rng, size_range=(240, 480), object_size=(16, 160), max_objects=8):
    """One generated image and its objects.

    Returns ``(rgb (H, W, 3) uint8, boxes (G, 4) float64 pixel corners x1, y1, x2, y2, labels (G,) int64
    indices into DETECTION_SHAPES)``, G in [1, max_objects].
    """
    height, width = (int(v) for v in rng.integers(size_range[0], size_range[1] + 1, 2))
    image = _background(height, width, rng)
    _distractors(image, rng)
    owner = numpy.full((height, width), -1, dtype=numpy.int32)         # which object shows at each pixel
    areas, boxes, labels = [], [], []
    for _ in range(int(rng.integers(1, max_objects + 1))):
        for _attempt in range(20):
            label = int(rng.integers(len(DETECTION_SHAPES)))
            polygons = _outline(DETECTION_SHAPES[label], rng)
            outer = polygons[0]
            extent = max(numpy.ptp(outer[:, 0]), numpy.ptp(outer[:, 1]))
            radius = rng.uniform(*object_size) / extent
            low = -outer.min(axis=0) * radius + 1
            high = numpy.array([width, height]) - outer.max(axis=0) * radius - 2
            if (high <= low).any():
                continue
            centre = rng.uniform(low, high)
            mask, box = _shape_mask(polygons, centre, radius, height, width)
            inside = mask > 127
            if inside.sum() < 16:
                continue
            covered = numpy.bincount(owner[inside][owner[inside] >= 0], minlength=len(areas))
            visible = numpy.bincount(owner[owner >= 0], minlength=len(areas))
            if len(areas) and ((visible - covered) < (1 - MAX_HIDDEN) * numpy.asarray(areas)).any():
                continue
            under = image[inside].mean(axis=0)
            colour = _colour(rng, under).astype(numpy.float32)
            x0, y0 = max(int(box[0]) - 2, 0), max(int(box[1]) - 2, 0)
            region = (slice(y0, int(box[3]) + 3), slice(x0, int(box[2]) + 3))      # the shape's box, padded
            alpha = (mask[region].astype(numpy.float32) / 255)[..., None]
            shade = colour + rng.normal(0, rng.uniform(0, 8), alpha.shape[:2] + (3,)).astype(numpy.float32)
            image[region] = image[region] * (1 - alpha) + shade * alpha
            if rng.random() < 0.4:
                cv2 = require_cv2()
                edge = [numpy.round((p * radius + centre) * SCALE).astype(numpy.int32) for p in polygons]
                cv2.polylines(image, edge, True, _colour(rng, colour).tolist(), int(rng.integers(1, 4)),
                              cv2.LINE_AA, shift=2)
            owner[inside] = len(areas)
            areas.append(int(inside.sum()))
            boxes.append(box)
            labels.append(label)
            break
    if not boxes:
        return render_detection_image(rng, size_range, object_size, max_objects)
    rgb = numpy.clip(image + 0.5, 0, 255).astype(numpy.uint8)
    return rgb, numpy.asarray(boxes, dtype=numpy.float64), numpy.asarray(labels, dtype=numpy.int64)


def write_voc_annotation(path, filename, size, boxes, names, difficult=None):
    """Write a VOC ``Annotations/*.xml`` file: ``size`` (height, width), pixel corner ``boxes`` (G, 4)
    written 1-based as VOC does (xmin = x1 + 1), ``names`` (G,) class names, ``difficult`` (G,) flags."""
    height, width = size
    difficult = [0] * len(names) if difficult is None else difficult
    objects = "".join(
        f"  <object>\n    <name>{name}</name>\n    <pose>Unspecified</pose>\n    <truncated>0</truncated>\n"
        f"    <difficult>{int(d)}</difficult>\n    <bndbox>\n      <xmin>{b[0] + 1:.1f}</xmin>\n"
        f"      <ymin>{b[1] + 1:.1f}</ymin>\n      <xmax>{b[2] + 1:.1f}</xmax>\n      <ymax>{b[3] + 1:.1f}</ymax>\n"
        f"    </bndbox>\n  </object>\n" for b, name, d in zip(boxes, names, difficult))
    text = (f"<annotation>\n  <folder>JPEGImages</folder>\n  <filename>{filename}</filename>\n"
            f"  <size>\n    <width>{width}</width>\n    <height>{height}</height>\n    <depth>3</depth>\n"
            f"  </size>\n{objects}</annotation>\n")
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


def make_detection_shapes(root, num_train=4000, num_val=300, num_test=500, seed=0, quality=(35, 95)):
    """Write the generated set as a VOC folder under ``root`` (see the module docstring); returns the
    number of images per split. Image i of the whole set is drawn from seed (``seed``, i), so a split
    does not depend on how many images the others hold."""
    cv2 = require_cv2()
    for folder in ("JPEGImages", "Annotations", os.path.join("ImageSets", "Main")):
        os.makedirs(os.path.join(root, folder), exist_ok=True)
    counts = {"train": num_train, "val": num_val, "test": num_test}
    index = 0
    for split, count in counts.items():
        ids = []
        for _ in range(count):
            rng = numpy.random.default_rng((seed, index))
            rgb, boxes, labels = render_detection_image(rng)
            name = f"{index:06d}"
            cv2.imwrite(os.path.join(root, "JPEGImages", name + ".jpg"), cv2.cvtColor(rgb, cv2.COLOR_RGB2BGR),
                        [cv2.IMWRITE_JPEG_QUALITY, int(rng.integers(quality[0], quality[1] + 1))])
            write_voc_annotation(os.path.join(root, "Annotations", name + ".xml"), name + ".jpg", rgb.shape[:2],
                                 boxes, [DETECTION_SHAPES[c] for c in labels])
            ids.append(name)
            index += 1
        with open(os.path.join(root, "ImageSets", "Main", split + ".txt"), "w", encoding="utf-8") as f:
            f.write("".join(i + "\n" for i in ids))
    with open(os.path.join(root, "labels.txt"), "w", encoding="utf-8") as f:
        f.write("".join(name + "\n" for name in DETECTION_SHAPES))
    return counts
