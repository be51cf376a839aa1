"""A small real image folder: circles, squares and triangles drawn with OpenCV and written to disk.

``make_shapes(root)`` writes ``root/train/<class>/*.png|jpg`` and
``root/val/<class>/*`` (separate draws). Each image has a noisy background in
one of four dark-to-grey colours and one filled shape in one of six bright
colours, of random size (circumradius 30-45 % of the image) and position;
squares and triangles stand upright, tilted by up to 0.25 rad. Files
alternate between PNG and JPEG; a few are written as
grayscale or RGBA PNGs, so the decoding conversions are exercised too. It
serves the finetuning example and tests: ``python tools/make_shapes.py DIR``.
"""
import argparse
import math
import os

import numpy

from .transforms import require_cv2

__all__ = ["SHAPES", "draw_shape", "make_shapes"]

SHAPES = ("circle", "square", "triangle")
COLOURS = ((230, 40, 40), (40, 200, 60), (50, 90, 230), (240, 220, 40), (230, 60, 220), (40, 220, 230))  # RGB
BACKGROUNDS = ((30, 30, 30), (90, 90, 90), (150, 150, 150), (60, 40, 20))
START_ANGLE = {"square": math.pi / 4, "triangle": -math.pi / 2}  # upright square and triangle


def _polygon(center, radius, sides, angle):
    """Vertices (sides, 2) int32 of a regular polygon."""
    turns = angle + 2 * math.pi * numpy.arange(sides) / sides
    points = numpy.stack([center[0] + radius * numpy.cos(turns), center[1] + radius * numpy.sin(turns)], axis=1)
    return numpy.round(points).astype(numpy.int32)


def draw_shape(shape, size, rng):
    """One RGB image (size, size, 3) uint8 with a filled ``shape`` ("circle", "square", "triangle")."""
    cv2 = require_cv2()
    if shape not in SHAPES:
        raise ValueError(f"draw_shape: shape must be one of {SHAPES}, got {shape!r}")
    background = BACKGROUNDS[rng.integers(len(BACKGROUNDS))]
    image = numpy.clip(numpy.add(background, rng.normal(0, 10, (size, size, 3))), 0, 255).astype(numpy.uint8)
    colour = COLOURS[rng.integers(len(COLOURS))]
    radius = rng.uniform(0.3, 0.45) * size
    center = rng.uniform(radius, size - radius, 2)
    if shape == "circle":
        cv2.circle(image, (int(round(center[0])), int(round(center[1]))), int(round(radius)), colour, -1,
                   cv2.LINE_AA)
    else:
        sides = 4 if shape == "square" else 3
        angle = START_ANGLE[shape] + rng.uniform(-0.25, 0.25)  # upright, tilted by up to about 15 degrees
        cv2.fillPoly(image, [_polygon(center, radius, sides, angle)], colour, cv2.LINE_AA)
    return image


def _write(path, rgb, mode):
    """Write ``rgb`` (H, W, 3) to ``path`` as colour, grayscale ("gray") or with an alpha channel ("rgba")."""
    cv2 = require_cv2()
    bgr = cv2.cvtColor(rgb, cv2.COLOR_RGB2BGR)
    if mode == "gray":
        bgr = cv2.cvtColor(bgr, cv2.COLOR_BGR2GRAY)
    elif mode == "rgba":
        bgr = cv2.cvtColor(bgr, cv2.COLOR_BGR2BGRA)
    if not cv2.imwrite(path, bgr):
        raise OSError(f"cannot write image {path}")


def make_shapes(root, per_class=40, val_per_class=10, size=64, seed=0):
    """Write the shapes image folder under ``root`` and return ``{"train": dir, "val": dir}``.

    ``per_class`` training and ``val_per_class`` validation images per class,
    each ``size`` x ``size``. File i of a class is a grayscale PNG when
    i % 8 == 7, an RGBA PNG when i % 8 == 3, else PNG (even i) or JPEG (odd i).
    """
    rng = numpy.random.default_rng(seed)
    folders = {}
    for split, count in (("train", per_class), ("val", val_per_class)):
        folders[split] = os.path.join(os.fspath(root), split)
        for shape in SHAPES:
            folder = os.path.join(folders[split], shape)
            os.makedirs(folder, exist_ok=True)
            for i in range(count):
                mode = "gray" if i % 8 == 7 else "rgba" if i % 8 == 3 else "rgb"
                ext = "png" if mode != "rgb" or i % 2 == 0 else "jpg"
                _write(os.path.join(folder, f"{shape}_{i:04d}.{ext}"), draw_shape(shape, size, rng), mode)
    return folders


def main(argv=None):
    """``tools/make_shapes.py DIR [--per_class N] [--val_per_class N] [--size PX] [--seed S]``."""
    parser = argparse.ArgumentParser(description="Write the shapes image folder (train/ and val/).")
    parser.add_argument("root")
    parser.add_argument("--per_class", type=int, default=40)
    parser.add_argument("--val_per_class", type=int, default=10)
    parser.add_argument("--size", type=int, default=64)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    folders = make_shapes(args.root, args.per_class, args.val_per_class, args.size, args.seed)
    print(" ".join(f"{k}={v}" for k, v in folders.items()))
