"""The feature dataset of the generated set: per-frame features made by the image backbone trained on its frames.

The backbone (trained per frame, see :mod:`video.data.frame_attributes`) is run
once over every video of the set, and its pooled features are stored under
``$OAR_HOME`` (:func:`synthetic_features_folder`); the feature models (Attention
Cluster, Attention LSTM, NeXtVLAD) train on them through
:class:`SyntheticFeatures`, with the set's multi-label list (12 motions + 6
shapes). Training may add the features of each training video's 7 mirror
images, their motion labels moved to match (:func:`mirror_label_map`).
"""
import hashlib
import json
import os

from framework.config import ConfigError
from framework.fetch import oar_home
from framework.registry import DATASETS, MODELS
from framework.serialization import atomic_write
from vision.models.weights import load_pretrained

from .datasets import FrameFeatureDataset, read_list_file
from .features import FeatureExtractor, extract_features, feature_transforms, resolve_path
from .synthetic import ensure_synthetic_set, spec_from_config
from .transforms import mirror_array

__all__ = ["synthetic_features_folder", "MIRROR_LABEL_MAPS", "mirror_label_map", "SyntheticFeatures"]


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
        with atomic_write(marker) as f:
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
    with atomic_write(os.path.join(out, "multilabel_train_mirrored.txt")) as f:
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
