"""Frames of the generated set with per-frame targets: what the image backbone of the feature models learns.

YouTube-8M's frame features came from an image network trained on labelled
images; the generated set has no such network, so one is trained on its frames.
A frame alone cannot show a motion, and a network trained on video labels
alone (TSN style) learns what the label needs from single frames (the shape,
the pair of a motion) and is free to forget where the object is. The features
of a sequence model must instead describe each frame so that the motion can be
read from their order. So the backbone is trained **per frame** on what a
frame shows: the object's shape and whether it is visible (classification),
and, when visible, its centre, size and orientation on the displayed frame
(regression of x, y, log size, cos/sin of the angle). The pooled feature then
carries these properties linearly, and a temporal model over the feature
sequence can infer direction, rotation sense, growth and (dis)appearance.

The per-frame targets come from the set's own description of each video (its
plan, rebuilt from the set's seed and spec); the motion label is not used.

- :func:`frame_targets`: the targets of one video's plan;
- :class:`SyntheticFrameAttributes`: frames of one split with their targets;
- :func:`mirror_frames`: frames and targets under a symmetry of the square.

The task is :class:`video.tasks.frame_attributes.FrameAttributes`, its metric
:class:`video.metrics.FrameAttributeMetrics`; the features the trained backbone
makes are :class:`video.data.synthetic_features.SyntheticFeatures`.
"""
import os

import numpy

from framework.config import ConfigError
from framework.io import Dataset, sample_rng
from framework.registry import DATASETS
from vision.data.transforms import Compose

from .decode import VideoReader
from .features import feature_transforms
from .synthetic import ensure_synthetic_set, plan_video, spec_from_config
from .transforms import mirror_array

__all__ = ["frame_targets", "SyntheticFrameAttributes", "mirror_frames"]


def frame_targets(plan):
    """Per-frame targets of a plan: dict of (T,) arrays ``shape`` int64, ``visible`` float32 and
    ``geometry`` (T, 5) float32: x/width, y/height (as displayed, camera shake included),
    log(size / short side), cos and sin of the angle."""
    short = min(plan.width, plan.height)
    x = (plan.x + plan.shake[:, 0]) / plan.width
    y = (plan.y + plan.shake[:, 1]) / plan.height
    geometry = numpy.stack([x, y, numpy.log(plan.size / short), numpy.cos(plan.angle), numpy.sin(plan.angle)],
                           axis=1).astype(numpy.float32)
    return {"shape": numpy.full(plan.num_frames, plan.shape, dtype=numpy.int64),
            "visible": plan.visible.astype(numpy.float32), "geometry": geometry}


@DATASETS.register()
class SyntheticFrameAttributes(Dataset):
    """Frames of one split of the generated set, ``frames_per_video`` per video, with per-frame targets.

    Args:
        split: "train", "dev" or "test".
        frames_per_video: frames drawn per video (at random for train, evenly spread otherwise).
        size: crop size; frames go through :func:`video.data.features.feature_transforms` (the same
            pipeline the feature extraction uses).
        num, seed, spec, root: the set, as :class:`video.data.datasets.SyntheticVideos`.
        symmetries: mirror each video's frames by one of the 8 symmetries of the square, drawn per sample,
            with the targets moved to match (:func:`mirror_frames`); for training.
        augment: transforms applied to the decoded frames (uint8) before that pipeline, drawn once per
            sample: photometric ones (e.g. :class:`~vision.data.photometric.ColorJitter`), which leave the
            targets true; for training.

    Sample: ``{"imgs": (F, 3, size, size) float32, "shape": (F,) int64, "visible": (F,) float32,
    "geometry": (F, 5) float32}``. Decoded videos are kept in memory (about 1.5 MB per video of the
    default set), so later epochs do not decode again.
    """

    def __init__(self, split: str, frames_per_video: int = 4, size: int = 64, num: int = 1200, seed: int = 0,
                 spec: dict = None, root: str = None, symmetries: bool = False, augment: list = None):
        if split not in ("train", "dev", "test") or frames_per_video < 1:
            raise ConfigError(f"SyntheticFrameAttributes: split must be train, dev or test and frames_per_video "
                              f">= 1, got {split!r}, {frames_per_video}")
        self.spec = spec_from_config(spec)
        self.folder = ensure_synthetic_set(num, seed, self.spec, root)
        self.split, self.seed, self.frames, self.symmetries = split, int(seed), int(frames_per_video), bool(symmetries)
        self.transform = Compose(list(augment or []) + feature_transforms(size))
        with open(os.path.join(self.folder, f"motion_{split}.txt"), encoding="utf-8") as f:
            self.items = [(path, int(label)) for path, label in (line.split() for line in f if line.strip())]
        self._frames = {}  # index -> decoded frames (T, H, W, 3) uint8, kept after the first read

    def __len__(self):
        return len(self.items)

    def __getitem__(self, index):
        path, motion = self.items[index]
        number = int(os.path.splitext(os.path.basename(path))[0])
        plan = plan_video(motion, numpy.random.default_rng([self.seed, number]), self.spec)
        if self.split == "train":
            picks = numpy.sort(sample_rng().choice(plan.num_frames, self.frames, replace=False))
        else:
            picks = ((numpy.arange(self.frames) + 0.5) * plan.num_frames / self.frames).astype(numpy.int64)
        if index not in self._frames:
            with VideoReader(os.path.join(self.folder, path)) as reader:
                self._frames[index] = reader.get_frames(numpy.arange(len(reader)))
        frames = self._frames[index][picks]
        targets = {k: v[picks] for k, v in frame_targets(plan).items()}
        imgs = self.transform({"imgs": frames})["imgs"]
        if self.symmetries:
            imgs, targets["geometry"] = mirror_frames(imgs, targets["geometry"], sample_rng().integers(8))
        return {"imgs": imgs, **targets}


def mirror_frames(imgs, geometry, which):
    """Frames (F, C, H, W) and their targets (F, 5) (as :func:`frame_targets`: x, y, log size, cos, sin of
    the angle, y and the angle measured downwards on screen) mirrored by symmetry ``which`` of
    :func:`~video.data.transforms.mirror_array`; the shape is unchanged. Returns the new ``(imgs, geometry)``."""
    geometry = geometry.copy()
    x, y, cos, sin = (geometry[:, i].copy() for i in (0, 1, 3, 4))
    if which & 1:
        x, cos = 1 - x, -cos
    if which & 2:
        y, sin = 1 - y, -sin
    if which & 4:
        x, y, cos, sin = y, x, sin, cos
    geometry[:, 0], geometry[:, 1], geometry[:, 3], geometry[:, 4] = x, y, cos, sin
    return mirror_array(imgs, which, -2), geometry
