"""A held-out test set of labelled videos, drawn by a second, independently written renderer.

Models trained on :mod:`video.data.synthetic` are checked here on videos that
other code draws: nothing trains on this set, every video is in its test
split. The labels mean what they mean there: one object per video, its
**motion** one of :data:`MOTIONS` and its **shape** one of :data:`SHAPES`,
directions as seen on the displayed frame (x to the right, y down).

- ``move_left``/``move_right``/``move_up``/``move_down``: a translation over
  32-50 % of the frame (``move_up`` goes toward the top edge);
- ``rotate_clockwise``/``rotate_counterclockwise``: a turn of 100-200 degrees;
  clockwise is the way clock hands turn on screen, so with y down the angle
  ``atan2(dy, dx)`` of the orientation mark around the centre increases;
- ``grow``/``shrink``: a size ratio of 1.75-2.3 between first and last frame;
- ``appear``/``disappear``: absent then present / present then absent, the
  switch in the middle 60 % of the clip;
- ``blink``: on first and last, 2 or 3 off phases between on phases, every
  phase at least 3 frames;
- ``still``: nothing moves, turns or changes size, always visible.

Nothing but the label's own change happens to the object; the camera may
shake by a pixel or two (never pans) and the light may change.

The look is this module's own: shapes rasterised with signed distances on a
3x supersampled grid (circle, square, triangle, five-point star, plus-sign
cross and ring, all inside a circle of the object's radius), filled solid,
with an outline, a two-tone gradient, stripes or dots (textures turn with the
object), an orientation mark on every shape (a dot, a V notch cut into the
rim, a bar from the centre, or the mark-side half in another colour);
backgrounds flat, linear or radial gradients, stripes, checkerboards, value
noise, or clutter of small lines and thin rectangles; light ramps or flicker,
Gaussian blur, sensor noise, camera shake, H.264 at crf 18-32; motions eased
(smoothstep, cosine, ease-in, ease-out) or at constant speed with a pause.
Colours are chosen so that the object contrasts with its background and the
mark with the object. Frames are square: 112x112 mostly, some 96x96 and
128x128; 24-64 frames at 20-30 fps.

:func:`render_clip` draws one clip (``plain=True``: flat background, solid
object, dot mark of known colours, no camera effects, for measurements);
:func:`make_heldout_set` writes a set with the list files of
:func:`video.data.synthetic.make_synthetic_set` (test split only);
:func:`ensure_heldout_set` makes one once in ``$OAR_HOME``;
``python -m video.data.heldout --out DIR --num N --seed S`` writes one from
the command line.
"""
import colorsys
import json
import math
import os
import time

import numpy

from framework.fetch import oar_home

from .encode import write_video
from .pool import ensure_made, map_indexed, write_lines
from .synthetic import MOTIONS, SHAPES

__all__ = ["MOTIONS", "SHAPES", "BACKGROUNDS", "FILLS", "MARKS", "PROFILES", "LIGHTS", "PLAIN_BACKGROUND",
           "PLAIN_OBJECT", "PLAIN_MARK", "VERSION", "render_clip", "assign_labels", "make_heldout_set",
           "ensure_heldout_set", "main"]

VERSION = 1                                  # bump when the videos change; part of the default folder name
BACKGROUNDS = ("flat", "linear_gradient", "radial_gradient", "stripes", "checkerboard", "noise", "clutter")
FILLS = ("solid", "outline", "gradient", "stripes", "dots")
MARKS = ("dot", "notch", "stripe", "halves")
PROFILES = ("smoothstep", "cosine", "ease_in", "ease_out", "pause")
LIGHTS = ("constant", "ramp", "flicker")
PLAIN_BACKGROUND = (40, 40, 40)              # RGB of plain clips: background, object and mark; object and mark
PLAIN_OBJECT = (240, 220, 60)                # share their red level, so red measures the object's coverage
PLAIN_MARK = (240, 40, 200)                  # and green tells the mark

_SIZES, _SIZE_WEIGHTS = (96, 112, 128), (0.2, 0.6, 0.2)
_FPS = (20, 24, 25, 30)
_SUPERSAMPLE = 3
_SHAKE = 2                                   # most camera shake, pixels
_EDGE = 1                                    # pixels kept between the object (shake included) and the border
_SQUARE_HALF = 0.7                           # shape geometry in units of the object radius
_CROSS_LENGTH = 0.92
_NOTCHLESS = ("triangle", "star")            # a notch would cut off a point
_MOVES = {"move_left": (0, -1), "move_right": (0, 1), "move_up": (1, -1), "move_down": (1, 1)}


def _colour(rng):
    """A random RGB colour (3,) in [0, 1]: a grey a quarter of the time, else any hue, saturation and value."""
    if rng.random() < 0.25:
        return numpy.full(3, rng.random())
    return numpy.array(colorsys.hsv_to_rgb(rng.random(), rng.uniform(0.25, 1.0), rng.uniform(0.12, 1.0)))


def _pick(rng, propose, constraints, tries=48):
    """The first of ``tries`` colours from ``propose(rng)`` far enough from every reference; (3,) in [0, 1].

    ``constraints``: ``[(references (N, 3), distance), …]``; a colour passes when
    its RGB distance to the references (their 5th percentile when N > 20, else
    the nearest) is at least ``distance``. Without a passing colour, the one
    with the largest worst margin.
    """
    candidates = numpy.array([propose(rng) for _ in range(tries)])
    margin = numpy.full(tries, numpy.inf)
    for references, distance in constraints:
        d = numpy.linalg.norm(candidates[:, None, :] - numpy.asarray(references)[None], axis=-1)
        near = numpy.quantile(d, 0.05, axis=1) if d.shape[1] > 20 else d.min(axis=1)
        margin = numpy.minimum(margin, near - distance)
    passing = numpy.flatnonzero(margin >= 0)
    return candidates[passing[0] if len(passing) else int(numpy.argmax(margin))]


def _partner(rng, colour):
    """A colour (3,) 0.12-0.35 away from ``colour``, for two-colour backgrounds that leave room for contrast."""
    step = rng.standard_normal(3)
    return numpy.clip(colour + step / numpy.linalg.norm(step) * rng.uniform(0.12, 0.35), 0, 1)


def _value_noise(rng, xx, yy, cell):
    """Smooth value noise (H, W) at pixel centres ``xx``, ``yy`` (H, W each): random values on a square
    lattice of ``cell`` pixels turned by a random angle, blended with smoothstep weights."""
    size = xx.shape[0]
    count = int(1.5 * size / cell) + 4
    grid = rng.random((count, count))
    angle = rng.uniform(0, 2 * math.pi)
    c, s = math.cos(angle) / cell, math.sin(angle) / cell
    u = (xx - size / 2) * c + (yy - size / 2) * s + count / 2
    v = (yy - size / 2) * c - (xx - size / 2) * s + count / 2
    iu, iv = u.astype(int), v.astype(int)
    fu, fv = u - iu, v - iv
    fu, fv = fu * fu * (3 - 2 * fu), fv * fv * (3 - 2 * fv)
    top = grid[iv, iu] * (1 - fu) + grid[iv, iu + 1] * fu
    bottom = grid[iv + 1, iu] * (1 - fu) + grid[iv + 1, iu + 1] * fu
    return top * (1 - fv) + bottom * fv


def _segment_distance(xx, yy, x0, y0, x1, y1):
    """Distance (H, W) from pixel centres to the segment (x0, y0)-(x1, y1)."""
    dx, dy = x1 - x0, y1 - y0
    t = numpy.clip(((xx - x0) * dx + (yy - y0) * dy) / max(dx * dx + dy * dy, 1e-9), 0, 1)
    return numpy.hypot(xx - x0 - t * dx, yy - y0 - t * dy)


def _clutter(rng, image, xx, yy):
    """Paint small static lines and thin rectangles (aspect 3-5, never one of the shapes) onto ``image``."""
    size = image.shape[0]
    for _ in range(int(rng.uniform(0.0015, 0.003) * size * size)):
        colour = _colour(rng).astype(numpy.float32)
        x, y = rng.uniform(0, size, 2)
        if rng.random() < 0.5:
            length, angle, half = rng.uniform(0.04, 0.1) * size, rng.uniform(0, math.pi), rng.uniform(0.4, 0.9)
            ex, ey = 0.5 * length * math.cos(angle), 0.5 * length * math.sin(angle)
            cover = numpy.clip(half + 0.5 - _segment_distance(xx, yy, x - ex, y - ey, x + ex, y + ey), 0, 1)
        else:
            long = rng.uniform(0.05, 0.1) * size
            a, b = (long / 2, long / rng.uniform(3, 5) / 2)[::1 if rng.random() < 0.5 else -1]
            depth = numpy.maximum(numpy.abs(xx - x) - a, numpy.abs(yy - y) - b)
            cover = numpy.clip(0.5 - depth, 0, 1)
            if rng.random() < 0.4:                       # an empty frame of a rectangle, one pixel wide
                cover = cover * numpy.clip(depth + 1.5, 0, 1)
        image += cover[..., None] * (colour - image)


def _background(rng, family, size):
    """A (size, size, 3) float32 background of ``family`` (one of :data:`BACKGROUNDS`) and its two colours."""
    yy, xx = (numpy.mgrid[0:size, 0:size].astype(numpy.float32) + 0.5)
    first = _colour(rng)
    second = _partner(rng, first)
    if family in ("flat", "clutter"):
        mix = numpy.zeros((size, size), numpy.float32)
        if family == "clutter" and rng.random() < 0.5:
            angle = rng.uniform(0, 2 * math.pi)
            mix = numpy.clip(((xx - size / 2) * math.cos(angle) + (yy - size / 2) * math.sin(angle)) / size + 0.5,
                             0, 1)
    elif family == "linear_gradient":
        angle = rng.uniform(0, 2 * math.pi)
        mix = numpy.clip(((xx - size / 2) * math.cos(angle) + (yy - size / 2) * math.sin(angle)) / size + 0.5, 0, 1)
    elif family == "radial_gradient":
        cx, cy = rng.uniform(0, size, 2)
        mix = numpy.clip(numpy.hypot(xx - cx, yy - cy) / (rng.uniform(0.6, 1.1) * size), 0, 1)
    elif family == "stripes":
        period, angle = rng.uniform(5, 16), rng.uniform(0, math.pi)
        wave = numpy.sin(2 * math.pi * (xx * math.cos(angle) + yy * math.sin(angle)) / period + rng.uniform(0, 7))
        mix = numpy.clip(0.5 + wave * period / (2 * math.pi), 0, 1)
    elif family == "checkerboard":
        cell = int(rng.integers(5, 15))
        ox, oy = rng.integers(0, cell, 2)
        mix = (((xx + ox) // cell + (yy + oy) // cell) % 2).astype(numpy.float32)
    elif family == "noise":
        cell, octaves = float(rng.choice((8, 16, 28, 40))), int(rng.integers(2, 4))
        mix = sum(0.5 ** k * _value_noise(rng, xx, yy, max(cell / 2 ** k, 3)) for k in range(octaves))
        mix = (mix - mix.min()) / max(float(numpy.ptp(mix)), 1e-6)
    else:
        raise ValueError(f"unknown background {family!r}; choose one of {BACKGROUNDS}")
    image = (first + (second - first) * mix[..., None]).astype(numpy.float32)
    if family == "clutter":
        _clutter(rng, image, xx, yy)
    return image, first, second


def _shape_distance(shape, u, v, params):
    """Signed distance (negative inside, in units of the radius) of local points (u, v) to ``shape``.

    The mark direction is +u; every shape fits in the unit circle and is
    mirror-symmetric about the u axis. Inside the shape the value is (close to)
    minus the depth, so ``-width < d < 0`` is an outline band.
    """
    if shape == "circle":
        return numpy.hypot(u, v) - 1.0
    if shape == "ring":
        inner = params["ring_inner"]
        return numpy.abs(numpy.hypot(u, v) - (1 + inner) / 2) - (1 - inner) / 2
    if shape == "square":
        return numpy.maximum(numpy.abs(u), numpy.abs(v)) - _SQUARE_HALF
    if shape == "triangle":                              # vertex on +u; edges at inradius 0.5
        return numpy.maximum(-u, 0.5 * u + 0.8660254 * numpy.abs(v)) - 0.5
    if shape == "cross":
        length, width = _CROSS_LENGTH, params["cross_width"]
        au, av = numpy.abs(u), numpy.abs(v)
        return numpy.minimum(numpy.maximum(au - length, av - width), numpy.maximum(au - width, av - length))
    if shape == "star":                                  # a point on +u; fold into the sector [0, 36 degrees]
        sector = 2 * math.pi / 5
        alpha = numpy.abs((numpy.arctan2(v, u) + sector / 2) % sector - sector / 2)
        r = numpy.hypot(u, v)
        pu, pv = r * numpy.cos(alpha), r * numpy.sin(alpha)
        iu, iv = params["star_inner"] * math.cos(sector / 2), params["star_inner"] * math.sin(sector / 2)
        du, dv = iu - 1.0, iv
        t = numpy.clip(((pu - 1.0) * du + pv * dv) / (du * du + dv * dv), 0, 1)
        distance = numpy.hypot(pu - 1.0 - t * du, pv - t * dv)
        inside = du * pv - dv * (pu - 1.0) > 0
        return numpy.where(inside, -distance, distance)
    raise ValueError(f"unknown shape {shape!r}; choose one of {SHAPES}")


def _dot_place(shape, params):
    """(centre on the u axis, radius) of a dot mark inside ``shape``, in units of the object radius."""
    if shape == "ring":
        inner = params["ring_inner"]
        return (1 + inner) / 2, 0.75 * (1 - inner) / 2
    return {"circle": (0.55, 0.22), "square": (0.4, 0.2), "triangle": (0.33, 0.15), "star": (0.4, 0.13),
            "cross": (0.62, 0.7 * params.get("cross_width", 0.0))}[shape]


class _Look:
    """How the object is painted: fill style, colours, texture and orientation mark (local coordinates)."""

    def __init__(self, rng, shape, params, background, plain, fill=None, mark=None):
        self.shape, self.params = shape, params
        refs = background[::4, ::4].reshape(-1, 3)
        self.fill = FILLS[int(rng.integers(len(FILLS)))] if fill is None else fill
        marks = [m for m in MARKS if not (m == "notch" and shape in _NOTCHLESS)]
        self.mark = marks[int(rng.integers(len(marks)))] if mark is None else mark
        if self.fill not in FILLS or self.mark not in MARKS:
            raise ValueError(f"unknown fill {self.fill!r} or mark {self.mark!r}; choose from {FILLS} and {MARKS}")
        if self.mark == "notch" and shape in _NOTCHLESS:
            raise ValueError(f"a {shape} has no notch mark (it would cut off a point); choose from {marks}")
        self.first = _pick(rng, _colour, [(refs, 0.35)])
        if self.fill == "outline":
            def propose(r):
                darker = self.first * r.uniform(0.25, 0.55)
                return darker if r.random() < 0.5 else self.first + (1 - self.first) * r.uniform(0.45, 0.75)
            self.width = rng.uniform(0.12, 0.2)
        else:
            propose = _colour
        if self.fill == "solid":
            self.second = self.first
        else:                                            # the two tones, and their blend, contrast with the background
            self.second = _pick(rng, propose, [(refs, 0.3), (self.first[None], 0.25), (2 * refs - self.first, 0.5)])
        angle = rng.uniform(0, 2 * math.pi)
        self.direction = (math.cos(angle), math.sin(angle))
        self.period, self.phase = rng.uniform(0.35, 0.55), rng.uniform(0, 2 * math.pi)
        tones = numpy.stack([self.first, self.second, (self.first + self.second) / 2])
        if self.mark == "halves":
            self.mark_colour = _pick(rng, _colour, [(tones, 0.3), (refs, 0.3)])
        elif self.mark != "notch":
            self.mark_colour = _pick(rng, _colour, [(tones, 0.4)])
        self.dot = _dot_place(shape, params)
        self.bar = (rng.uniform(0.08, 0.13), rng.uniform(0.7, 0.85))
        inner = params.get("ring_inner", 0.0)
        start = {"circle": rng.uniform(0.45, 0.6), "square": rng.uniform(0.35, 0.5),
                 "ring": inner + rng.uniform(0.1, 0.35) * (1 - inner), "cross": rng.uniform(0.5, 0.65)}
        self.notch = (start.get(shape, 1.0), math.tan(math.radians(rng.uniform(25, 40))))
        if plain:
            self.fill, self.mark = "solid", "dot"
            self.first = self.second = numpy.asarray(PLAIN_OBJECT) / 255.0
            self.mark_colour = numpy.asarray(PLAIN_MARK) / 255.0

    def paint(self, u, v):
        """Colour (H, W, 3) float32 and coverage (H, W) bool of local sample points (u, v), each (H, W)."""
        d = _shape_distance(self.shape, u, v, self.params)
        first, second = self.first.astype(numpy.float32), self.second.astype(numpy.float32)
        along = u * self.direction[0] + v * self.direction[1]
        if self.fill == "solid":
            colour = numpy.broadcast_to(first, u.shape + (3,))
        elif self.fill == "outline":
            colour = numpy.where((d > -self.width)[..., None], second, first)
        elif self.fill == "gradient":
            colour = first + (second - first) * numpy.clip(0.5 + 0.5 * along, 0, 1)[..., None]
        elif self.fill == "stripes":
            colour = numpy.where((numpy.sin(2 * math.pi * along / self.period + self.phase) > 0)[..., None],
                                 second, first)
        else:                                            # dots on a grid turning with the object
            fu, fv = u / self.period, v / self.period
            spot = (fu - numpy.round(fu)) ** 2 + (fv - numpy.round(fv)) ** 2 < 0.3 ** 2
            colour = numpy.where(spot[..., None], second, first)
        cover = d < 0
        if self.mark == "notch":
            start, slope = self.notch
            cover = cover & ~((u > start) & (numpy.abs(v) < (u - start) * slope))
        else:
            if self.mark == "dot":
                spot = (u - self.dot[0]) ** 2 + v ** 2 < self.dot[1] ** 2
            elif self.mark == "stripe":
                spot = (numpy.abs(v) < self.bar[0]) & (u > 0) & (u < self.bar[1])
            else:
                spot = u > 0
            colour = numpy.where(spot[..., None], self.mark_colour.astype(numpy.float32), colour)
        return colour, cover

    def describe(self):
        """The look's choices for the metadata: fill, mark and 0-255 colours."""
        out = {"fill": self.fill, "mark": self.mark, "object_color": _rgb(self.first)}
        if self.fill != "solid":
            out["second_color"] = _rgb(self.second)
        if self.mark != "notch":
            out["mark_color"] = _rgb(self.mark_colour)
        return out


def _rgb(colour):
    return [int(round(c * 255)) for c in colour]


def _progress(rng, name, num_frames):
    """(T,) progress of a motion from 0 (first frame) to 1 (last), never decreasing, by profile ``name``.

    Every profile holds still for up to 12 % of the clip at either end; "pause"
    runs at constant speed, stops for 15-35 % of the clip partway, then goes on.
    """
    start, stop = rng.uniform(0, 0.12), rng.uniform(0.88, 1.0)
    share, rest = rng.uniform(0.3, 0.7), rng.uniform(0.15, 0.35)
    u = numpy.clip((numpy.arange(num_frames) / (num_frames - 1) - start) / (stop - start), 0, 1)
    if name == "smoothstep":
        return u * u * (3 - 2 * u)
    if name == "cosine":
        return 0.5 - 0.5 * numpy.cos(math.pi * u)
    if name == "ease_in":
        return u * u
    if name == "ease_out":
        return 1 - (1 - u) ** 2
    if name == "pause":
        stop_at = share * (1 - rest)
        return numpy.where(u < stop_at, u / (1 - rest),
                           numpy.where(u < stop_at + rest, share, share + (u - stop_at - rest) / (1 - rest)))
    raise ValueError(f"unknown profile {name!r}; choose one of {PROFILES}")


def _geometry(rng, motion, shape, profile=None):
    """Frame size, length, fps, shape parameters and per-frame track (scene coordinates, pixels) of a clip."""
    size = int(rng.choice(_SIZES, p=_SIZE_WEIGHTS))
    num_frames, fps = int(rng.integers(24, 65)), int(rng.choice(_FPS))
    params = {"ring_inner": rng.uniform(0.5, 0.62)} if shape == "ring" else \
        {"star_inner": rng.uniform(0.4, 0.5)} if shape == "star" else \
        {"cross_width": rng.uniform(0.24, 0.32)} if shape == "cross" else {}
    chosen = PROFILES[int(rng.integers(len(PROFILES)))]
    profile = chosen if profile is None else profile
    progress = _progress(rng, profile, num_frames)
    if motion in ("grow", "shrink"):
        small = rng.uniform(0.15, 0.2)
        ratio = min(rng.uniform(1.75, 2.3), 0.42 / small)
        diameter = size * small * (1 + (ratio - 1) * (progress if motion == "grow" else 1 - progress))
    else:
        diameter = numpy.full(num_frames, rng.uniform(0.2, 0.35) * size)
    low = diameter.max() / 2 + _SHAKE + _EDGE
    high = size - low
    centre = numpy.tile(rng.uniform(low, high, 2), (num_frames, 1))
    angle = numpy.full(num_frames, rng.uniform(0, 2 * math.pi))
    visible = numpy.ones(num_frames, bool)
    if motion in _MOVES:
        axis, sign = _MOVES[motion]
        distance = rng.uniform(0.32, min(0.5, (high - low) / size)) * size
        begin = rng.uniform(low, high - distance)
        if sign < 0:
            begin += distance
        centre[:, axis] = begin + sign * distance * progress
    elif motion in ("rotate_clockwise", "rotate_counterclockwise"):
        turn = math.radians(rng.uniform(100, 200)) * (1 if motion == "rotate_clockwise" else -1)
        angle = angle + turn * progress
    elif motion in ("appear", "disappear"):
        switch = int(rng.integers(math.ceil(0.2 * num_frames), math.floor(0.8 * num_frames) + 1))
        visible = (numpy.arange(num_frames) >= switch) == (motion == "appear")
    elif motion == "blink":
        off = int(rng.integers(2, 4))
        phases = 2 * off + 1
        lengths = 3 + rng.multinomial(num_frames - 3 * phases, rng.dirichlet(numpy.full(phases, 2.0)))
        visible = numpy.repeat(numpy.arange(phases) % 2 == 0, lengths)
    elif motion not in MOTIONS:
        raise ValueError(f"unknown motion {motion!r}; choose one of {MOTIONS}")
    moving = motion in _MOVES or motion.startswith("rotate") or motion in ("grow", "shrink")
    track = {"x": centre[:, 0], "y": centre[:, 1], "angle": angle, "diameter": diameter, "visible": visible}
    return {"size": size, "num_frames": num_frames, "fps": fps, "params": params,
            "profile": profile if moving else None, "track": track}


def _camera(rng, num_frames, fps, plain):
    """Light gain (T,), blur sigma, noise sigma, kind and seed, shake (T, 2) ints, crf, and their description."""
    crf = int(rng.integers(18, 33))
    light = LIGHTS[int(rng.integers(len(LIGHTS)))]
    t = numpy.arange(num_frames)
    if light == "ramp":
        begin = rng.uniform(0.75, 1.05)
        end = float(numpy.clip(begin + rng.choice((-1, 1)) * rng.uniform(0.15, 0.3), 0.7, 1.1))
        gain = begin + (end - begin) * t / (num_frames - 1)
    elif light == "flicker":
        gain = 0.95 + rng.uniform(0.03, 0.08) * numpy.sin(2 * math.pi * rng.uniform(1, 6) * t / fps
                                                         + rng.uniform(0, 2 * math.pi))
        gain = gain + rng.normal(0, 0.015, num_frames)
    else:
        gain = numpy.ones(num_frames)
    blur = rng.uniform(0.4, 1.1) if rng.random() < 0.4 else 0.0
    noise = rng.uniform(0.005, 0.035) if rng.random() < 0.75 else 0.0
    noise_kind = "luma" if rng.random() < 0.5 else "colour"
    noise_seed = int(rng.integers(0, 2 ** 63))
    amplitude = int(rng.integers(0, _SHAKE + 1))
    if rng.random() < 0.5:
        shake = rng.integers(-amplitude, amplitude + 1, (num_frames, 2))
    else:
        shake = numpy.clip(numpy.cumsum(rng.integers(-1, 2, (num_frames, 2)), axis=0), -amplitude, amplitude)
    if plain:
        light, gain, blur, noise, shake = "constant", numpy.ones(num_frames), 0.0, 0.0, numpy.zeros_like(shake)
    described = {"crf": crf, "light": light, "blur_sigma": round(float(blur), 3),
                 "noise_sigma": round(float(noise), 4), "noise_kind": noise_kind if noise else None,
                 "shake": int(numpy.abs(shake).max())}
    return {"gain": gain.astype(numpy.float32), "blur": blur, "noise": noise, "noise_kind": noise_kind,
            "noise_seed": noise_seed, "shake": shake.astype(int), "described": described}


def _plan(motion, shape, rng, plain=False, style=None):
    """Everything about a clip but its frames: geometry, background, look, camera and the info dict."""
    motion = MOTIONS[motion] if isinstance(motion, (int, numpy.integer)) else motion
    shape = SHAPES[shape] if isinstance(shape, (int, numpy.integer)) else shape
    if motion not in MOTIONS or shape not in SHAPES:
        raise ValueError(f"unknown motion {motion!r} or shape {shape!r}; choose from {MOTIONS} and {SHAPES}")
    style = dict(style or {})
    unknown = sorted(set(style) - {"background", "fill", "mark", "profile"})
    if unknown:
        raise ValueError(f"render_clip: unknown style keys {unknown} (known: background, fill, mark, profile)")
    geometry_rng, look_rng, camera_rng = (numpy.random.default_rng(s) for s in rng.integers(0, 2 ** 63, 3))
    geometry = _geometry(geometry_rng, motion, shape, style.get("profile"))
    size, padded = geometry["size"], geometry["size"] + 2 * _SHAKE
    chosen = BACKGROUNDS[int(look_rng.integers(len(BACKGROUNDS)))]
    family = "flat" if plain else style.get("background", chosen)
    background, first, second = _background(look_rng, family, padded)
    if plain:
        background[:] = numpy.asarray(PLAIN_BACKGROUND, numpy.float32) / 255.0
        first = second = background[0, 0]
    look = _Look(look_rng, shape, geometry["params"], background, plain, style.get("fill"), style.get("mark"))
    camera = _camera(camera_rng, geometry["num_frames"], geometry["fps"], plain)
    info = {"motion": motion, "shape": shape, "num_frames": geometry["num_frames"], "fps": geometry["fps"],
            "size": size, "plain": bool(plain), "profile": geometry["profile"], "background": family,
            "background_colors": [_rgb(first), _rgb(second)], **look.describe(), **camera["described"],
            "shape_params": {k: round(float(v), 3) for k, v in geometry["params"].items()},
            "track": {**geometry["track"], "shake": camera["shake"]}}
    return {"info": info, "background": background, "look": look, "camera": camera}


def _blur(frames, sigma):
    """Gaussian blur of ``frames`` (T, H, W, 3) over H and W (separable, edges repeated)."""
    radius = math.ceil(2.5 * sigma)
    kernel = numpy.exp(-0.5 * (numpy.arange(-radius, radius + 1) / sigma) ** 2).astype(numpy.float32)
    kernel /= kernel.sum()
    for axis in (1, 2):
        pad = [(0, 0)] * 4
        pad[axis] = (radius, radius)
        padded = numpy.pad(frames, pad, mode="edge")
        length = frames.shape[axis]
        frames = sum(w * padded.take(numpy.arange(i, i + length), axis=axis) for i, w in enumerate(kernel))
    return frames


def _draw(plan):
    """The frames (T, H, W, 3) uint8 of a planned clip."""
    info, background, look, camera = plan["info"], plan["background"], plan["look"], plan["camera"]
    track, size, ss = info["track"], info["size"], _SUPERSAMPLE
    frames = numpy.empty((info["num_frames"], size, size, 3), numpy.float32)
    for t in range(info["num_frames"]):
        sx, sy = (int(s) for s in camera["shake"][t])
        frames[t] = background[_SHAKE - sy:_SHAKE - sy + size, _SHAKE - sx:_SHAKE - sx + size]
        if not track["visible"][t]:
            continue
        cx, cy, radius = track["x"][t] + sx, track["y"][t] + sy, track["diameter"][t] / 2
        x0, y0 = max(int(cx - radius) - 1, 0), max(int(cy - radius) - 1, 0)
        x1, y1 = min(math.ceil(cx + radius) + 1, size), min(math.ceil(cy + radius) + 1, size)
        dx = ((numpy.arange((x1 - x0) * ss, dtype=numpy.float32) + 0.5) / ss + x0 - cx)[None, :]
        dy = ((numpy.arange((y1 - y0) * ss, dtype=numpy.float32) + 0.5) / ss + y0 - cy)[:, None]
        c, s = math.cos(track["angle"][t]) / radius, math.sin(track["angle"][t]) / radius
        colour, cover = look.paint(dx * c + dy * s, dy * c - dx * s)
        h, w = y1 - y0, x1 - x0
        alpha = cover.reshape(h, ss, w, ss).mean(axis=(1, 3), dtype=numpy.float32)
        paint = (colour * cover[..., None]).reshape(h, ss, w, ss, 3).mean(axis=(1, 3))
        region = frames[t, y0:y1, x0:x1]
        region *= 1 - alpha[..., None]
        region += paint
    frames *= camera["gain"][:, None, None, None]
    if camera["blur"]:
        frames = _blur(frames, camera["blur"])
    if camera["noise"]:
        shape = frames.shape[:3] + ((1,) if camera["noise_kind"] == "luma" else (3,))
        noise = numpy.random.default_rng(camera["noise_seed"]).standard_normal(shape, numpy.float32)
        frames += numpy.float32(camera["noise"]) * noise
    return (numpy.clip(frames, 0, 1) * 255 + 0.5).astype(numpy.uint8)


def render_clip(motion, shape, rng, plain=False, style=None):
    """Draw one clip; returns ``(frames, fps, info)``.

    Args:
        motion: a name in :data:`MOTIONS` or its index.
        shape: a name in :data:`SHAPES` or its index.
        rng: a ``numpy.random.Generator``; the clip depends only on its state.
        plain: a flat :data:`PLAIN_BACKGROUND`, a solid :data:`PLAIN_OBJECT`
            object with a :data:`PLAIN_MARK` dot, no light change, blur, noise
            or shake; size, length, motion and placement are those of the
            same generator state without ``plain``.
        style: optional choices instead of random ones: ``{"background": one of
            BACKGROUNDS, "fill": one of FILLS, "mark": one of MARKS, "profile":
            one of PROFILES}`` (no "notch" on triangles and stars).

    Returns:
        frames: uint8 (T, H, W, 3) RGB with H == W.
        fps: int frames per second.
        info: a JSON-ready dict of the choices (motion, shape, num_frames, fps,
            size, profile, background, fill, mark, colours 0-255, crf, light,
            blur_sigma, noise_sigma, shake, …) and ``info["track"]``, numpy
            arrays of the ground truth per frame: ``x``, ``y`` (T,) the object
            centre in pixels before camera shake, ``angle`` (T,) the mark's
            direction in radians (y down), ``diameter`` (T,) of the circle the
            shape fits in, ``visible`` (T,) bool, ``shake`` (T, 2) int pixel
            offsets (x, y) of the whole picture.
    """
    plan = _plan(motion, shape, rng, plain, style)
    return _draw(plan), plan["info"]["fps"], plan["info"]


def assign_labels(num, seed=0):
    """The (motion index, shape index) of each of ``num`` videos: a list of ``num`` int pairs.

    Motions are balanced (``num // 12`` or one more each), shapes too, also
    within each motion as far as counts allow; the order is shuffled by ``seed``.
    """
    pairs = [(j % len(MOTIONS), (j // len(MOTIONS) + j % len(MOTIONS)) % len(SHAPES)) for j in range(num)]
    order = numpy.random.default_rng(int(seed)).permutation(num)
    return [pairs[i] for i in order]


def _video_name(index):
    return f"videos/{index:06d}.mp4"


def _make_one(job):
    """Plan video ``index`` and write it unless its file exists; returns (index, metadata)."""
    root, index, motion, shape, seed = job
    plan = _plan(motion, shape, numpy.random.default_rng([seed, index]))
    path = os.path.join(root, _video_name(index))
    if not os.path.exists(path):
        write_video(path, _draw(plan), plan["info"]["fps"], crf=plan["info"]["crf"])
    summary = {k: v for k, v in plan["info"].items() if k not in ("track", "plain")}
    return index, {"path": _video_name(index), "split": "test", **summary}


def make_heldout_set(root, num=240, seed=0, workers=None, progress=None):
    """Write ``num`` held-out videos and their list files under ``root``; returns a dict of counts and timings.

    Labels come from :func:`assign_labels`; video i is drawn from
    ``default_rng([seed, i])``, so it depends only on the seed and its index,
    never on ``workers`` (processes, default all cores). Videos whose file
    exists are kept (an interrupted run resumes). Files, as in
    :func:`video.data.synthetic.make_synthetic_set` but all in the test split:

    - ``videos/000000.mp4`` …: H.264 videos;
    - ``motion_classes.txt``: the 12 motion names (line i = class i);
    - ``motion_test.txt``: ``videos/000000.mp4 3``;
    - ``multilabel_classes.txt``: the motions, then the 6 shapes (classes 12-17);
    - ``multilabel_test.txt``: ``videos/000000.mp4 3,14``;
    - ``metadata.jsonl``: one JSON object per video (path, split, motion,
      shape, num_frames, fps, size and the style choices of :func:`render_clip`).

    ``progress``: None or False shows nothing; True a progress bar on stderr;
    a callable is called as ``progress(done, total)`` after each video.
    """
    root = os.fspath(root)
    os.makedirs(os.path.join(root, "videos"), exist_ok=True)
    jobs = [(root, i, MOTIONS[m], SHAPES[s], int(seed)) for i, (m, s) in enumerate(assign_labels(num, seed))]
    start = time.perf_counter()
    records, workers = map_indexed(_make_one, jobs, workers, progress, desc="held-out videos")
    seconds = time.perf_counter() - start
    motion_ids = [MOTIONS.index(r["motion"]) for r in records]
    shape_ids = [len(MOTIONS) + SHAPES.index(r["shape"]) for r in records]
    write_lines(os.path.join(root, "motion_classes.txt"), MOTIONS)
    write_lines(os.path.join(root, "multilabel_classes.txt"), MOTIONS + SHAPES)
    write_lines(os.path.join(root, "motion_test.txt"), [f"{_video_name(i)} {m}" for i, m in enumerate(motion_ids)])
    write_lines(os.path.join(root, "multilabel_test.txt"),
                [f"{_video_name(i)} {m},{s}" for i, (m, s) in enumerate(zip(motion_ids, shape_ids, strict=True))])
    write_lines(os.path.join(root, "metadata.jsonl"), [json.dumps(r) for r in records])
    return {"videos": num, "seconds": round(seconds, 2), "workers": workers, "splits": {"test": num},
            "motions": {name: motion_ids.count(i) for i, name in enumerate(MOTIONS)},
            "shapes": {name: shape_ids.count(len(MOTIONS) + i) for i, name in enumerate(SHAPES)}}


def ensure_heldout_set(num=240, seed=0, root=None, workers=None):
    """The folder of the held-out set ``(num, seed)``, generated there first unless it is complete.

    ``root`` defaults to ``$OAR_HOME/heldout_videos/n<num>-s<seed>-v<VERSION>``.
    A ``complete.json`` written last marks a finished set; an interrupted
    generation resumes (see :func:`make_heldout_set`). Returns the folder path.
    """
    settings = {"num": int(num), "seed": int(seed), "version": VERSION}
    if root is None:
        root = os.path.join(oar_home(), "heldout_videos", f"n{num}-s{seed}-v{VERSION}")
    return ensure_made(root, settings, f"held-out video set ({num} videos)",
                       lambda folder: make_heldout_set(folder, num, seed, workers, progress=True))


def main(argv=None):
    """``python -m video.data.heldout --out DIR [--num N] [--seed S] [--workers W]``: write a set, print its summary."""
    import argparse
    parser = argparse.ArgumentParser(description="Write the held-out test video set (see video.data.heldout).")
    parser.add_argument("--out", required=True, help="output folder")
    parser.add_argument("--num", type=int, default=240, help="number of videos (default 240)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--workers", type=int, default=None, help="processes (default: all cores)")
    args = parser.parse_args(argv)
    result = make_heldout_set(args.out, args.num, args.seed, args.workers, progress=True)
    print(json.dumps(result))
    return result


if __name__ == "__main__":
    main()
