"""Multi-label video recognition from per-frame features (YouTube-8M style): the task of Attention
Cluster, Attention LSTM and NeXtVLAD.

Training and evaluation read feature batches: one padded (N, T, D_m) array per
modality (``SequenceCollator`` adds ``<modality>_lengths``) and a multi-hot
``label`` (N, C). The loss is sigmoid cross entropy summed over classes and
averaged over videos, as the 2019 models trained. Predictions are the sigmoid
probabilities ``prob`` (N, C).

For raw inputs (video file paths) the task extracts every modality it names
itself over ``num_frames`` evenly spread frames, as ``tools/extract_features.py``
does: ``flow`` is the flow descriptor of each frame
(:mod:`video.data.flow_features`, settings ``flow``), any other modality (e.g.
``rgb``; at most one) the pooled features of its image ``backbone`` (built with
``num_classes=0``, loaded from ``backbone_weights``) through
:func:`video.data.features.feature_transforms` (``frame_size``; the flow is
computed on frames cut the same way). So ``predict([path.mp4], top_k=None)``
returns ``{"topk": [[class name, probability], ...]}`` for the ``top_k`` best
classes (None: the task's ``top_k``; all classes when that is None too), best
first. With ``label_groups`` (e.g. ``{motion: [...], shape: [...]}`` for a
label set of motions and shapes) each result also ranks every group's classes
alone: ``{"topk": [...], "motion_topk": [...], "shape_topk": [...]}``, each
list holding at most ``top_k`` of its group's classes; probabilities are the
sigmoid outputs, the same numbers in every list.
"""
import os

import numpy

import framework.nn.functional as F
from framework.config import ConfigError
from framework.engine import Task
from framework.engine.metrics import to_numpy
from framework.engine.task import RankedPrediction, check_top_k
from framework.io import SequenceCollator
from framework.registry import MODELS, TASKS

from ..data.datasets import read_class_names
from ..data.decode import VideoReader
from ..data.features import FeatureExtractor, feature_transforms, frames_for, resolve_path
from ..data.flow_features import FlowFeatureExtractor, flow_features_from_config
from ..data.sampling import uniform_indices
from ..metrics import YouTube8MMetrics
from .common import grouped_topk_result, resolve_label_groups, video_paths

__all__ = ["FeatureRecognition"]


@TASKS.register()
class FeatureRecognition(RankedPrediction, Task):
    """Multi-label classification of frame-feature sequences (see the module docstring).

    Args:
        model: a feature model: ``model(features [(N, T, D_m)], lengths (N,)) -> (N, C)`` logits.
        class_names: class-names file or list (line i = class i); needed for predictions on videos.
        modalities: the feature keys of a batch, in the model's order (e.g. [rgb, audio] or [rgb, flow]).
        backbone: config of the image model that makes the features of the modality other than ``flow``
            from frames (e.g. ``{type: resnet18, base_channels: 16}``; ``num_classes`` is set to 0).
        backbone_weights: its weights file (a path relative to the repository root is accepted).
        frame_size: crop size of the frames given to the backbone and to the flow.
        num_frames: frames per video (evenly spread); None takes all.
        flow: settings of the ``flow`` modality's descriptors, ``{method, bound, bins, min_speed}`` (default
            :class:`~video.data.flow_features.FlowFeatureSettings`; they must be those of the training features).
        top_k: classes per prediction list (None: all).
        label_groups: groups of classes ranked on their own in predictions, ``{group: [class name or id,
            ...]}`` (e.g. ``{motion: [move_left, ...], shape: [circle, ...]}``); result key ``<group>_topk``.
        gap_top_k: the top-k of GAP.
    """

    dynamic_axes = {"features": {0: "batch", 1: "frames"}, "lengths": {0: "batch"}}

    def __init__(self, model, class_names=None, modalities: list = ("rgb",), backbone: dict = None,
                 backbone_weights: str = None, frame_size: int = 224, num_frames: int = None, top_k: int = None,
                 label_groups: dict = None, gap_top_k: int = 20, metrics=None, flow: dict = None):
        self.model = model
        self.modalities = [str(m) for m in modalities]
        if isinstance(class_names, str):
            class_names = read_class_names(resolve_path(class_names))
        self.class_names = [str(c) for c in class_names] if class_names is not None else None
        self.label_groups = resolve_label_groups(label_groups, self.class_names, "FeatureRecognition")
        self.backbone_cfg, self.backbone_weights = backbone, backbone_weights
        self.top_k = check_top_k(top_k, "FeatureRecognition", ConfigError)
        self.frame_size, self.num_frames, self.gap_top_k = int(frame_size), num_frames, gap_top_k
        self.flow = flow_features_from_config(flow)
        self.collate_fn = SequenceCollator(self.modalities)
        self._metrics, self._extractors = metrics, {}

    def _forward(self, batch):
        missing = [m for m in self.modalities if m not in batch]
        if missing:
            raise KeyError(f"FeatureRecognition: the batch has no {missing} (keys: {sorted(batch)})")
        lengths = batch.get(self.modalities[0] + "_lengths")
        return self.model([batch[m] for m in self.modalities], lengths)

    def loss(self, batch):
        logits = self._forward(batch)
        return F.binary_cross_entropy_with_logits(logits, batch["label"], reduction="none").sum(axis=1).mean()

    def predict_batch(self, batch):
        return {"prob": F.sigmoid(self._forward(batch))}

    def metrics(self):
        return self._metrics if self._metrics is not None else [YouTube8MMetrics(self.gap_top_k)]

    def extractor(self, modality=None):
        """The extractor of ``modality`` (default the first; built on first use): a
        :class:`~video.data.flow_features.FlowFeatureExtractor` for ``flow``, else the
        :class:`~video.data.features.FeatureExtractor` of ``backbone``."""
        modality = self.modalities[0] if modality is None else modality
        if modality not in self._extractors:
            self._extractors[modality] = (FlowFeatureExtractor(self.frame_size, settings=self.flow)
                                          if modality == "flow" else self._backbone_extractor())
        return self._extractors[modality]

    def _backbone_extractor(self):
        """The :class:`~video.data.features.FeatureExtractor` of ``backbone``."""
        imaged = [m for m in self.modalities if m != "flow"]
        if self.backbone_cfg is None or len(imaged) != 1:
            raise ConfigError("FeatureRecognition: predicting on videos needs `backbone` (and its weights) and "
                              f"one modality besides flow for it, got backbone={self.backbone_cfg}, "
                              f"modalities={self.modalities}")
        from vision.models.weights import load_pretrained
        backbone = MODELS.build({**self.backbone_cfg, "num_classes": 0}, where="task.backbone")
        if self.backbone_weights:
            load_pretrained(backbone, resolve_path(self.backbone_weights), skip_head=True)
        if self.device:
            backbone.to(self.device)
        return FeatureExtractor(backbone, feature_transforms(self.frame_size))

    def features_of(self, path):
        """The features of the video file ``path`` in every modality: ``{modality: (T, dim)}``."""
        extractors = {m: self.extractor(m) for m in self.modalities}
        with VideoReader(os.fspath(path)) as reader:
            count = len(reader)
            indices = numpy.arange(count) if self.num_frames is None else uniform_indices(count, self.num_frames)[0]
            frames = frames_for(extractors, reader, indices)                 # each frame decoded once
        return {m: extractor(frames[m]) for m, extractor in extractors.items()}

    def preprocess(self, inputs):
        """Video paths -> a padded feature batch ``{modality: (N, T, D), modality_lengths: (N,)}``."""
        if self.class_names is None:
            raise ConfigError("FeatureRecognition: set class_names to predict on videos")
        paths = video_paths(inputs, "FeatureRecognition")
        return self.collate_fn([self.features_of(path) for path in paths])

    def postprocess(self, outputs, top_k=None):
        """``{"topk": [[name, prob], ...], "<group>_topk": [...], ...}`` per video, best first, ``top_k``
        classes per list (None: the task's ``top_k``; all when that is None)."""
        probs = to_numpy(outputs["prob"])
        if probs.shape[1] != len(self.class_names):
            raise ConfigError(f"FeatureRecognition: the model gives {probs.shape[1]} classes but class_names has "
                              f"{len(self.class_names)}")
        top_k = self._top_k(top_k)
        return [grouped_topk_result(row, self.class_names, top_k, self.label_groups) for row in probs]
