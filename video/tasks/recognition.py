"""Single-label video recognition with the frame models (TSN, TSM, StNet, Non-local)."""
import os

import numpy

import framework.nn.functional as F
from framework.config import ConfigError
from framework.engine import Task
from framework.engine.task import RankedPrediction, check_top_k, copy_asset
from framework.engine.metrics import Accuracy
from framework.registry import TASKS
from vision.metrics import TopKAccuracy

from ..data.datasets import ClipLoader, read_class_names
from ..metrics import MeanClassAccuracy
from .common import topk_result, video_paths

__all__ = ["VideoRecognition"]


@TASKS.register()
class VideoRecognition(RankedPrediction, Task):
    """Classify videos with a model mapping clips (B, T, C, H, W) to scores (B, K); softmax cross entropy.

    Batches: ``{"imgs": (B, N, T, C, H, W) float32, "label": (B,) int64}`` with
    N views per video (temporal clips x crops, from the data pipeline). The
    views are flattened into the batch, (B * N, T, C, H, W); training averages
    the N views' scores before the loss (N is 1 in training), prediction
    averages their softmax probabilities (multi-view testing).

    Raw inputs (``predict(paths, top_k=None)``): video file paths, decoded and
    sampled by ``sampler`` / ``transforms`` (the test pipeline, as in a dataset
    config). Each result: ``{"topk": [[class name, probability], …]}``, best
    first, ``top_k`` classes (None: the task's ``top_k``; all when that is None
    too). A path that cannot be read raises
    :class:`~video.data.decode.VideoDecodeError` naming it.

    Args:
        model: the video model.
        metrics: metric objects (default: "acc", "top5" and "mean_class_acc").
        class_names: a list of K names, or the path of a class-names file (read when first needed).
        top_k: classes listed per prediction (None: all).
        sampler, transforms: the pipeline for raw video paths.
        modality: what the frames hold (:mod:`video.data.modality`; default RGB): "flow", "rgbdiff",
            "rgb+flow", "rgb+rgbdiff" or ``{name, stack, method, bound}``; flow and differences are computed
            here in the pre-processing.
        label_smoothing: of the training loss.
    """

    def __init__(self, model, metrics=None, class_names=None, top_k: int = None, sampler: dict = None,
                 transforms: list = None, label_smoothing: float = 0.0, modality=None):
        self.model = model
        self._metrics = metrics
        self._class_names = class_names if isinstance(class_names, str) or class_names is None else \
            [str(c) for c in class_names]
        self._class_names_file = class_names if isinstance(class_names, str) else None   # for save_assets
        if not isinstance(self._class_names, str):
            self._check_names(self._class_names)
        self.top_k = check_top_k(top_k, "VideoRecognition", ConfigError)
        self.label_smoothing = float(label_smoothing)
        self.loader = ClipLoader(sampler, transforms, modality=modality) if sampler is not None else None

    def _check_names(self, names):
        num_classes = getattr(self.model, "num_classes", None)
        if names is not None and num_classes and len(names) != num_classes:
            raise ConfigError(f"VideoRecognition: {len(names)} class_names for a model with {num_classes} classes")

    @property
    def class_names(self):
        """The K class names (a class-names file is read on first use), or None."""
        if isinstance(self._class_names, str):
            names = read_class_names(self._class_names)
            self._check_names(names)
            self._class_names = names
        return self._class_names

    def save_assets(self, directory):
        """A class-names file the task reads, copied as ``class_names.txt`` (``task.class_names``); names
        listed in the config need no file."""
        if self._class_names_file is None or not os.path.isfile(self._class_names_file):
            return {}
        return {"task.class_names": copy_asset(self._class_names_file, directory, "class_names.txt")}

    def scores(self, imgs):
        """Views (B, N, T, C, H, W) -> scores (B, N, K), one row per view."""
        if imgs.ndim != 6:
            raise ValueError(f"VideoRecognition: expected imgs (B, views, T, C, H, W), got {imgs.shape}")
        b, n = imgs.shape[:2]
        scores = self.model(imgs.reshape((b * n,) + tuple(imgs.shape[2:])))  # (B*N, K) from (B*N, T, C, H, W)
        return scores.reshape((b, n, -1))                                    # (B, N, K)

    def loss(self, batch):
        return F.cross_entropy(self.scores(batch["imgs"]).mean(axis=1), batch["label"],
                               label_smoothing=self.label_smoothing)

    def predict_batch(self, batch):
        probs = F.softmax(self.scores(batch["imgs"]), axis=-1).mean(axis=1)  # (B, K): views averaged
        return {"pred": probs.argmax(axis=-1), "prob": probs}

    def metrics(self):
        if self._metrics is not None:
            return self._metrics
        return [Accuracy(), TopKAccuracy(topk=(5,)), MeanClassAccuracy()]

    def preprocess(self, inputs):
        """Video paths -> ``{"imgs": (B, N, T, C, H, W) float32}`` through the task's test pipeline."""
        if self.loader is None:
            raise ConfigError("VideoRecognition: predicting on video files needs the task's sampler and transforms")
        paths = video_paths(inputs, "VideoRecognition")
        return {"imgs": numpy.stack([self.loader(path, rng=numpy.random.default_rng(0))["imgs"] for path in paths])}

    def postprocess(self, outputs, top_k=None):
        """``{"prob": (B, K)}`` -> one ``{"topk": [[name, prob], …]}`` per video, ``top_k`` classes (None: the
        task's ``top_k``; all when that is None)."""
        top_k = self._top_k(top_k)
        return [topk_result(row, self.class_names, top_k) for row in outputs["prob"].numpy()]
