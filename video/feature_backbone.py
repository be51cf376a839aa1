"""Training the image backbone whose per-frame features feed the feature models.

YouTube-8M's frame features came from an image network trained on labelled
images; the generated set has no such network, so we train one on its frames.
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

- :class:`SyntheticFrameAttributes`: frames of one split with their targets;
- :class:`SyntheticFeatures`: the feature dataset the feature models train on,
  extracted once with the trained backbone (:func:`synthetic_features_folder`);
- :class:`FrameAttributes`: the task (losses, metrics) for an image model
  whose ``num_classes`` is ``len(SHAPES) + 1 + 5`` outputs
  (shape logits, visibility logit, x, y, log size, cos, sin).
"""
import hashlib
import json
import os

import numpy

import framework
import framework.nn.functional as F
from framework.config import ConfigError
from framework.engine import Task
from framework.engine.metrics import Metric, to_numpy
from framework.fetch import oar_home
from framework.io import Dataset, sample_rng
from framework.registry import DATASETS, METRICS, MODELS, TASKS
from vision.data.transforms import Compose
from vision.models.weights import load_pretrained

from .data.datasets import FrameFeatureDataset, read_list_file
from .data.decode import VideoReader
from .data.features import FeatureExtractor, extract_features, feature_transforms
from .data.synthetic import SHAPES, ensure_synthetic_set, plan_video, spec_from_config
from .data.transforms import mirror_array
from .tasks.feature_recognition import resolve_path

__all__ = ["SyntheticFrameAttributes", "mirror_frames", "mirror_label_map", "MIRROR_LABEL_MAPS", "FrameAttributes",
           "FrameAttributeMetrics", "NUM_OUTPUTS", "frame_targets", "synthetic_features_folder", "SyntheticFeatures"]

NUM_OUTPUTS = len(SHAPES) + 1 + 5


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

    Sample: ``{"imgs": (F, 3, size, size) float32, "shape": (F,) int64, "visible": (F,) float32,
    "geometry": (F, 5) float32}``. Decoded videos are kept in memory (about 1.5 MB per video of the
    default set), so later epochs do not decode again.
    """

    def __init__(self, split: str, frames_per_video: int = 4, size: int = 64, num: int = 1200, seed: int = 0,
                 spec: dict = None, root: str = None, symmetries: bool = False):
        if split not in ("train", "dev", "test") or frames_per_video < 1:
            raise ConfigError(f"SyntheticFrameAttributes: split must be train, dev or test and frames_per_video "
                              f">= 1, got {split!r}, {frames_per_video}")
        self.spec = spec_from_config(spec)
        self.folder = ensure_synthetic_set(num, seed, self.spec, root)
        self.split, self.seed, self.frames, self.symmetries = split, int(seed), int(frames_per_video), bool(symmetries)
        self.transform = Compose(feature_transforms(size))
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


@METRICS.register()
class FrameAttributeMetrics(Metric):
    """Shape accuracy (visible frames), visibility accuracy, and mean absolute errors of x, y
    (fractions of the frame) and of the angle (degrees) on visible frames."""

    counters = ("count", "visible_count", "shape_right", "visible_right", "xy_error", "angle_error")

    def reset(self):
        self.count = self.visible_count = self.shape_right = self.visible_right = 0
        self.xy_error = self.angle_error = 0.0

    def update(self, outputs, batch):
        visible = to_numpy(batch["visible"]).reshape(-1) > 0.5
        geometry = to_numpy(batch["geometry"]).reshape(-1, 5)
        predicted = to_numpy(outputs["geometry"])
        self.count += visible.size
        self.visible_count += int(visible.sum())
        self.visible_right += int(((to_numpy(outputs["visible"]) > 0.5) == visible).sum())
        self.shape_right += int((to_numpy(outputs["shape"]) == to_numpy(batch["shape"]).reshape(-1))[visible].sum())
        self.xy_error += float(numpy.abs(predicted[visible, :2] - geometry[visible, :2]).mean(axis=1).sum())
        turn = numpy.arctan2(predicted[:, 4], predicted[:, 3]) - numpy.arctan2(geometry[:, 4], geometry[:, 3])
        self.angle_error += float(numpy.degrees(numpy.abs(numpy.angle(numpy.exp(1j * turn))))[visible].sum())

    def compute(self):
        seen = max(self.visible_count, 1)
        return {"shape_acc": self.shape_right / seen, "visible_acc": self.visible_right / max(self.count, 1),
                "xy_mae": self.xy_error / seen, "angle_mae_deg": self.angle_error / seen}


@TASKS.register()
class FrameAttributes(Task):
    """Per-frame supervision of an image model: shape (cross entropy) and geometry (smooth L1) on visible
    frames, visibility (sigmoid cross entropy) on all.

    The model maps (B, 3, H, W) to (B, NUM_OUTPUTS); batches hold ``imgs`` (N, F, 3, H, W) and the
    targets of :class:`SyntheticFrameAttributes`. ``geometry_weight`` scales the regression loss.
    """

    def __init__(self, model, geometry_weight: float = 5.0, metrics=None):
        if getattr(model, "num_classes", NUM_OUTPUTS) != NUM_OUTPUTS:
            raise ConfigError(f"FrameAttributes: the model needs num_classes = {NUM_OUTPUTS} outputs "
                              f"(shape {len(SHAPES)}, visibility 1, geometry 5), got {model.num_classes}")
        self.model, self.geometry_weight, self._metrics = model, float(geometry_weight), metrics

    def _outputs(self, batch):
        imgs = batch["imgs"]
        out = self.model(imgs.reshape([-1, *imgs.shape[2:]]))               # (N*F, NUM_OUTPUTS)
        k = len(SHAPES)
        return out[:, :k], out[:, k], out[:, k + 1:]

    def loss(self, batch):
        shape_logits, visible_logit, geometry = self._outputs(batch)
        visible = batch["visible"].reshape([-1])                             # (N*F,)
        weight = visible / (visible.sum() + 1.0)
        shape_loss = (F.cross_entropy(shape_logits, batch["shape"].reshape([-1]), reduction="none") * weight).sum()
        error = geometry - batch["geometry"].reshape([-1, 5])
        smooth = framework.where(error.abs().data < 0.1, 5.0 * error * error, error.abs() - 0.05)
        geometry_loss = (smooth.sum(axis=1) * weight).sum()
        visible_loss = F.binary_cross_entropy_with_logits(visible_logit, visible)
        return shape_loss + visible_loss + self.geometry_weight * geometry_loss

    def predict_batch(self, batch):
        shape_logits, visible_logit, geometry = self._outputs(batch)
        return {"shape": shape_logits.argmax(axis=-1), "visible": F.sigmoid(visible_logit), "geometry": geometry}

    def metrics(self):
        return self._metrics if self._metrics is not None else [FrameAttributeMetrics()]


def synthetic_features_folder(backbone, backbone_weights, size, num_frames, num=1200, seed=0, spec=None,
                              root=None, mirrored=False):
    """The features of the whole generated set made by ``backbone`` (config) with ``backbone_weights``,
    extracted first (resumably) into ``$OAR_HOME/synthetic_features/<digest>`` unless complete.

    Returns ``(features folder, set folder)``; the folder holds ``rgb/videos/<i>.npy`` (num_frames, dim)
    and the ``multilabel_{train,dev,test}.txt`` lists. With ``mirrored``, also the features of the
    training videos' 7 mirror images and ``multilabel_train_mirrored.txt`` (see :func:`mirror_label_map`).
    """
    folder = ensure_synthetic_set(num, seed, spec_from_config(spec), root)
    weights = resolve_path(backbone_weights)
    with open(weights, "rb") as f:
        digest = hashlib.sha256(f.read()).hexdigest()
    key = json.dumps({"set": os.path.basename(folder), "backbone": backbone, "weights": digest, "size": size,
                      "num_frames": num_frames}, sort_keys=True)
    out = os.path.join(oar_home(), "synthetic_features", hashlib.sha256(key.encode()).hexdigest()[:12])
    marker = os.path.join(out, "complete.json")
    mirrored_marker = os.path.join(out, "multilabel_train_mirrored.txt")
    if os.path.isfile(marker) and (os.path.isfile(mirrored_marker) or not mirrored):
        return out, folder
    model = MODELS.build({**backbone, "num_classes": 0}, where="backbone")
    load_pretrained(model, weights, skip_head=True)
    extractor = FeatureExtractor(model, feature_transforms(size))
    if mirrored:
        _mirrored_train_features(folder, out, extractor, num_frames)
    if not os.path.isfile(marker):
        for split in ("train", "dev", "test"):
            list_name = f"multilabel_{split}.txt"
            entries = read_list_file(os.path.join(folder, list_name), multi_label=True)
            extract_features(entries, folder, out, extractor, num_frames=num_frames, list_name=list_name,
                             on_error="raise", progress=f"{split} videos")
        with open(marker, "w", encoding="utf-8") as f:
            f.write(key + "\n")
    return out, folder


# How each mirror moves the motion labels (class i becomes map[i]); the shapes (labels 12-17) stay.
MIRROR_LABEL_MAPS = ((1, 0, 2, 3, 5, 4, 6, 7, 8, 9, 10, 11),    # left-right: move_left <-> move_right, rotation sense
                     (0, 1, 3, 2, 5, 4, 6, 7, 8, 9, 10, 11),    # top-bottom: move_up <-> move_down, rotation sense
                     (2, 3, 0, 1, 5, 4, 6, 7, 8, 9, 10, 11))    # diagonal: left <-> up, right <-> down, rotation sense


def mirror_label_map(which):
    """Where symmetry ``which`` of :func:`~video.data.transforms.mirror_array` sends each motion label: a tuple
    of 12 label ids."""
    mapping = tuple(range(len(MIRROR_LABEL_MAPS[0])))
    for bit, moves in enumerate(MIRROR_LABEL_MAPS):
        if which & (1 << bit):
            mapping = tuple(moves[label] for label in mapping)
    return mapping


def _mirrored_train_features(folder, out, extractor, num_frames):
    """Features of the 7 mirror images (:func:`~video.data.transforms.mirror_array`) of every training video under
    ``out/rgb/m<k>/`` and the list ``multilabel_train_mirrored.txt`` naming them and the originals, with
    the motion labels moved (:func:`mirror_label_map`)."""
    entries = read_list_file(os.path.join(folder, "multilabel_train.txt"), multi_label=True)
    lines = [f"{os.path.splitext(e.path)[0]} {','.join(map(str, e.labels))}" for e in entries]
    for which in range(1, 8):
        moved = dict(enumerate(mirror_label_map(which)))     # motions move; shapes (12-17) stay
        mirrored = lambda frames, which=which: extractor(mirror_array(frames, which, 1))  # noqa: E731
        extract_features(entries, folder, out, mirrored, num_frames=num_frames, modality=f"rgb/m{which}",
                         list_name=f"m{which}.txt", on_error="raise", progress=f"mirror {which}")
        lines += [f"m{which}/{os.path.splitext(e.path)[0]} {','.join(str(moved.get(l, l)) for l in e.labels)}"
                  for e in entries]
    with open(os.path.join(out, "multilabel_train_mirrored.txt"), "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")


@DATASETS.register()
class SyntheticFeatures(FrameFeatureDataset):
    """Backbone features of one split of the generated set, with its multi-label list (18 classes).

    Args:
        split: "train", "dev" or "test".
        backbone, backbone_weights, size, extract_frames: the image model config (``num_classes`` is set
            to 0), its weights, crop size and frames per video used to make the features (see
            :func:`synthetic_features_folder`; made once).
        num_frames, mode, max_frames, transforms: as :class:`~video.data.datasets.FrameFeatureDataset`.
        mirrored: (train) also the training videos' 7 mirror images, their motion labels moved (8 times the
            samples; see :func:`synthetic_features_folder`).
        num, seed, spec, root: the set, as :class:`~video.data.datasets.SyntheticVideos`.

    Sample: ``{"rgb": (T, dim) float32, "label": (18,) float32 multi-hot, "path"}``.
    """

    def __init__(self, split: str, backbone: dict, backbone_weights: str, size: int = 64, extract_frames: int = 16,
                 num_frames: int = None, mode: str = "test", max_frames: int = None, num: int = 1200,
                 seed: int = 0, spec: dict = None, root: str = None, transforms: list = None, mirrored: bool = False):
        if split not in ("train", "dev", "test") or (mirrored and split != "train"):
            raise ConfigError(f"SyntheticFeatures: split must be train, dev or test (mirrored: train only), got "
                              f"{split!r}, mirrored={mirrored}")
        out, folder = synthetic_features_folder(backbone, backbone_weights, size, extract_frames, num, seed, spec,
                                                root, mirrored)
        list_name = "multilabel_train_mirrored.txt" if mirrored else f"multilabel_{split}.txt"
        super().__init__(os.path.join(out, list_name), ["rgb"], root=out,
                         class_names=os.path.join(folder, "multilabel_classes.txt"), num_frames=num_frames,
                         mode=mode, max_frames=max_frames, on_error="raise", transforms=transforms)
