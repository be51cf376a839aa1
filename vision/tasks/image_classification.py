"""Image classification: cross-entropy training, top-k predictions with class names."""
import os

import numpy

import framework.nn.functional as F
from framework.engine import Task
from framework.engine.metrics import Accuracy
from framework.registry import TASKS

from ..data.folder import decode_image, read_image
from ..data.transforms import Compose, eval_transforms
from ..metrics import TopKAccuracy

__all__ = ["ImageClassification"]


@TASKS.register()
class ImageClassification(Task):
    """Classify images with any model mapping (N, 3, H, W) float32 to logits (N, K).

    Batches: ``{"img": (N, 3, H, W) float32, "label": (N,) int64}`` (what
    ``ImageFolder`` with ``Normalize`` and ``ToCHW`` yields). Raw inputs for
    ``predict_raw``: image paths, encoded image bytes or uint8 RGB arrays
    (H, W, 3), resized (short
    side ``resize``), centre-cropped to ``image_size`` and normalised.
    Each prediction: ``{"label": best, "score": its probability,
    "topk": [[label, probability], …]}`` with labels from ``class_names``
    (class ids when not given).

    Args:
        model: the classifier.
        metrics: metric objects (default: accuracy "acc" and "top5").
        class_names: names of the K classes, by id.
        topk: how many (label, probability) pairs a prediction lists.
        image_size, resize: the evaluation crop and the short side before it.
        label_smoothing: of the training loss.
    """

    def __init__(self, model, metrics=None, class_names: list = None, topk: int = 5, image_size: int = 224,
                 resize: int = 256, label_smoothing: float = 0.0):
        self.model = model
        self._metrics = metrics
        num_classes = getattr(model, "num_classes", None)
        if class_names is not None and num_classes and len(class_names) != num_classes:
            raise ValueError(f"ImageClassification: {len(class_names)} class_names for a model with "
                             f"{num_classes} classes")
        self.class_names = None if class_names is None else [str(c) for c in class_names]
        if topk < 1:
            raise ValueError(f"ImageClassification: topk must be at least 1, got {topk}")
        self.topk, self.label_smoothing = int(topk), float(label_smoothing)
        self.transforms = Compose(eval_transforms(image_size, resize))

    def loss(self, batch):
        return F.cross_entropy(self.model(batch["img"]), batch["label"], label_smoothing=self.label_smoothing)

    def predict_batch(self, batch):
        probs = F.softmax(self.model(batch["img"]), axis=-1)  # (N, K)
        return {"pred": probs.argmax(axis=-1), "prob": probs}

    def metrics(self):
        return self._metrics if self._metrics is not None else [Accuracy(), TopKAccuracy(topk=(5,))]

    def _image(self, item, position):
        if isinstance(item, (str, os.PathLike)):
            return read_image(item)
        if isinstance(item, bytes):
            return decode_image(item, f"input {position}")
        array = numpy.asarray(item)
        if array.ndim != 3 or array.shape[-1] != 3 or array.dtype != numpy.uint8:
            raise ValueError(f"ImageClassification: input {position} must be an image path, encoded image bytes "
                             f"or a uint8 RGB array (H, W, 3), got {array.dtype} of shape {array.shape}")
        return array

    def preprocess(self, inputs):
        """Paths, encoded bytes or (H, W, 3) uint8 RGB arrays -> ``{"img": (N, 3, S, S) float32}``, S = image_size."""
        images = [self.transforms({"img": self._image(item, i)})["img"] for i, item in enumerate(inputs)]
        return {"img": numpy.stack(images)}

    def postprocess(self, outputs):
        """``{"prob": (N, K)}`` -> one ``{"label", "score", "topk"}`` dict per image."""
        probs = outputs["prob"].numpy()
        order = numpy.argsort(-probs, axis=1, kind="stable")[:, :self.topk]  # (N, k), best first
        names = self.class_names
        results = []
        for row, best in zip(probs, order):
            topk = [[names[c] if names else int(c), float(row[c])] for c in best]
            results.append({"label": topk[0][0], "score": topk[0][1], "topk": topk})
        return results
