"""Image classification: cross-entropy training, top-k predictions with class names."""
import os

import numpy

import framework.nn.functional as F
from framework.config import ConfigError
from framework.engine import Task
from framework.engine.metrics import Accuracy
from framework.engine.task import RankedPrediction
from framework.registry import TASKS

from ..data.folder import image_input
from ..data.transforms import Compose, eval_transforms
from ..metrics import TopKAccuracy

__all__ = ["ImageClassification", "class_names_of"]


def class_names_of(source):
    """The class names ``source`` gives: a list (kept), the path of a text file (one name per non-empty line,
    line i = class i) or the path of an image folder (its class folders, sorted, as ``ImageFolder`` numbers
    them). A missing path, an empty list or a repeated name is a ConfigError naming it."""
    if isinstance(source, (list, tuple)):
        names = [str(c) for c in source]
    elif isinstance(source, (str, os.PathLike)):
        path = os.fspath(source)
        if os.path.isdir(path):
            names = sorted(e.name for e in os.scandir(path) if e.is_dir() and not e.name.startswith("."))
        elif os.path.isfile(path):
            with open(path, encoding="utf-8") as f:
                names = [line.strip() for line in f if line.strip()]
        else:
            raise ConfigError(f"ImageClassification: class_names file or image folder not found: {path}")
    else:
        raise ConfigError(f"ImageClassification: class_names must be a list of names, a file or an image folder, "
                          f"got {type(source).__name__}")
    if not names:
        raise ConfigError(f"ImageClassification: no class names in {source!r}")
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise ConfigError(f"ImageClassification: class names repeat in {source!r}: {repeated[:5]}")
    return names


@TASKS.register()
class ImageClassification(RankedPrediction, Task):
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
        class_names: names of the K classes, by id: a list, a file of names (one per line) or an image
            folder whose class folders name them (:func:`class_names_of`). Read from a path, they are written
            into a run directory by ``save_assets`` (``class_names.txt``).
        topk: how many (label, probability) pairs a prediction lists.
        image_size, resize: the evaluation crop and the short side before it.
        label_smoothing: of the training loss.
    """

    def __init__(self, model, metrics=None, class_names=None, topk: int = 5, image_size: int = 224,
                 resize: int = 256, label_smoothing: float = 0.0):
        self.model = model
        self._metrics = metrics
        self._names_from_path = isinstance(class_names, (str, os.PathLike))
        names = None if class_names is None else class_names_of(class_names)
        num_classes = getattr(model, "num_classes", None)
        if names is not None and num_classes and len(names) != num_classes:
            origin = f" (from {os.fspath(class_names)})" if self._names_from_path else ""
            raise ConfigError(f"ImageClassification: {len(names)} class_names{origin} for a model with "
                              f"{num_classes} classes; set model.num_classes: {len(names)}")
        self.class_names = names
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

    def save_assets(self, directory):
        """Class names read from a file or an image folder, written as ``class_names.txt`` (``task.class_names``);
        a list in the config needs no file."""
        if not self._names_from_path:
            return {}
        path = os.path.join(directory, "class_names.txt")
        with open(path, "w", encoding="utf-8") as f:
            f.write("".join(name + "\n" for name in self.class_names))
        return {"task.class_names": path}

    def preprocess(self, inputs):
        """Paths, encoded bytes or (H, W, 3) uint8 RGB arrays -> ``{"img": (N, 3, S, S) float32}``, S = image_size."""
        images = [self.transforms({"img": image_input(item, i)})["img"] for i, item in enumerate(inputs)]
        return {"img": numpy.stack(images)}

    def postprocess(self, outputs, top_k=None):
        """``{"prob": (N, K)}`` -> one ``{"label", "score", "topk"}`` dict per image (``top_k`` classes listed;
        None: the task's ``topk``)."""
        probs = outputs["prob"].numpy()
        count = self.topk if top_k is None else top_k
        order = numpy.argsort(-probs, axis=1, kind="stable")[:, :count]  # (N, k), best first
        names = self.class_names
        results = []
        for row, best in zip(probs, order):
            topk = [[names[c] if names else int(c), float(row[c])] for c in best]
            results.append({"label": topk[0][0], "score": topk[0][1], "topk": topk})
        return results
