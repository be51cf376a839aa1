"""A generator of real encoded videos whose labels need temporal reasoning.

Each video shows one object on a background filmed by a shaking camera. Its
**motion** (the single label) is one of :data:`MOTIONS`; its **shape** one of
:data:`SHAPES`, each carrying an orientation mark so that rotation is visible.
The look varies from video to video (:class:`Appearance`) so that a model
learns the motion, not one way of drawing it: the fill (:data:`FILLS`: solid,
outlined, a gradient or stripes turning with the object), the mark
(:data:`MARKS`: a dot, a notch cut into the rim, a stripe from the centre, or
the mark-side half in another colour; light or dark), the colours (any hue,
grey, dark or light, always set off from the background), the background
(:data:`BACKGROUNDS`: colour blobs, flat, gradient, stripes, checkerboard,
clutter of lines), brightness and colour drifting over the clip, blur, sensor
noise and the compression strength; the object moves at a constant speed or
eases in and/or out. Directions are as seen on the displayed frame
(x to the right, y down): ``move_up`` goes toward the top edge and
``rotate_clockwise`` turns the way a clock's hands do on screen (the angle
increases).

Every draw comes from one ``numpy.random.Generator`` in a fixed order that
does not depend on the motion, so a video's appearance (shape, colours, fill,
mark, background, light, blur, camera shake, noise, size, position) says
nothing about its label.
Motions 1, 3, 5, 7 and 9 are the time reverses of 0, 2, 4, 6 and 8: for the
same generator state the second of a pair renders exactly the frames of the
first in reverse order, so a model that ignores frame order cannot tell the two
apart. Within the default ranges (:class:`SyntheticSpec`) a translation covers
30-50 % of the frame, a rotation 90-180°, a size change 1.6-2.2x;
appear/disappear switch within the middle 60 % of the clip; blink has 2 or 3
off phases between on phases.

:func:`plan_video` draws a :class:`VideoPlan` (per-frame centre, angle,
size, visibility and camera offset); :func:`render_video` draws its frames;
:func:`make_synthetic_set` writes a whole set with list files (see there);
:func:`ensure_synthetic_set` makes one once in ``$OAR_HOME``.

Training on this set: do not flip clips horizontally, since a mirror image
turns move_left into move_right and clockwise into counterclockwise.
"""
import colorsys
import dataclasses
import hashlib
import json
import math
import os
import time

import numpy

from framework.config import ConfigError
from framework.fetch import oar_home
from vision.data.transforms import require_cv2

from .encode import write_video
from .pool import ensure_made, map_indexed, write_lines

__all__ = ["MOTIONS", "SHAPES", "REVERSE_PAIRS", "FILLS", "MARKS", "BACKGROUNDS", "SyntheticSpec", "Appearance",
           "VideoPlan", "plan_video", "render_video",
           "make_synthetic_set", "ensure_synthetic_set", "spec_from_config", "split_of", "MARK_COLOR",
           "PLAIN_BACKGROUND"]

MOTIONS = ("move_left", "move_right", "move_up", "move_down", "rotate_clockwise", "rotate_counterclockwise",
           "grow", "shrink", "appear", "disappear", "blink", "still")
SHAPES = ("circle", "square", "triangle", "star", "cross", "ring")
REVERSE_PAIRS = ((0, 1), (2, 3), (4, 5), (6, 7), (8, 9))
FILLS = ("solid", "outline", "gradient", "stripes")
MARKS = ("dot", "notch", "stripe", "halves")
BACKGROUNDS = ("blobs", "flat", "gradient", "stripes", "checker", "clutter")
MARK_COLOR = (20, 20, 20)          # the mark of plain_background videos
PLAIN_BACKGROUND = (110, 110, 110)
_SHIFT = 4  # OpenCV drawing with 4 fractional bits: positions to 1/16 pixel


@dataclasses.dataclass(frozen=True)
class SyntheticSpec:
    """The ranges (low, high, both included) from which every video's properties are drawn.

    Attributes:
        num_frames: frames per video.
        fps: frame rate (integer frames per second).
        width, height: frame size in pixels (rounded down to even).
        object_size: the object's diameter as a fraction of the shorter side
            (for grow/shrink the geometric mean of the start and end sizes).
        travel: translation distance as a fraction of the frame's width (left/right)
            or height (up/down); at least 0.25.
        rotation: rotation angle in degrees; at least 90.
        scale_ratio: size ratio of grow/shrink; at least 1.6.
        switch: when appear/disappear switch, as a fraction of the clip; within
            [0.2, 0.8] and symmetric about 0.5 (so both directions obey it).
        blink_off_phases: number of off phases of blink; at least 2.
        jitter: amplitude of the camera shake, a fraction of the shorter side.
        noise: the typical standard deviation of the per-pixel noise (0-255 scale);
            each video draws its own from 0.25 to 1.5 times it.
        blur: range of the Gaussian blur's sigma in pixels for the blurred videos (half of them).
        crf: range of the H.264 quality (lower is better).
        light_drift: the brightness ramps by up to this fraction over a clip, with a slow wave of up
            to 0.3 times it on top; colours drift by up to a tenth of the 0-255 scale times it.
        plain_background: a flat grey background without texture, noise,
            shake, blur or light change, a solid object and a dark dot as mark
            (for measuring the object in tests).
    """

    num_frames: tuple = (28, 56)
    fps: tuple = (15, 30)
    width: tuple = (112, 112)
    height: tuple = (112, 112)
    object_size: tuple = (0.2, 0.34)
    travel: tuple = (0.3, 0.5)
    rotation: tuple = (90.0, 180.0)
    scale_ratio: tuple = (1.6, 2.2)
    switch: tuple = (0.2, 0.8)
    blink_off_phases: tuple = (2, 3)
    jitter: float = 0.02
    noise: float = 6.0
    blur: tuple = (0.3, 1.0)
    crf: tuple = (18, 32)
    light_drift: float = 0.25
    plain_background: bool = False

    def __post_init__(self):
        for field in ("num_frames", "fps", "width", "height", "object_size", "travel", "rotation", "scale_ratio",
                      "switch", "blink_off_phases", "blur", "crf"):
            low, high = getattr(self, field)
            if not 0 < low <= high:
                raise ValueError(f"SyntheticSpec: {field} must be (low, high) with 0 < low <= high, "
                                 f"got {(low, high)}")
        checks = [(self.travel[0] >= 0.25, "travel must be at least 0.25 of the frame"),
                  (self.rotation[0] >= 90, "rotation must be at least 90 degrees"),
                  (self.scale_ratio[0] >= 1.6, "scale_ratio must be at least 1.6"),
                  (self.switch[0] >= 0.2 and self.switch[1] <= 0.8 and math.isclose(sum(self.switch), 1.0),
                   "switch must lie in [0.2, 0.8] and be symmetric about 0.5"),
                  (self.blink_off_phases[0] >= 2, "blink_off_phases must be at least 2"),
                  (self.num_frames[0] >= 4 * self.blink_off_phases[1] + 2,
                   "num_frames must allow two frames per blink phase"),
                  (min(self.width[0], self.height[0]) >= 16, "frames must be at least 16 pixels wide and high"),
                  (0 <= self.jitter < 0.1 and self.noise >= 0, "jitter must be in [0, 0.1) and noise >= 0"),
                  (self.crf[1] <= 51, "crf must be at most 51"),
                  (0 <= self.light_drift < 1, "light_drift must be in [0, 1)")]
        for ok, message in checks:
            if not ok:
                raise ValueError(f"SyntheticSpec: {message} (got {self})")
        edge = 4 / min(self.width[0], self.height[0])  # the 2-pixel margins, as a fraction of the frame
        largest = self.object_size[1] * math.sqrt(self.scale_ratio[1])
        room = 1 - self.object_size[1] - 2 * self.jitter - edge
        if largest + 2 * self.jitter + edge > 1 or self.travel[1] > room:
            raise ValueError(f"SyntheticSpec: objects this large ({self.object_size}, scale_ratio "
                             f"{self.scale_ratio}) leave no room for the travel {self.travel} inside the frame")


@dataclasses.dataclass(frozen=True)
class Appearance:
    """How one video is drawn, apart from the geometry (see the module docstring).

    ``fill`` (one of :data:`FILLS`), ``color`` and ``second`` (RGB 0-255: the object's colour and the
    colour of its outline, gradient end or stripes), ``mark`` (one of :data:`MARKS`) and ``mark_color``,
    ``background`` (one of :data:`BACKGROUNDS`) and ``background_colors`` (two RGB colours),
    ``blur`` (sigma in pixels, 0: none), ``noise`` (standard deviation), ``crf`` (H.264 quality).
    """

    fill: str
    color: tuple
    second: tuple
    mark: str
    mark_color: tuple
    background: str
    background_colors: tuple
    blur: float
    noise: float
    crf: int


@dataclasses.dataclass
class VideoPlan:
    """Everything needed to render one video; per-frame arrays have length ``num_frames``.

    ``x``, ``y``: object centre in pixels (before the camera shake); ``angle``:
    orientation in radians (increasing = clockwise on screen); ``size``:
    diameter in pixels; ``visible``: bool; ``shake``: (T, 2) integer camera
    offset (dx, dy) added to everything; ``noise_seeds``: (T,) seeds of the
    per-frame noise; ``gain``: (T,) brightness factor and ``tint``: (T, 3)
    colour offset of each frame; ``look``: the :class:`Appearance`.
    """

    motion: int
    shape: int
    num_frames: int
    fps: int
    width: int
    height: int
    look: Appearance
    background_seed: int
    spec: SyntheticSpec
    x: numpy.ndarray
    y: numpy.ndarray
    angle: numpy.ndarray
    size: numpy.ndarray
    visible: numpy.ndarray
    shake: numpy.ndarray
    noise_seeds: numpy.ndarray
    gain: numpy.ndarray
    tint: numpy.ndarray

    @property
    def color(self):
        """The object's RGB colour."""
        return self.look.color

    def reversed(self, motion):
        """The same plan played backwards, labelled ``motion``."""
        flip = {name: getattr(self, name)[::-1].copy() for name in
                ("x", "y", "angle", "size", "visible", "shake", "noise_seeds", "gain", "tint")}
        return dataclasses.replace(self, motion=motion, **flip)

    def summary(self):
        """A JSON-ready dict: labels, size, rate, look and where the motion starts and ends."""
        look = dataclasses.asdict(self.look)
        return {"motion": MOTIONS[self.motion], "shape": SHAPES[self.shape], "num_frames": self.num_frames,
                "fps": self.fps, "width": self.width, "height": self.height, "color": list(self.color),
                "x": [round(float(self.x[0]), 2), round(float(self.x[-1]), 2)],
                "y": [round(float(self.y[0]), 2), round(float(self.y[-1]), 2)],
                "angle_deg": [round(math.degrees(self.angle[0]), 2), round(math.degrees(self.angle[-1]), 2)],
                "size": [round(float(self.size[0]), 2), round(float(self.size[-1]), 2)],
                "visible_frames": int(self.visible.sum()),
                "look": {k: (round(v, 3) if isinstance(v, float) else v) for k, v in look.items()}}


def _uniform(rng, bounds):
    return float(rng.uniform(bounds[0], bounds[1]))


def _integer(rng, bounds):
    return int(rng.integers(int(bounds[0]), int(bounds[1]) + 1))


def _blink_pattern(num_frames, off_phases):
    """2k + 1 equal phases, on first: (T,) bool."""
    phase = (numpy.arange(num_frames) * (2 * off_phases + 1)) // num_frames
    return phase % 2 == 0


_PROFILES = (lambda t: t, lambda t: t * t * (3 - 2 * t), lambda t: t * t, lambda t: 1 - (1 - t) ** 2)
# constant speed, ease in and out, ease in, ease out: a set closed under time reversal


def _luma(color):
    return 0.299 * color[0] + 0.587 * color[1] + 0.114 * color[2]


def _with_luma(hue, saturation, luma):
    """An RGB colour (0-255) of ``hue`` and ``saturation`` (or paler, when that is too dark for ``luma``) whose
    luma is ``luma`` (0-1): the HSV colour of value 1 scaled down, or mixed with white to be brighter."""
    full = numpy.array(colorsys.hsv_to_rgb(hue % 1.0, saturation, 1.0))
    top = _luma(full)
    color = full * luma / top if luma <= top else full + (luma - top) / (1 - top) * (1 - full)
    return tuple(int(round(255 * c)) for c in numpy.clip(color, 0, 1))


def _level_apart(unit, avoid, gap, low=0.08, high=0.88):
    """The luma at ``unit`` (0-1) of [low, high] without the intervals of half-width ``gap`` around each of
    ``avoid`` (lumas 0-1); the widest free end when nothing is free."""
    grid = numpy.linspace(low, high, 161)
    free = grid[numpy.all(numpy.abs(grid[:, None] - numpy.asarray(avoid)[None, :]) >= gap, axis=1)]
    if not len(free):
        return float(low if abs(low - numpy.mean(avoid)) > abs(high - numpy.mean(avoid)) else high)
    return float(free[min(int(unit * len(free)), len(free) - 1)])


def _draw_appearance(rng, spec):
    """An :class:`Appearance` from 20 draws of ``rng`` (always the same number; the plain look ignores them).

    Lumas (0-1) keep apart: the background at least 0.27 from the object, the mark and the second colour
    at least 0.18 from both, so neither a mark nor a stripe melts into the background and changes the
    silhouette; all within [0.08, 0.88], leaving room for the light drifts and colour jitter."""
    u = rng.uniform(0, 1, size=20)
    if spec.plain_background:
        return Appearance("solid", _with_luma(u[0], 0.8, 0.6), MARK_COLOR, "dot", MARK_COLOR, "flat",
                          (PLAIN_BACKGROUND, PLAIN_BACKGROUND), 0.0, 0.0, 23)
    object_luma = 0.08 + 0.8 * u[2]
    color = _with_luma(u[0], u[1], object_luma)
    background_luma = _level_apart(u[9], [object_luma], 0.27)
    background_colors = tuple(_with_luma(u[10] + 0.1 * k, 0.6 * u[11], min(0.88, background_luma + 0.05 * k))
                              for k in range(2))
    second = _with_luma(u[0] + 0.25 + 0.5 * u[3], 0.3 + 0.7 * u[4],
                        _level_apart(u[5], [object_luma, background_luma], 0.18))
    mark_color = _with_luma(u[6], u[7], _level_apart(u[8], [object_luma, background_luma], 0.18))
    blur = float(spec.blur[0] + (spec.blur[1] - spec.blur[0]) * u[13]) if u[12] < 0.5 else 0.0
    return Appearance(FILLS[int(u[14] * len(FILLS))], color, second, MARKS[int(u[15] * len(MARKS))], mark_color,
                      BACKGROUNDS[int(u[16] * len(BACKGROUNDS))], background_colors, round(blur, 3),
                      round(float(spec.noise * (0.25 + 1.25 * u[17])), 3), _integer_of(u[18], spec.crf))


def _integer_of(unit, bounds):
    """The integer of [low, high] at ``unit`` in [0, 1)."""
    return int(bounds[0] + int(unit * (bounds[1] - bounds[0] + 1)))


def _light(rng, spec, t):
    """Per-frame brightness gain (T,) and colour offset (T, 3): a ramp plus a slow wave, from 10 draws."""
    ramp, wave, frequency, phase = rng.uniform(-1, 1), rng.uniform(0, 1), rng.uniform(0.5, 2), rng.uniform(0, 6.3)
    colour = rng.uniform(-1, 1, size=(2, 3))
    if spec.plain_background:
        return numpy.ones(len(t)), numpy.zeros((len(t), 3))
    drift = spec.light_drift
    gain = 1 + drift * (ramp * (t - 0.5) + 0.3 * wave * numpy.sin(2 * math.pi * frequency * t + phase))
    tint = 25.5 * drift * (colour[0] * (t[:, None] - 0.5) + 0.5 * colour[1])
    return gain, tint


def plan_video(motion, rng, spec=SyntheticSpec(), shape=None):
    """Draw the plan of one video of class ``motion`` (an index into :data:`MOTIONS`) from ``rng``.

    ``shape`` (an index into :data:`SHAPES`) fixes the shape instead of drawing
    it; the draw is made anyway, so the other properties stay the same.
    The draws are the same for every motion; the second class of each
    :data:`REVERSE_PAIRS` pair is the first's plan reversed.
    """
    if not 0 <= motion < len(MOTIONS):
        raise ValueError(f"plan_video: motion must be in [0, {len(MOTIONS)}), got {motion}")
    for first, second in REVERSE_PAIRS:
        if motion == second:
            return plan_video(first, rng, spec, shape).reversed(second)
    drawn_shape = int(rng.integers(len(SHAPES)))
    shape = drawn_shape if shape is None else int(shape)
    num_frames, fps = _integer(rng, spec.num_frames), _integer(rng, spec.fps)
    width, height = _integer(rng, spec.width) // 2 * 2, _integer(rng, spec.height) // 2 * 2
    short = min(width, height)
    look = _draw_appearance(rng, spec)
    background_seed = int(rng.integers(2 ** 31))
    noise_seeds = rng.integers(2 ** 31, size=num_frames)
    amplitude = 0.0 if spec.plain_background else spec.jitter * short
    t = numpy.linspace(0.0, 1.0, num_frames)
    gain, tint = _light(rng, spec, t)
    frequencies = rng.uniform(0.5, 2.0, size=(2, 2, 1))  # (axis, wave, 1): cycles over the clip
    phases = rng.uniform(0, 2 * math.pi, size=(2, 2, 1))
    waves = numpy.sin(2 * math.pi * frequencies * t + phases).sum(axis=1)  # (2, T)
    shake = numpy.round(0.5 * amplitude * waves.T).astype(numpy.int64)  # (T, 2)
    diameter = _uniform(rng, spec.object_size) * short
    ratio = _uniform(rng, spec.scale_ratio)
    place = rng.uniform(0, 1, size=2)
    travel = _uniform(rng, spec.travel)
    angle0, rotation = rng.uniform(0, 2 * math.pi), math.radians(_uniform(rng, spec.rotation))
    switch = _uniform(rng, spec.switch)
    off_phases = _integer(rng, spec.blink_off_phases)
    progress = _PROFILES[int(rng.integers(len(_PROFILES)))](t)  # 0 -> 1 over the clip

    name = MOTIONS[motion]
    size = numpy.full(num_frames, diameter)
    if name == "grow":
        size = diameter / math.sqrt(ratio) * ratio ** progress
    margin = size.max() / 2 + amplitude + 2

    def along(extent, start_fraction, distance):
        """Positions from the far end of a segment of length ``distance`` to its near end."""
        low = margin + start_fraction * (extent - 2 * margin - distance)
        return low + distance - distance * progress

    x = numpy.full(num_frames, margin + place[0] * (width - 2 * margin))
    y = numpy.full(num_frames, margin + place[1] * (height - 2 * margin))
    if name == "move_left":
        x = along(width, place[0], travel * width)
    elif name == "move_up":
        y = along(height, place[1], travel * height)
    angle = angle0 + (rotation * progress if name == "rotate_clockwise" else numpy.zeros(num_frames))
    visible = numpy.ones(num_frames, dtype=bool)
    if name == "appear":
        visible = t >= switch
    elif name == "blink":
        visible = _blink_pattern(num_frames, off_phases)
    return VideoPlan(motion, shape, num_frames, fps, width, height, look, background_seed, spec,
                     x, y, angle, size, visible, shake, noise_seeds, gain, tint)


# ---- rendering ---------------------------------------------------------------------------------------------
def _outline(shape):
    """Vertices (K, 2) of ``shape`` at angle 0 within the unit circle, or None for circle/ring."""
    turns = lambda k, offset=0.0: offset + 2 * math.pi * numpy.arange(k) / k  # noqa: E731
    if shape == "square":
        corners = turns(4, math.pi / 4)
        return numpy.stack([numpy.cos(corners), numpy.sin(corners)], axis=1)
    if shape == "triangle":
        corners = turns(3)
        return numpy.stack([numpy.cos(corners), numpy.sin(corners)], axis=1)
    if shape == "star":
        corners = turns(10)
        radius = numpy.where(numpy.arange(10) % 2 == 0, 1.0, 0.45)
        return numpy.stack([radius * numpy.cos(corners), radius * numpy.sin(corners)], axis=1)
    if shape == "cross":
        arm = 0.3
        quarter = numpy.array([[1.0, -arm], [1.0, arm], [arm, arm]])
        rotations = [numpy.array([[math.cos(a), -math.sin(a)], [math.sin(a), math.cos(a)]])
                     for a in turns(4)]
        return numpy.concatenate([quarter @ r.T for r in rotations])
    return None


_MARK_DISTANCE = {"circle": 0.55, "square": 0.55, "triangle": 0.55, "star": 0.55, "cross": 0.65, "ring": 0.8}


def _fixed(points):
    """Pixel coordinates as OpenCV's fixed-point int32 (``_SHIFT`` fractional bits)."""
    return numpy.round(numpy.asarray(points) * (1 << _SHIFT)).astype(numpy.int32)


def _object_mask(cv2, shape, x, y, angle, radius, height, width):
    """The object's antialiased coverage (height, width) float32 in [0, 1], centre (x, y) in that patch."""
    mask = numpy.zeros((height, width), dtype=numpy.uint8)
    outline = _outline(shape)
    if outline is None:
        thickness = -1 if shape == "circle" else max(1, int(round(0.4 * radius)))
        ring_radius = radius if shape == "circle" else 0.8 * radius
        cv2.circle(mask, tuple(_fixed((x, y)).tolist()), int(round(ring_radius * (1 << _SHIFT))), 255,
                   thickness, cv2.LINE_AA, _SHIFT)
    else:
        rotation = numpy.array([[math.cos(angle), -math.sin(angle)], [math.sin(angle), math.cos(angle)]])
        cv2.fillPoly(mask, [_fixed(outline @ rotation.T * radius + (x, y))], 255, cv2.LINE_AA, _SHIFT)
    return mask.astype(numpy.float32) / 255


def _mark_layer(look, shape, u, v, radius):
    """Coverage (h, w) of the mark at object coordinates ``u`` (toward the mark) and ``v``, in pixels."""
    if look.mark == "dot":
        distance = numpy.hypot(u - _MARK_DISTANCE[shape] * radius, v)
        return numpy.clip(max(2.0, 0.15 * radius) - distance + 0.5, 0, 1)
    if look.mark == "stripe":
        width = max(2.0, 0.25 * radius)
        return numpy.clip(width / 2 - numpy.abs(v) + 0.5, 0, 1) * numpy.clip(u + 0.5, 0, 1)
    if look.mark == "halves":
        return numpy.clip(u + 0.5, 0, 1)
    return numpy.clip(u - 0.45 * radius - 1.4 * numpy.abs(v) + 0.5, 0, 1)       # notch: a V cut into the rim


def _fill_colors(cv2, look, coverage, v, u, radius):
    """Colours (h, w, 3) float32 of the object's fill (stripes and gradients go 60 % / 70 % of the way to
    ``look.second``, so the silhouette stays whole)."""
    color, second = numpy.array(look.color, numpy.float32), numpy.array(look.second, numpy.float32)
    if look.fill == "gradient":
        share = 0.7 * numpy.clip((u / radius + 1) / 2, 0, 1)[..., None]
        return color + (second - color) * share
    if look.fill == "stripes":
        share = 0.6 * numpy.clip(0.5 + 2 * numpy.cos(2 * math.pi * v / max(3.0, 0.45 * radius)), 0, 1)[..., None]
        return color + (second - color) * share
    if look.fill == "outline":
        width = max(1, int(round(0.14 * radius)))
        inner = cv2.erode(coverage, numpy.ones((2 * width + 1, 2 * width + 1), numpy.uint8))
        return color + (second - color) * (coverage - inner)[..., None]
    return numpy.broadcast_to(color, coverage.shape + (3,))


def _draw_object(cv2, frame, shape, x, y, angle, diameter, look):
    """Draw the object (filled, marked) into ``frame`` (H, W, 3) float32 in place."""
    radius = diameter / 2
    height, width = frame.shape[:2]
    left, top = max(0, int(x - radius) - 3), max(0, int(y - radius) - 3)
    right, bottom = min(width, int(x + radius) + 4), min(height, int(y + radius) + 4)
    px, py = x - left, y - top
    coverage = _object_mask(cv2, shape, px, py, angle, radius, bottom - top, right - left)
    dy, dx = numpy.mgrid[0:bottom - top, 0:right - left].astype(numpy.float32)
    dx, dy = dx - px, dy - py
    u, v = dx * math.cos(angle) + dy * math.sin(angle), dy * math.cos(angle) - dx * math.sin(angle)
    colors = _fill_colors(cv2, look, coverage, v, u, radius)
    mark = _mark_layer(look, shape, u, v, radius)
    if look.mark == "notch":
        coverage = coverage * (1 - mark)
    else:
        mark = (mark * coverage)[..., None]
        colors = colors * (1 - mark) + numpy.array(look.mark_color, numpy.float32) * mark
    patch = frame[top:bottom, left:right]
    patch += (colors - patch) * coverage[..., None]


def _background(cv2, plan, border):
    """The background canvas (H + 2 border, W + 2 border, 3) float32 of ``plan.look.background``."""
    height, width = plan.height + 2 * border, plan.width + 2 * border
    first, second = (numpy.array(c, numpy.float32) for c in plan.look.background_colors)
    if plan.spec.plain_background:
        return numpy.broadcast_to(first, (height, width, 3)).copy()
    rng = numpy.random.default_rng(plan.background_seed)
    family = plan.look.background
    rows, cols = numpy.mgrid[0:height, 0:width].astype(numpy.float32)
    direction = rng.uniform(0, 2 * math.pi)
    along = rows * math.sin(direction) + cols * math.cos(direction)
    if family == "blobs":
        coarse = rng.normal(0, 25, size=(height // 12 + 2, width // 12 + 2, 3)).astype(numpy.float32)
        canvas = first + cv2.resize(coarse, (width, height), interpolation=cv2.INTER_CUBIC)
    elif family == "gradient":
        share = (along - along.min()) / max(1.0, numpy.ptp(along))
        canvas = first + (second - first) * share[..., None]
    elif family == "stripes":
        period = rng.uniform(6, 20)
        canvas = first + (second - first) * (0.5 + 0.5 * numpy.sin(2 * math.pi * along / period))[..., None]
    elif family == "checker":
        cell = rng.uniform(6, 16)
        share = ((rows // cell + cols // cell) % 2)[..., None]
        canvas = first + (second - first) * share
    else:
        canvas = numpy.broadcast_to(first, (height, width, 3)).copy()
        if family == "clutter":                  # short lines of the two colours, thinner than any shape
            ends = rng.uniform(0, 1, size=(int(rng.integers(12, 30)), 4)) * (width, height, width, height)
            for k, (x0, y0, x1, y1) in enumerate(ends):
                color = tuple(float(c) for c in (second if k % 2 else 0.5 * (first + second)))
                x1, y1 = x0 + 0.25 * (x1 - x0), y0 + 0.25 * (y1 - y0)
                cv2.line(canvas, (int(x0), int(y0)), (int(x1), int(y1)), color, 1, cv2.LINE_AA)
    grain = cv2.GaussianBlur(rng.normal(0, rng.uniform(3, 14), size=(height, width, 3)).astype(numpy.float32),
                             (0, 0), 0.8)
    return canvas + grain


def render_video(plan):
    """The frames of ``plan``: uint8 RGB (T, H, W, 3)."""
    cv2 = require_cv2()
    border = int(numpy.abs(plan.shake).max(initial=0))
    canvas = _background(cv2, plan, border)
    shape, look = SHAPES[plan.shape], plan.look
    frames = numpy.empty((plan.num_frames, plan.height, plan.width, 3), dtype=numpy.uint8)
    for i in range(plan.num_frames):
        dx, dy = (int(v) for v in plan.shake[i])
        frame = canvas[border - dy:border - dy + plan.height, border - dx:border - dx + plan.width].copy()
        if plan.visible[i]:
            _draw_object(cv2, frame, shape, plan.x[i] + dx, plan.y[i] + dy, plan.angle[i], plan.size[i], look)
        if look.blur > 0:
            frame = cv2.GaussianBlur(frame, (0, 0), look.blur)
        frame = frame * plan.gain[i] + plan.tint[i]
        if look.noise > 0:
            frame += numpy.random.default_rng(plan.noise_seeds[i]).normal(0, look.noise, frame.shape)
        frames[i] = numpy.clip(frame + 0.5, 0, 255)
    return frames


# ---- whole sets ------------------------------------------------------------------------------------------
def split_of(index):
    """The split of video ``index``: "test" if index % 10 == 0, "dev" if index % 10 == 1, else "train"."""
    return "test" if index % 10 == 0 else "dev" if index % 10 == 1 else "train"


def _video_name(index):
    return f"videos/{index:06d}.mp4"


def _make_one(job):
    """Plan video ``index`` and write it unless its file exists; returns (index, summary)."""
    root, index, motion, seed, spec = job
    plan = plan_video(motion, numpy.random.default_rng([seed, index]), spec)
    path = os.path.join(root, _video_name(index))
    if not os.path.exists(path):
        write_video(path, render_video(plan), plan.fps, crf=plan.look.crf)
    return index, plan.summary()


def make_synthetic_set(root, num, seed=0, spec=SyntheticSpec(), workers=None, progress=None):
    """Write ``num`` videos and their list files under ``root``; returns a dict of counts and timings.

    Motions are balanced (``num // 12`` or one more of each, in an order
    shuffled by ``seed``); video i is drawn from ``default_rng([seed, i])``,
    so each video depends only on the seed and its index, never on ``workers``
    (processes; default: all cores). Videos whose file already exists are kept
    (an interrupted run resumes). Files:

    - ``videos/000000.mp4`` …: H.264 videos;
    - ``motion_classes.txt``: the 12 motion names, one per line (line i = class i);
    - ``motion_{train,dev,test}.txt``: ``videos/000000.mp4 3`` (Kinetics style);
    - ``multilabel_classes.txt``: the motions, then the 6 shapes (classes 12-17);
    - ``multilabel_{train,dev,test}.txt``: ``videos/000000.mp4 3,14`` (YouTube-8M style);
    - ``metadata.jsonl``: one :meth:`VideoPlan.summary` per video, with its path.

    Split: video i is test if i % 10 == 0, dev if i % 10 == 1, else train.
    ``progress``: None or False shows nothing; True shows a progress bar on
    stderr (:func:`framework.progress.progress_bar`, hidden when stderr is not a
    terminal); a callable is called as ``progress(done, total)`` after each video.
    """
    root = os.fspath(root)
    os.makedirs(os.path.join(root, "videos"), exist_ok=True)
    motions = numpy.random.default_rng(seed).permutation(numpy.arange(num) % len(MOTIONS))
    jobs = [(root, i, int(motions[i]), int(seed), spec) for i in range(num)]
    start = time.perf_counter()
    summaries, workers = map_indexed(_make_one, jobs, workers, progress, desc="videos")
    seconds = time.perf_counter() - start
    shape_offset = len(MOTIONS)
    write_lines(os.path.join(root, "motion_classes.txt"), MOTIONS)
    write_lines(os.path.join(root, "multilabel_classes.txt"), MOTIONS + SHAPES)
    for split in ("train", "dev", "test"):
        chosen = [i for i in range(num) if split_of(i) == split]
        write_lines(os.path.join(root, f"motion_{split}.txt"),
                    [f"{_video_name(i)} {MOTIONS.index(summaries[i]['motion'])}" for i in chosen])
        write_lines(os.path.join(root, f"multilabel_{split}.txt"),
                    [f"{_video_name(i)} {MOTIONS.index(summaries[i]['motion'])},"
                     f"{shape_offset + SHAPES.index(summaries[i]['shape'])}" for i in chosen])
    write_lines(os.path.join(root, "metadata.jsonl"),
                [json.dumps({"path": _video_name(i), "split": split_of(i), **summaries[i]}) for i in range(num)])
    return {"videos": num, "seconds": round(seconds, 2), "workers": workers,
            "splits": {split: sum(split_of(i) == split for i in range(num)) for split in ("train", "dev", "test")}}


def spec_from_config(values=None):
    """A :class:`SyntheticSpec` from a config mapping (lists become ranges); unknown keys are named."""
    values = dict(values or {})
    known = {f.name for f in dataclasses.fields(SyntheticSpec)}
    unknown = sorted(set(values) - known)
    if unknown:
        raise ConfigError(f"synthetic spec: unknown keys {unknown} (known: {sorted(known)})")
    return SyntheticSpec(**{k: tuple(v) if isinstance(v, list) else v for k, v in values.items()})


def ensure_synthetic_set(num=1200, seed=0, spec=SyntheticSpec(), root=None, workers=None):
    """The folder of the set ``(num, seed, spec)``, generated there first unless it is complete.

    ``root`` defaults to ``$OAR_HOME/synthetic_videos/n<num>-s<seed>-<spec digest>``. A
    ``complete.json`` written last marks a finished set; an interrupted
    generation resumes (see :func:`make_synthetic_set`).
    """
    settings = {"num": int(num), "seed": int(seed), "spec": dataclasses.asdict(spec)}
    if root is None:
        digest = hashlib.sha256(json.dumps(settings["spec"], sort_keys=True).encode()).hexdigest()[:10]
        root = os.path.join(oar_home(), "synthetic_videos", f"n{num}-s{seed}-{digest}")
    return ensure_made(root, settings, f"synthetic video set ({num} videos)",
                       lambda folder: make_synthetic_set(folder, num, seed, spec, workers, progress=True))


def main(argv=None):
    """``make_synthetic_videos.py --out DIR --num N --seed S [--workers W] [--<range> LOW HIGH …]``."""
    import argparse
    parser = argparse.ArgumentParser(description="Write a labelled synthetic video set (see video.data.synthetic).")
    parser.add_argument("--out", required=True, help="output folder")
    parser.add_argument("--num", type=int, default=1200, help="number of videos (default 1200)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--workers", type=int, default=None, help="processes (default: all cores)")
    defaults = SyntheticSpec()
    for field in dataclasses.fields(SyntheticSpec):
        value = getattr(defaults, field.name)
        if isinstance(value, tuple):
            parser.add_argument(f"--{field.name}", type=type(value[0]), nargs=2, default=value,
                                metavar=("LOW", "HIGH"), help=f"range (default {value[0]} {value[1]})")
        elif isinstance(value, bool):
            parser.add_argument(f"--{field.name}", action="store_true")
        else:
            parser.add_argument(f"--{field.name}", type=type(value), default=value, help=f"(default {value})")
    args = parser.parse_args(argv)
    try:
        spec = SyntheticSpec(**{f.name: (tuple(getattr(args, f.name)) if isinstance(getattr(args, f.name), list)
                                         else getattr(args, f.name)) for f in dataclasses.fields(SyntheticSpec)})
    except ValueError as exc:
        parser.error(str(exc))
    result = make_synthetic_set(args.out, args.num, args.seed, spec, args.workers, progress=True)
    print(json.dumps(result))
    return result


if __name__ == "__main__":
    main()
