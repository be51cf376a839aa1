"""Video datasets from list files: videos (Kinetics style) and per-video frame features (YouTube-8M style).

List files have one video per line, ``path label`` (single-label) or ``path
l1,l2,…`` (multi-label); the path may contain spaces (the labels are the last
field), labels are class ids or names from the class-names file (one name per
line, line i = class i). Blank lines and lines starting with ``#`` are
skipped. Relative paths are relative to ``root`` (default: the list file's
folder).

Bad input, each named by the list file and line; every error here is a
:class:`~framework.errors.UserError`, one type per kind of mistake:

- a missing list file or class-names file: :class:`ListFileNotFoundError`
  (also a FileNotFoundError);
- a list file or class-names file that cannot be used — a malformed line, a
  label that is no class id or name, an id out of range, repeated or no class
  names, a list without entries, bytes that are not UTF-8:
  :class:`VideoListError` (also a ValueError);
- a listed video (or feature file) that does not exist: checked when the
  dataset is built; ``on_error="skip"`` drops it with one warning listing the
  missing files, ``on_error="raise"`` raises :class:`ListFileNotFoundError`;
- a video that cannot be decoded (corrupt, truncated, empty): with
  ``on_error="skip"`` a warning names it and the next video in the list is
  loaded in its place (up to ``max_skips`` in a row, then an error); the video
  is remembered and not tried again by the same process. With
  ``on_error="raise"`` a :class:`~video.data.decode.VideoDecodeError` naming it
  is raised;
- a video shorter than the clip: the sampler loops over it (or repeats its
  last frame, ``short="pad"``), see :mod:`video.data.sampling`.

A test list of yours (``oar eval --test_file F``): every dataset here declares
``TEST_FILE`` (:mod:`framework.engine.test_file`), so F is read whole as a
:class:`VideoDataset` or :class:`FrameFeatureDataset` with the run's class
names, its paths relative to F's folder.

Samples: ``{"imgs": clips, "label": …, "path": str}`` for videos (``imgs``
as the transforms leave it, normally (N, T, C, H, W) float32 from
``FormatClips``); ``{<modality>: (T, D) float32, …, "label": …, "path": str}``
for features. ``label`` is an int64 class id, or a float32 multi-hot (C,)
vector when ``multi_label``.
"""
import os
import warnings

import numpy

from framework.config import ConfigError
from framework.errors import UserError
from framework.io import Dataset, sample_rng
from framework.io.remote import is_url, read_bytes
from framework.registry import DATASETS, TRANSFORMS
from vision.data.transforms import Compose

from .decode import VideoDecodeError, VideoReader
from .features import FeatureFileError, load_features
from .flow import FlowCache
from .heldout import ensure_heldout_set
from .modality import modality_from_config
from .sampling import MODES, random_indices, uniform_indices
from .synthetic import ensure_synthetic_set, spec_from_config

__all__ = ["VideoListError", "ListFileNotFoundError", "ListEntry", "read_class_names", "read_list_file",
           "ClipLoader", "VideoDataset", "SyntheticVideos", "HeldoutVideos", "FrameFeatureDataset", "ON_ERROR", "LABEL_SETS"]

ON_ERROR = ("skip", "raise")
LABEL_SETS = ("motion", "multilabel")


class VideoListError(UserError, ValueError):
    """A list file or class-names file that cannot be used (a malformed line, an unknown label, an id out of
    range, repeated or no class names, no entries, not UTF-8); the message names the file and line."""


class ListFileNotFoundError(VideoListError, FileNotFoundError):
    """A list file, a class-names file, or a video or feature file a list names, that does not exist."""


def _read_lines(path, what):
    """The lines of the text file ``path`` (a ``what``: "list file", "class-names file"), checked to exist and
    to be UTF-8."""
    if not is_url(path) and not os.path.isfile(path):
        raise ListFileNotFoundError(f"{what} not found: {path}" if not os.path.isdir(path)
                                    else f"{what} {path} is a folder, not a file")
    try:
        return read_bytes(path, what).decode("utf-8").splitlines()     # a local path or a URL (fsspec)
    except UnicodeDecodeError as exc:
        line = exc.object[:exc.start].count(b"\n") + 1
        raise VideoListError(f"{path}:{line}: the {what} is not UTF-8 text (byte offset {exc.start})") from exc
    except OSError as exc:
        raise VideoListError(f"cannot read {what} {path}: {exc.strerror or exc}") from exc


class ListEntry:
    """One line of a list file: ``path`` (as written), ``labels`` (list of ints), ``line`` (1-based)."""

    __slots__ = ("path", "labels", "line")

    def __init__(self, path, labels, line):
        self.path, self.labels, self.line = path, labels, line

    def __repr__(self):
        return f"ListEntry({self.path!r}, {self.labels}, line={self.line})"


def read_class_names(path):
    """The class names of ``path``, one per non-empty line (line i = class i). Returns a list of str."""
    path = os.fspath(path)
    names = [line.strip() for line in _read_lines(path, "class-names file") if line.strip()]
    if len(set(names)) != len(names):
        repeated = sorted({n for n in names if names.count(n) > 1})
        raise VideoListError(f"{path}: class names repeat: {repeated[:5]}")
    if not names:
        raise VideoListError(f"{path}: no class names")
    return names


def _parse_label(text, names, num_classes, where):
    if text.lstrip("-").isdigit():
        label = int(text)
    elif names is not None and text in names:
        return names.index(text)
    else:
        if names is None:
            raise VideoListError(f"{where}: label {text!r} is not a class id (give class_names to use names)")
        shown = ", ".join(names[:10]) + (", …" if len(names) > 10 else "")
        raise VideoListError(f"{where}: label {text!r} is neither a class id nor a class name ({shown})")
    if label < 0 or (num_classes is not None and label >= num_classes):
        raise VideoListError(f"{where}: label {label} is out of range [0, {num_classes})" if num_classes is not None
                             else f"{where}: label {label} is negative")
    return label


def read_list_file(path, multi_label=False, class_names=None, num_classes=None):
    """The entries of list file ``path``: a list of :class:`ListEntry` (see the module docstring).

    ``class_names`` (list of str) lets labels be names; ``num_classes`` (default:
    the number of names) bounds the ids.
    """
    path = os.fspath(path)
    lines = _read_lines(path, "list file")
    if num_classes is None and class_names is not None:
        num_classes = len(class_names)
    entries = []
    for number, raw in enumerate(lines, start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        where = f"{path}:{number}"
        parts = line.rsplit(None, 1)
        if len(parts) != 2:
            shape = "path l1,l2,..." if multi_label else "path label"
            raise VideoListError(f"{where}: expected '{shape}', got {line!r}")
        texts = parts[1].split(",") if multi_label else [parts[1]]
        if not multi_label and "," in parts[1]:
            raise VideoListError(f"{where}: several labels {parts[1]!r} in a single-label list (use multi_label)")
        labels = [_parse_label(t.strip(), class_names, num_classes, where) for t in texts if t.strip()]
        if not labels:
            raise VideoListError(f"{where}: no label in {line!r}")
        entries.append(ListEntry(parts[0], labels, number))
    if not entries:
        raise VideoListError(f"{path}: the list file has no entries")
    return entries


class _ListDataset(Dataset):
    """Shared by the datasets: the list file, labels, missing files, and skipping unreadable items."""

    def __init__(self, list_file, root, class_names, num_classes, multi_label, on_error, max_skips):
        if on_error not in ON_ERROR:
            raise ConfigError(f"{type(self).__name__}: on_error must be one of {ON_ERROR}, got {on_error!r}")
        self.list_file = os.fspath(list_file)
        self.root = os.fspath(root) if root is not None else os.path.dirname(os.path.abspath(self.list_file))
        self.class_names = read_class_names(class_names) if class_names else None
        if self.class_names is not None and num_classes is not None and num_classes != len(self.class_names):
            raise VideoListError(f"{type(self).__name__}: num_classes={num_classes} but {class_names} has "
                                 f"{len(self.class_names)} names")
        self.num_classes = num_classes if num_classes is not None else (
            len(self.class_names) if self.class_names is not None else None)
        self.num_labels = self.num_classes          # checked against model.num_classes before training
        self.labels_source = f"the names in {class_names}" if class_names else "its num_classes"
        if multi_label and self.num_classes is None:
            raise ConfigError(f"{type(self).__name__}: a multi-label list needs class_names or num_classes")
        self.multi_label, self.on_error, self.max_skips = bool(multi_label), on_error, int(max_skips)
        self.entries = self._keep_existing(read_list_file(self.list_file, multi_label, self.class_names,
                                                          self.num_classes))
        self._bad = {}  # list line -> why the item could not be read

    def resolve(self, path):
        """The file system path of a list path."""
        return path if os.path.isabs(path) else os.path.join(self.root, path)

    def files_of(self, entry):
        """The files that ``entry`` needs (subclasses)."""
        raise NotImplementedError

    def _keep_existing(self, entries):
        missing = [(entry, f) for entry in entries for f in self.files_of(entry) if not os.path.exists(f)]
        if not missing:
            return entries
        shown = "; ".join(f"line {e.line}: {f}" for e, f in missing[:5]) + (" …" if len(missing) > 5 else "")
        message = f"{self.list_file}: {len(missing)} listed file(s) not found ({shown})"
        if self.on_error == "raise":
            raise ListFileNotFoundError(message)
        gone = {id(e) for e, _ in missing}
        kept = [e for e in entries if id(e) not in gone]
        if not kept:
            raise ListFileNotFoundError(message + "; no entries are left")
        warnings.warn(message + "; skipping them", RuntimeWarning, stacklevel=3)
        return kept

    def label_of(self, entry):
        """int64 class id, or float32 multi-hot (num_classes,)."""
        if not self.multi_label:
            return numpy.int64(entry.labels[0])
        hot = numpy.zeros(self.num_classes, dtype=numpy.float32)
        hot[entry.labels] = 1.0
        return hot

    def __len__(self):
        return len(self.entries)

    def __getitem__(self, index):
        if not -len(self) <= index < len(self):
            raise IndexError(f"{type(self).__name__}: index {index} out of range for {len(self)} items")
        rng = sample_rng()
        for step in range(self.max_skips + 1):
            entry = self.entries[(index + step) % len(self)]
            if entry.line in self._bad:
                continue
            try:
                label = self.label_of(entry)
                return {"label": label, **self.load(entry, rng, label), "path": entry.path}
            except (VideoDecodeError, FeatureFileError, OSError) as exc:
                failure = f"{self.list_file}:{entry.line}: cannot read {self.resolve(entry.path)}: {exc}"
                if self.on_error == "raise":
                    raise type(exc)(failure) from exc
                self._bad[entry.line] = failure
                warnings.warn(failure + "; using the next item instead", RuntimeWarning, stacklevel=2)
        last = self._bad[self.entries[(index + self.max_skips) % len(self)].line]
        raise VideoDecodeError(f"{self.list_file}: no readable item among {self.max_skips + 1} in a row from "
                               f"index {index} (last: {last})")

    def load(self, entry, rng, label):
        """The data of ``entry`` as a dict (subclasses); a ``label`` it holds (moved by a transform such as
        :class:`~video.data.transforms.RandomTimeReverse`) replaces the list's."""
        raise NotImplementedError


def _build(item, who):
    return TRANSFORMS.build(item, where=who) if isinstance(item, dict) else item


class ClipLoader:
    """Decode, sample and transform one video: ``loader(path, rng=None, label=None)`` -> sample dict.

    ``sampler``: a sampler (a ``{type: SegmentSampler, …}`` / ``ClipSampler``
    dict or object, see :mod:`video.data.sampling`); ``transforms``: a list for
    :class:`vision.data.transforms.Compose`; ``fps``: the frame rate of JPEG
    frame folders. The sample holds ``imgs`` (as the transforms leave it; the
    decoded frames are (views x T, H, W, 3) uint8), ``num_frames``, ``fps``,
    ``frame_inds`` (views, T) and ``clip_len``, and ``label`` when one is
    given (label-moving transforms change it). This is also what a task uses
    to predict on one video file.

    ``modality`` (:mod:`video.data.modality`: "rgb", "flow", "rgbdiff", "rgb+flow", "rgb+rgbdiff" or a dict
    with the stack and flow settings) decides what each sampled frame holds; the sample then also carries ``modality``
    (its name) and ``stack`` for the transforms. Flow is computed here (in the loader's worker) and cached
    per video file under ``$OAR_HOME`` (:class:`~video.data.flow.FlowCache`).
    """

    def __init__(self, sampler, transforms=None, fps=30.0, modality=None):
        self.sampler = _build(sampler, "sampler")
        self.transform = Compose(transforms)
        self.fps = float(fps)
        self.modality = modality_from_config(modality)
        self.flow_cache = FlowCache(self.modality.flow) if self.modality.motion == "flow" else None

    def __call__(self, path, rng=None, label=None):
        rng = sample_rng() if rng is None else rng
        with VideoReader(path, fps=self.fps) as reader:
            sample = self.sampler({"num_frames": len(reader), "fps": reader.fps}, rng=rng)
            sample["imgs"] = self.modality.read(reader, path, sample["frame_inds"].reshape(-1), self.flow_cache)
        sample.update(modality=self.modality.name, stack=self.modality.stack)
        if label is not None:
            sample["label"] = label
        return self.transform(sample, rng=rng)

    def __repr__(self):
        return f"ClipLoader(sampler={self.sampler!r}, transform={self.transform!r}, modality={self.modality!r})"


@DATASETS.register()
class VideoDataset(_ListDataset):
    """Videos (files or JPEG frame folders) from a list file, as sampled, transformed clips.

    Args:
        list_file: ``path label`` or ``path l1,l2,…`` lines (see the module docstring).
        sampler: the frame sampler, e.g. ``{type: SegmentSampler, num_segments: 3, mode: train}``.
        transforms: clip transforms, e.g. ``[{type: Resize, short_side: 128}, {type: RandomCrop, size: 112},
            {type: RandomHorizontalFlip}, {type: Normalize}, {type: FormatClips}]``.
        root: folder the list's relative paths start from (default: the list file's folder).
        class_names: class-names file (labels may then be names).
        num_classes: number of classes (default: the number of names).
        multi_label: labels are comma-separated lists; ``label`` becomes multi-hot.
        on_error: "skip" or "raise" for missing or unreadable videos.
        max_skips: unreadable videos skipped in a row before giving up.
        fps: frame rate assumed for JPEG frame folders.
        modality: "rgb" (default), "flow", "rgbdiff", "rgb+flow" or "rgb+rgbdiff", or ``{name, stack, method, bound}``
            (:mod:`video.data.modality`).

    Sample: ``{"imgs", "label", "path"}`` (and ``num_frames``, ``fps``,
    ``frame_inds`` (views, T), ``clip_len``, ``modality``, ``stack``).
    """

    TEST_FILE = {"type": "VideoDataset", "file_keys": ("list_file",), "whole": {"root": None},
                 "from_run": {"class_names": "task.class_names"}}

    def __init__(self, list_file: str, sampler: dict, transforms: list = None, root: str = None,
                 class_names: str = None, num_classes: int = None, multi_label: bool = False,
                 on_error: str = "skip", max_skips: int = 10, fps: float = 30.0, modality=None):
        self.loader = ClipLoader(sampler, transforms, fps, modality)
        super().__init__(list_file, root, class_names, num_classes, multi_label, on_error, max_skips)

    def files_of(self, entry):
        return [self.resolve(entry.path)]

    def load(self, entry, rng, label):
        return self.loader(self.resolve(entry.path), rng, label)


@DATASETS.register()
class SyntheticVideos(VideoDataset):
    """A split of the generated video set (:mod:`video.data.synthetic`), made on first use.

    Args:
        split: "train", "dev" or "test".
        sampler, transforms, modality: as :class:`VideoDataset`. Flip or reverse clips only
            with the ``label_map`` that moves the motion label (a mirror image
            swaps move_left/move_right and the rotation sense; see
            ``configs/_base_/video_frames_synth.yaml``).
        labels: "motion" (12 classes, ``label`` an id) or "multilabel" (motion +
            shape, 18 classes, ``label`` multi-hot).
        num, seed, spec: the set (``spec``: :class:`SyntheticSpec` fields, ranges as lists).
        root: where the set lives (default: in ``$OAR_HOME``, see
            :func:`~video.data.synthetic.ensure_synthetic_set`).
        workers: processes for generating it (default: all cores).
    """

    SPLITS = ("train", "dev", "test")

    def __init__(self, split: str, sampler: dict, transforms: list = None, labels: str = "motion", num: int = 1200,
                 seed: int = 0, spec: dict = None, root: str = None, workers: int = None, on_error: str = "skip",
                 modality=None):
        if split not in ("train", "dev", "test") or labels not in LABEL_SETS:
            raise ConfigError(f"SyntheticVideos: split must be train, dev or test and labels one of {LABEL_SETS}, "
                              f"got {split!r}, {labels!r}")
        folder = ensure_synthetic_set(num, seed, spec_from_config(spec), root, workers)
        super().__init__(os.path.join(folder, f"{labels}_{split}.txt"), sampler, transforms,
                         class_names=os.path.join(folder, f"{labels}_classes.txt"),
                         multi_label=labels == "multilabel", on_error=on_error, modality=modality)


@DATASETS.register()
class HeldoutVideos(VideoDataset):
    """The held-out test set of the second renderer (:mod:`video.data.heldout`), made on first use: the same
    motions, shapes and list files as :class:`SyntheticVideos`, drawn by other code; nothing trains on it.

    Args:
        sampler, transforms, labels, on_error, modality: as :class:`SyntheticVideos` (test-time transforms: its frames
            are 96, 112 or 128 pixels square).
        num, seed: the set (:func:`~video.data.heldout.ensure_heldout_set`).
    """

    def __init__(self, sampler: dict, transforms: list = None, labels: str = "motion", num: int = 240, seed: int = 0,
                 on_error: str = "skip", modality=None):
        if labels not in LABEL_SETS:
            raise ConfigError(f"HeldoutVideos: labels must be one of {LABEL_SETS}, got {labels!r}")
        folder = ensure_heldout_set(num, seed)
        super().__init__(os.path.join(folder, f"{labels}_test.txt"), sampler, transforms,
                         class_names=os.path.join(folder, f"{labels}_classes.txt"),
                         multi_label=labels == "multilabel", on_error=on_error, modality=modality)


@DATASETS.register()
class FrameFeatureDataset(_ListDataset):
    """Per-video frame features (YouTube-8M style) from a list file.

    The features of list entry ``name`` are ``{root}/{modality}/{name}.npy``,
    one array (frames, dim) per modality (e.g. ``rgb`` and ``audio``, which must
    have the same number of frames); uint8 arrays are dequantised as YouTube-8M's
    (see :func:`video.data.features.load_features`).

    Args:
        list_file, root, class_names, num_classes, multi_label, on_error,
            max_skips: as :class:`VideoDataset` (multi-label by default).
        modalities: the feature folders to read.
        num_frames: frames per sample: None keeps all (variable length; batch
            with ``SequenceCollator``), else ``num_frames`` frames picked by
            ``mode``: "train" at random, "test" spread evenly (see
            :mod:`video.data.sampling`).
        max_frames: keep at most the first ``max_frames`` frames (before sampling).
        transforms: applied to the sample after sampling, e.g. ``[{type: RandomTimeReverse, keys: [rgb],
            label_map: [...]}]``.

    Sample: ``{<modality>: (T, dim) float32, …, "label", "path"}``.
    """

    TEST_FILE = {"file_keys": ("list_file",), "whole": {"root": None}, "from_run": {"class_names": "task.class_names"}}

    def __init__(self, list_file: str, modalities: list = ("rgb",), root: str = None, class_names: str = None,
                 num_classes: int = None, multi_label: bool = True, num_frames: int = None, mode: str = "test",
                 max_frames: int = None, on_error: str = "skip", max_skips: int = 10, transforms: list = None):
        self.modalities = [str(m) for m in modalities]
        if not self.modalities:
            raise ConfigError("FrameFeatureDataset: modalities must name at least one feature folder")
        if mode not in MODES:
            raise ConfigError(f"FrameFeatureDataset: mode must be one of {MODES}, got {mode!r}")
        if (num_frames is not None and num_frames < 1) or (max_frames is not None and max_frames < 1):
            raise ConfigError(f"FrameFeatureDataset: num_frames and max_frames must be positive or None, "
                              f"got {num_frames}, {max_frames}")
        self.num_frames, self.mode, self.max_frames = num_frames, mode, max_frames
        self.transform = Compose(transforms)
        super().__init__(list_file, root, class_names, num_classes, multi_label, on_error, max_skips)

    def files_of(self, entry):
        return [os.path.join(self.root, modality, entry.path + ".npy") for modality in self.modalities]

    def load(self, entry, rng, label):
        features = {m: load_features(f) for m, f in zip(self.modalities, self.files_of(entry))}
        lengths = {m: len(a) for m, a in features.items()}
        if len(set(lengths.values())) > 1:
            raise FeatureFileError(f"the modalities have different numbers of frames {lengths}")
        count = lengths[self.modalities[0]]
        if self.max_frames is not None:
            count = min(count, self.max_frames)
        if self.num_frames is None:
            keep = numpy.arange(count)
        elif self.mode == "train":
            keep = random_indices(count, self.num_frames, rng)[0]
        else:
            keep = uniform_indices(count, self.num_frames)[0]
        return self.transform({**{m: a[keep] for m, a in features.items()}, "label": label}, rng=rng)
