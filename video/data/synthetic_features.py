"""The feature dataset of the generated set: per-frame features made by the image backbone trained on its frames.

The backbone (trained per frame, see :mod:`video.data.frame_attributes`) is run
once over every video of the set, and its pooled features are stored under
``$OAR_HOME`` (:func:`synthetic_features_folder`); the feature models (Attention
Cluster, Attention LSTM, NeXtVLAD) train on them through
:class:`SyntheticFeatures`, with the set's multi-label list (12 motions + 6
shapes). Training may add the features of each training video's 7 mirror
images, their motion labels moved to match (:func:`mirror_label_map`). With
``modalities: [rgb, flow]`` the folder also holds the flow descriptors of the
same frames (:mod:`video.data.flow_features`); those of the mirror images are
the originals' moved by :func:`~video.data.flow_features.mirror_flow_features`.
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
from .features import (FeatureExtractor, extract_features, extract_modalities, feature_transforms, load_features,
                       resolve_path, save_features)
from .flow_features import FlowFeatureExtractor, flow_features_from_config, mirror_flow_features
from .synthetic import ensure_synthetic_set, spec_from_config
from .transforms import mirror_array

__all__ = ["synthetic_features_folder", "MIRROR_LABEL_MAPS", "mirror_label_map", "SyntheticFeatures"]


def synthetic_features_folder(backbone, backbone_weights, size, num_frames, num=1200, seed=0, spec=None,
                              root=None, mirrored=False, flow=None):
    """The features of the whole generated set made by ``backbone`` (config) with ``backbone_weights``,
    extracted first (resumably) into ``$OAR_HOME/synthetic_features/<digest>`` unless complete.

    Returns ``(features folder, set folder)``; the folder holds ``rgb/videos/<i>.npy`` (num_frames, dim)
    and the ``multilabel_{train,dev,test}.txt`` lists. With ``flow`` (a
    :class:`~video.data.flow_features.FlowFeatureSettings`, part of the digest), also the flow descriptors
    of the same frames, ``flow/videos/<i>.npy`` (num_frames, 5 * bins + 6). With ``mirrored``, also the
    features of the training videos' 7 mirror images and ``multilabel_train_mirrored.txt`` (see
    :func:`mirror_label_map`).
    """
    folder = ensure_synthetic_set(num, seed, spec_from_config(spec), root)
    weights = resolve_path(backbone_weights)
    with open(weights, "rb") as f:
        digest = hashlib.sha256(f.read()).hexdigest()
    fields = {"set": os.path.basename(folder), "backbone": backbone, "weights": digest, "size": size,
              "num_frames": num_frames}
    if flow is not None:                      # rgb-only folders keep the digest they always had
        fields["flow"] = flow.key()
    key = json.dumps(fields, sort_keys=True)
    out = os.path.join(oar_home(), "synthetic_features", hashlib.sha256(key.encode()).hexdigest()[:12])
    marker = os.path.join(out, "complete.json")
    mirrored_marker = os.path.join(out, "multilabel_train_mirrored.txt")
    if os.path.isfile(marker) and (os.path.isfile(mirrored_marker) or not mirrored):
        return out, folder
    model = MODELS.build({**backbone, "num_classes": 0}, where="backbone")
    load_pretrained(model, weights, skip_head=True)
    extractors = {"rgb": FeatureExtractor(model, feature_transforms(size))}
    if flow is not None:
        extractors["flow"] = FlowFeatureExtractor(size, settings=flow)
    if not os.path.isfile(marker):
        for split in ("train", "dev", "test"):
            list_name = f"multilabel_{split}.txt"
            entries = read_list_file(os.path.join(folder, list_name), multi_label=True)
            extract_modalities(entries, folder, out, extractors, num_frames=num_frames, list_name=list_name,
                               on_error="raise", progress=f"{split} videos ({', '.join(extractors)})")
        with atomic_write(marker) as f:
            f.write(key + "\n")
    if mirrored:
        _mirrored_train_features(folder, out, extractors["rgb"], num_frames, "flow" in extractors)
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


def _mirrored_train_features(folder, out, extractor, num_frames, flow):
    """Features of the 7 mirror images (:func:`~video.data.transforms.mirror_array`) of every training video under
    ``out/rgb/m<k>/`` (and, with ``flow``, their flow descriptors under ``out/flow/m<k>/``) and the list
    ``multilabel_train_mirrored.txt`` naming them and the originals, with the motion labels moved
    (:func:`mirror_label_map`)."""
    entries = read_list_file(os.path.join(folder, "multilabel_train.txt"), multi_label=True)
    lines = [f"{os.path.splitext(e.path)[0]} {','.join(map(str, e.labels))}" for e in entries]
    for which in range(1, 8):
        moved = dict(enumerate(mirror_label_map(which)))     # motions move; shapes (12-17) stay
        mirrored = lambda frames, which=which: extractor(mirror_array(frames, which, 1))  # noqa: E731
        extract_features(entries, folder, out, mirrored, num_frames=num_frames, modality=f"rgb/m{which}",
                         list_name=f"m{which}.txt", on_error="raise", progress=f"mirror {which}")
        if flow:
            _mirror_flow_files(entries, out, which)
        lines += [f"m{which}/{os.path.splitext(e.path)[0]} {','.join(str(moved.get(l, l)) for l in e.labels)}"
                  for e in entries]
    with atomic_write(os.path.join(out, "multilabel_train_mirrored.txt")) as f:
        f.write("\n".join(lines) + "\n")


def _mirror_flow_files(entries, out, which):
    """Write ``out/flow/m<which>/<name>.npy``: the flow descriptors of each entry's mirror image ``which``,
    moved from the original's (:func:`~video.data.flow_features.mirror_flow_features`)."""
    for entry in entries:
        name = os.path.splitext(entry.path)[0] + ".npy"
        target = os.path.join(out, "flow", f"m{which}", name)
        if not os.path.exists(target):
            save_features(target, mirror_flow_features(load_features(os.path.join(out, "flow", name)), which))


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
        modalities: the features of a sample, among ``rgb`` (the backbone's) and ``flow`` (the flow
            descriptors of the same frames, :mod:`video.data.flow_features`).
        flow: the flow descriptor settings ``{method, bound, bins, min_speed}`` (with ``flow`` in
            ``modalities``; default :class:`~video.data.flow_features.FlowFeatureSettings`).
        num, seed, spec, root: the set, as :class:`~video.data.datasets.SyntheticVideos`.

    Sample: ``{"rgb": (T, dim) float32, ["flow": (T, 5 * bins + 6) float32,] "label": (18,) float32
    multi-hot, "path"}``.
    """

    MODALITIES = ("rgb", "flow")

    def __init__(self, split: str, backbone: dict, backbone_weights: str, size: int = 64, extract_frames: int = 16,
                 num_frames: int = None, mode: str = "test", max_frames: int = None, num: int = 1200,
                 seed: int = 0, spec: dict = None, root: str = None, transforms: list = None, mirrored: bool = False,
                 modalities: list = ("rgb",), flow: dict = None):
        if split not in ("train", "dev", "test") or (mirrored and split != "train"):
            raise ConfigError(f"SyntheticFeatures: split must be train, dev or test (mirrored: train only), got "
                              f"{split!r}, mirrored={mirrored}")
        modalities = [str(m) for m in modalities]
        if not modalities or set(modalities) - set(self.MODALITIES) or len(set(modalities)) != len(modalities):
            raise ConfigError(f"SyntheticFeatures: modalities must name each of {list(self.MODALITIES)} at most "
                              f"once, got {modalities}")
        settings = flow_features_from_config(flow) if "flow" in modalities else None
        out, folder = synthetic_features_folder(backbone, backbone_weights, size, extract_frames, num, seed, spec,
                                                root, mirrored, settings)
        list_name = "multilabel_train_mirrored.txt" if mirrored else f"multilabel_{split}.txt"
        super().__init__(os.path.join(out, list_name), modalities, root=out,
                         class_names=os.path.join(folder, "multilabel_classes.txt"), num_frames=num_frames,
                         mode=mode, max_frames=max_frames, on_error="raise", transforms=transforms)
