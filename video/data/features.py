"""Frame features: the per-video ``.npy`` files of the feature datasets, and extracting them with a backbone.

A feature file holds one array (frames, dim): float32, or uint8 quantised as
YouTube-8M's (dequantised on reading, see :func:`dequantize`). Files are
written under a temporary name and renamed, so a file that exists is complete.

:func:`extract_features` (one modality) and :func:`extract_modalities` (several, each video decoded once)
run an image backbone (e.g. ``resnet18`` with
``num_classes=0``, whose output is the globally pooled feature) over sampled
frames of every video of a list file and writes the feature dataset read by
:class:`video.data.datasets.FrameFeatureDataset`: ``{out}/{modality}/{name}.npy``
and a list file ``{out}/{list file name}`` with lines ``name l1,l2,…``, where
``name`` is the video's list path without its extension. Videos whose feature
file exists are not extracted again, so an interrupted run resumes.
"""
import os
import time
import warnings

import numpy

import framework
from framework.progress import progress_bar
from vision.data.transforms import Compose

from .decode import VideoDecodeError, VideoReader
from .sampling import uniform_indices
from framework.errors import UserError
from framework.serialization import atomic_write
from framework.npyfile import load_npy

__all__ = ["FeatureFileError", "dequantize", "load_features", "save_features", "FeatureExtractor",
           "extract_features", "extract_modalities", "feature_transforms", "resolve_path", "frames_for"]

_REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


class FeatureFileError(UserError, ValueError):
    """A feature file cannot be read or is not a (frames, dim) array; the message names the file."""


def dequantize(features, max_value=2.0, min_value=-2.0):
    """uint8 features -> float32 in [min_value, max_value] (YouTube-8M: ``x * 4/255 - 2 + 4/512``). Shape kept."""
    span = max_value - min_value
    return (features.astype(numpy.float32) * (span / 255.0) + (min_value + span / 512.0)).astype(numpy.float32)


def load_features(path):
    """The features of ``path`` as float32 (frames, dim); uint8 files are dequantised."""
    path = os.fspath(path)
    try:
        array = load_npy(path)
    except FileNotFoundError:
        raise
    except (OSError, ValueError, EOFError) as exc:
        raise FeatureFileError(f"cannot read feature file {path}: {exc}") from None
    if not isinstance(array, numpy.ndarray) or array.ndim != 2 or array.shape[0] == 0 or array.shape[1] == 0:
        raise FeatureFileError(f"feature file {path} must hold a (frames, dim) array with frames, dim >= 1, "
                               f"got shape {getattr(array, 'shape', None)}")
    if array.dtype == numpy.uint8:
        return dequantize(array)
    if array.dtype.kind != "f":
        raise FeatureFileError(f"feature file {path} holds {array.dtype} values; expected float or uint8")
    return array.astype(numpy.float32, copy=False)


def save_features(path, features):
    """Write ``features`` (frames, dim) to ``path`` (.npy) atomically, creating its folder."""
    path = os.fspath(path)
    features = numpy.asarray(features)
    if features.ndim != 2:
        raise ValueError(f"save_features: expected (frames, dim), got shape {features.shape}")
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    with atomic_write(path, "wb") as f:
        numpy.save(f, features, allow_pickle=False)


def resolve_path(path):
    """``path`` as given when it exists, else relative to the repository root (shipped backbone weights, class
    lists)."""
    if path is None or os.path.isabs(path) or os.path.exists(path):
        return path
    return os.path.join(_REPO, path)


def feature_transforms(size=224, resize=None):
    """The frame pipeline for feature extraction as config dicts: short side to ``resize`` (default
    ``size * 8 // 7``), centre crop ``size``, ImageNet normalisation, channels first."""
    return [{"type": "Resize", "short_side": resize or size * 8 // 7}, {"type": "CenterCrop", "size": size},
            {"type": "Normalize"}, {"type": "ToCHW"}]


class FeatureExtractor:
    """A backbone applied to frames: ``extractor(frames)`` with frames (T, H, W, 3) uint8 -> (T, dim) float32.

    ``model`` maps images (N, 3, h, w) to (N, dim) features, or to feature maps
    (N, dim, h', w') that are averaged over space. ``transforms`` (config dicts
    or objects) turn the frames into (T, 3, h, w) float32 (default:
    :func:`feature_transforms`). Frames go through the model ``batch_size`` at
    a time, in eval mode, without gradients.
    """

    def __init__(self, model, transforms=None, batch_size=32):
        self.model = model
        self.transform = Compose(transforms if transforms is not None else feature_transforms())
        self.batch_size = int(batch_size)

    def __call__(self, frames):
        images = self.transform({"imgs": frames})["imgs"]
        if images.ndim != 4:
            raise ValueError(f"FeatureExtractor: the transforms must give (T, C, H, W) images, got {images.shape}")
        self.model.eval()
        outputs = []
        with framework.no_grad():
            for start in range(0, len(images), self.batch_size):
                out = self.model(framework.to_tensor(images[start:start + self.batch_size])).numpy()
                outputs.append(out.mean(axis=(2, 3)) if out.ndim == 4 else out)
        features = numpy.concatenate(outputs).astype(numpy.float32)
        if features.ndim != 2:
            raise ValueError(f"FeatureExtractor: the model gives {features.shape[1:]} per image; expected (dim,)")
        return features


def frames_for(extractors, reader, indices):
    """What each of ``extractors`` ({name: extractor}) takes for sampled frames ``indices`` (T,) of an open
    :class:`~video.data.decode.VideoReader`, every frame decoded once: ``{name: frames}``. An extractor with
    ``frame_indices(indices, count, path)`` names the frames it needs as an int array of any shape (e.g. (T, 2)
    pairs for flow) and gets them in that shape (..., H, W, 3); any other gets the frames (T, H, W, 3) uint8."""
    wanted = {name: numpy.asarray(extractor.frame_indices(indices, len(reader), reader.path))
              if hasattr(extractor, "frame_indices") else numpy.asarray(indices)
              for name, extractor in extractors.items()}
    unique = numpy.unique(numpy.concatenate([w.reshape(-1) for w in wanted.values()]))
    frames = reader.get_frames(unique)
    return {name: frames[numpy.searchsorted(unique, w)] for name, w in wanted.items()}


def _feature_name(list_path):
    return os.path.splitext(list_path)[0]


def _write_list(path, lines):
    with atomic_write(path) as f:
        f.write("".join(line + "\n" for line in lines))


def extract_features(entries, root, out, extractor, num_frames=None, modality="rgb", list_name="features.txt",
                     on_error="skip", progress=None):
    """Write the features of one modality for every list entry and the feature list file:
    :func:`extract_modalities` with ``{modality: extractor}``; returns its counts."""
    return extract_modalities(entries, root, out, {modality: extractor}, num_frames=num_frames, list_name=list_name,
                              on_error=on_error, progress=progress)


def extract_modalities(entries, root, out, extractors, num_frames=None, list_name="features.txt", on_error="skip",
                       progress=None):
    """Write the features of every list entry in every modality and the feature list file; returns a dict of
    counts. Each video is opened once and each frame the extractors need decoded once (:func:`frames_for`).

    Args:
        entries: :class:`video.data.datasets.ListEntry` items (from
            ``read_list_file``); their paths are relative to ``root``.
        out: the output folder; features go to ``{out}/{modality}/{name}.npy``.
        extractors: ``{modality: extractor}``; an extractor is a :class:`FeatureExtractor` (or any frames ->
            (T, dim) callable), or one that names the frames it needs with ``frame_indices`` (see
            :func:`frames_for`), such as :class:`video.data.flow_features.FlowFeatureExtractor` (``flow``).
        num_frames: frames per video, spread evenly (centres of equal parts);
            None takes every frame.
        list_name: file name of the feature list written in ``out``.
        on_error: "skip" (warn and leave the video out of the list) or "raise"
            for videos that cannot be decoded.
        progress: None or False shows nothing; True, or a description such as
            ``"train videos"``, shows a progress bar on stderr
            (:func:`framework.progress.progress_bar`, hidden when stderr is not
            a terminal); a callable is called as ``progress(done, total)``
            after each video.

    Returns ``{"videos", "extracted", "existing", "failed", "seconds", "list_file"}``: a video counts as
    extracted when any of its modalities was, as existing when every one was there already.
    """
    start = time.perf_counter()
    counts = {"extracted": 0, "existing": 0}
    failed, lines = [], []
    bar = None
    if progress is True or isinstance(progress, str):
        bar = progress_bar(total=len(entries), desc=progress if isinstance(progress, str) else "videos",
                           unit="video")
    try:
        for done, entry in enumerate(entries, start=1):
            _extract_one(entry, root, out, extractors, num_frames, on_error, counts, failed, lines)
            if bar is not None:
                bar.update(1)
            elif callable(progress):
                progress(done, len(entries))
    finally:
        if bar is not None:
            bar.close()
    list_file = os.path.join(out, list_name)
    os.makedirs(out, exist_ok=True)
    _write_list(list_file, lines)
    return {"videos": len(entries), **counts, "failed": failed, "seconds": round(time.perf_counter() - start, 2),
            "list_file": list_file}


def _extract_one(entry, root, out, extractors, num_frames, on_error, counts, failed, lines):
    """Extract (or find) the features of one list entry in every modality, counting it and adding its
    feature-list line."""
    name = _feature_name(entry.path)
    targets = {modality: os.path.join(out, modality, name + ".npy") for modality in extractors}
    missing = {modality: extractor for modality, extractor in extractors.items()
               if not os.path.exists(targets[modality])}
    labels = ",".join(str(label) for label in entry.labels)
    if not missing:
        counts["existing"] += 1
        lines.append(f"{name} {labels}")
        return
    source = entry.path if os.path.isabs(entry.path) else os.path.join(root, entry.path)
    try:
        with VideoReader(source) as reader:
            indices = numpy.arange(len(reader)) if num_frames is None else uniform_indices(len(reader), num_frames)[0]
            frames = frames_for(missing, reader, indices)
    except (VideoDecodeError, OSError) as exc:
        if on_error == "raise":
            raise type(exc)(f"line {entry.line}: {exc}") from exc
        warnings.warn(f"line {entry.line}: skipping {source}: {exc}", RuntimeWarning, stacklevel=3)
        failed.append(entry.path)
        return
    for modality, extractor in missing.items():
        save_features(targets[modality], extractor(frames[modality]))
    counts["extracted"] += 1
    lines.append(f"{name} {labels}")
