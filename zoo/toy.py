"""A tiny end-to-end task for the skeleton's tests and smoke runs.

``ToyRings`` draws 2-D points on two noisy concentric rings (class 0 inside,
class 1 outside, so a linear model cannot separate them); ``MLP`` is a plain
multi-layer perceptron; ``VectorClassification`` couples them. Used by
``configs/_test/tiny.yaml``.
"""
import numpy

import framework
import framework.nn.functional as F
from framework import nn
from framework.engine import Task
from framework.engine.metrics import Accuracy
from framework.io import Dataset
from framework.registry import DATASETS, MODELS, TASKS

__all__ = ["ToyRings", "MLP", "VectorClassification"]

_SPLIT_OFFSET = {"train": 0, "eval": 1, "test": 2}


@DATASETS.register()
class ToyRings(Dataset):
    """``size`` points ``{"x": float32 (2,), "label": int64}`` on two rings of radius 1 and 2.

    The points of each split come from their own seed, so splits never overlap.
    """

    def __init__(self, size: int = 512, split: str = "train", noise: float = 0.25, seed: int = 0):
        if split not in _SPLIT_OFFSET:
            raise ValueError(f"ToyRings: split must be one of {sorted(_SPLIT_OFFSET)}, got {split!r}")
        rng = numpy.random.default_rng(seed * 3 + _SPLIT_OFFSET[split])
        self.label = rng.integers(0, 2, size).astype(numpy.int64)
        angle = rng.uniform(0, 2 * numpy.pi, size)
        radius = 1.0 + self.label + rng.normal(0, noise, size)
        self.x = numpy.stack([radius * numpy.cos(angle), radius * numpy.sin(angle)], axis=1).astype(numpy.float32)

    def __getitem__(self, index):
        return {"x": self.x[index], "label": self.label[index]}

    def __len__(self):
        return len(self.label)


@MODELS.register()
class MLP(nn.Layer):
    """Linear -> ReLU (-> Dropout) repeated ``num_layers`` times, then a linear classifier.

    Shapes: x (N, in_features) -> logits (N, num_classes).
    """

    def __init__(self, in_features: int = 2, hidden: int = 32, num_classes: int = 2, num_layers: int = 2,
                 dropout: float = 0.0):
        super().__init__()
        layers, width = [], in_features
        for _ in range(num_layers):
            layers += [nn.Linear(width, hidden), nn.ReLU()]
            if dropout:
                layers.append(nn.Dropout(dropout))
            width = hidden
        layers.append(nn.Linear(width, num_classes))
        self.net = nn.Sequential(*layers)

    def forward(self, x):
        return self.net(x)


@TASKS.register()
class VectorClassification(Task):
    """Classify fixed-size float vectors: cross-entropy training, argmax prediction.

    Batches: ``{"x": (N, D) float32, "label": (N,) int64}``. Raw inputs for
    ``predict_raw``: lists of numbers or strings of space-separated numbers.
    Outputs: ``{"label": int, "score": float}`` per input.
    """

    def __init__(self, model, metrics=None):
        self.model = model
        self._metrics = metrics

    def loss(self, batch):
        return F.cross_entropy(self.model(batch["x"]), batch["label"])

    def predict_batch(self, batch):
        probs = F.softmax(self.model(batch["x"]), axis=-1)
        return {"pred": probs.argmax(axis=-1), "prob": probs}

    def metrics(self):
        return self._metrics if self._metrics is not None else [Accuracy()]

    def preprocess(self, inputs):
        rows = [[float(v) for v in (item.split() if isinstance(item, str) else item)] for item in inputs]
        widths = {len(r) for r in rows}
        if len(widths) > 1:
            raise ValueError(f"VectorClassification: inputs have different lengths {sorted(widths)}")
        return {"x": numpy.asarray(rows, dtype=numpy.float32)}

    def postprocess(self, outputs):
        pred = outputs["pred"].numpy()
        prob = outputs["prob"].numpy()
        return [{"label": int(p), "score": float(prob[i, p])} for i, p in enumerate(pred)]
