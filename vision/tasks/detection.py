"""Object detection with SSD: prior matching in the batch collation, the multibox loss, per-class NMS in
post-processing, boxes in the input image's pixels."""
import os

import numpy

import framework
import framework.nn.functional as F
from framework.config import ConfigError
from framework.engine import Task
from framework.engine.task import check_top_k, copy_asset
from framework.errors import InputError
from framework.registry import TASKS

from ..data.detection import detection_class_names
from ..data.folder import image_input
from ..data.transforms import IMAGENET_MEAN, IMAGENET_STD, resize_images
from ..detection_metrics import DetectionMAP
from ..drawing import draw_detections

__all__ = ["ObjectDetection", "DetectionCollate"]


class DetectionCollate:
    """Samples ``{"img": (3, S, S), "boxes": (G, 4) relative corners, "labels": (G,), "difficult": (G,)}`` ->
    a batch: ``img`` (N, 3, S, S); the training targets ``loc_targets`` (N, P, 4) (:func:`F.encode_boxes` of
    :func:`F.match_priors`) and ``classes`` (N, P) int64; and the objects padded for evaluation,
    ``gt_boxes`` (N, G_max, 4), ``gt_labels`` (N, G_max) (-1 pads), ``gt_difficult`` (N, G_max).
    Objects marked difficult are not matched to priors (neither trained on nor against)."""

    def __init__(self, priors, variances, threshold):
        self.priors, self.variances, self.threshold = numpy.asarray(priors), tuple(variances), float(threshold)

    def __call__(self, samples):
        count = max(1, max(len(s["labels"]) for s in samples))
        n, p = len(samples), len(self.priors)
        batch = {"img": numpy.stack([s["img"] for s in samples]).astype(numpy.float32),
                 "loc_targets": numpy.zeros((n, p, 4), dtype=numpy.float32),
                 "classes": numpy.zeros((n, p), dtype=numpy.int64),
                 "gt_boxes": numpy.zeros((n, count, 4), dtype=numpy.float32),
                 "gt_labels": numpy.full((n, count), -1, dtype=numpy.int64),
                 "gt_difficult": numpy.zeros((n, count), dtype=bool)}
        priors = framework.to_tensor(self.priors)
        for i, s in enumerate(samples):
            boxes = numpy.asarray(s["boxes"], dtype=numpy.float32).reshape(-1, 4)
            labels = numpy.asarray(s["labels"], dtype=numpy.int64)
            difficult = numpy.asarray(s.get("difficult", numpy.zeros(len(labels), bool)), dtype=bool)
            g = len(labels)
            batch["gt_boxes"][i, :g], batch["gt_labels"][i, :g], batch["gt_difficult"][i, :g] = boxes, labels, difficult
            classes, matched = F.match_priors(boxes[~difficult], labels[~difficult], self.priors, self.threshold)
            batch["classes"][i] = classes.numpy()
            batch["loc_targets"][i] = F.encode_boxes(matched, priors, self.variances).numpy()
        return batch


@TASKS.register()
class ObjectDetection(Task):
    """Detect objects with a single-shot detector (``SSDMobileNetV1``): a model mapping images (N, 3, S, S)
    to (N, P, 4 + C + 1) over its ``priors``: box offsets and class logits in training, decoded boxes
    (relative corners) and class probabilities in eval mode.

    Batches come from a detection dataset through :class:`DetectionCollate` (``collate_fn``). Detection:
    for each class, the ``nms_top_k`` best priors scoring at least the threshold, greedy NMS at
    ``nms_threshold`` (:func:`F.batched_nms`), then the ``top_k`` best over all classes.

    Raw inputs (``predict(inputs, score_threshold=None, top_k=None)``): image paths, encoded bytes or
    uint8 RGB arrays (H, W, 3), resized to S x S. Each result: ``{"boxes": [[x1, y1, x2, y2], ...],
    "labels": [...], "scores": [...]}`` in the input image's pixels, by decreasing score.

    Args:
        model: the detector.
        class_names: the C class names (a list or a file of names).
        score_threshold: the least score ``predict`` reports (default 0.4).
        eval_score_threshold: the least score kept for mAP (0.01, as SSD's evaluation).
        top_k: detections per image at most (default 100; evaluation keeps 200).
        nms_threshold: IoU above which a lower-scoring box of the same class is dropped.
        nms_top_k: candidates per class before NMS, best first (400, as SSD's evaluation).
        match_threshold: IoU from which a prior is trained on an object.
        neg_pos_ratio: background priors trained per positive (hard-negative mining).
        mean, std: the input normalisation (0-255 scale), as the dataset's Normalize.
    """

    predict_batch_size = 8

    def __init__(self, model, class_names, metrics=None, score_threshold: float = 0.4,
                 eval_score_threshold: float = 0.01, top_k: int = 100, nms_threshold: float = 0.45,
                 nms_top_k: int = 400, match_threshold: float = 0.5, neg_pos_ratio: float = 3.0,
                 mean: list = IMAGENET_MEAN, std: list = IMAGENET_STD):
        self.model = model
        self._metrics = metrics
        self._names_file = class_names if isinstance(class_names, (str, os.PathLike)) else None
        self.class_names = detection_class_names(class_names)
        if len(self.class_names) != model.num_classes:
            raise ConfigError(f"ObjectDetection: {len(self.class_names)} class_names for a model with "
                              f"{model.num_classes} classes; set model.num_classes: {len(self.class_names)}")
        self.score_threshold, self.eval_score_threshold = float(score_threshold), float(eval_score_threshold)
        self.top_k = check_top_k(top_k, "ObjectDetection", ConfigError)
        self.nms_top_k = check_top_k(nms_top_k, "ObjectDetection nms_top_k", ConfigError)
        self.nms_threshold, self.neg_pos_ratio = float(nms_threshold), float(neg_pos_ratio)
        self.mean, self.std = numpy.float32(mean), numpy.float32(std)
        self.collate_fn = DetectionCollate(model.priors.numpy(), model.variances, match_threshold)

    def loss(self, batch):
        out = self.model(batch["img"])                                            # (N, P, 4 + C + 1)
        loc, conf = out[..., :4], out[..., 4:]
        loc_loss, conf_loss = F.multibox_loss(loc, conf, batch["loc_targets"], batch["classes"], self.neg_pos_ratio)
        return loc_loss + conf_loss

    def detect(self, boxes, probs, score_threshold, top_k):
        """One image: boxes (P, 4), probs (P, C + 1) NumPy -> (boxes (K, 4), scores (K,), labels (K,)) after
        the per-class threshold and NMS, best first, K <= top_k."""
        scores = probs[:, 1:]                                                   # (P, C), background dropped
        prior, label = numpy.nonzero(scores >= score_threshold)
        if not len(prior):
            return numpy.zeros((0, 4), numpy.float32), numpy.zeros(0, numpy.float32), numpy.zeros(0, numpy.int64)
        order = numpy.lexsort((-scores[prior, label], label))                  # by class, best first in each
        prior, label = prior[order], label[order]
        rank = numpy.arange(len(label)) - numpy.searchsorted(label, label)   # place within its class
        prior, label = prior[rank < self.nms_top_k], label[rank < self.nms_top_k]
        chosen, chosen_scores = boxes[prior], scores[prior, label]
        keep = F.batched_nms(chosen, chosen_scores, label, self.nms_threshold, top_k).numpy()
        return chosen[keep], chosen_scores[keep], label[keep].astype(numpy.int64)

    def predict_batch(self, batch, score_threshold=None, top_k=None):
        """Images -> ``det_boxes`` (N, K, 4) relative corners, ``det_scores`` (N, K), ``det_labels`` (N, K)
        (-1 where an image has fewer than K detections); ``size`` passes through when the batch has it."""
        out = self.model(batch["img"]).numpy()                                    # (N, P, 4 + C + 1)
        boxes, probs = out[..., :4], out[..., 4:]
        threshold = self.eval_score_threshold if score_threshold is None else score_threshold
        limit = 200 if top_k is None else top_k
        found = [self.detect(b, p, threshold, limit) for b, p in zip(boxes, probs)]
        k = max(1, max(len(f[1]) for f in found))
        out = {"det_boxes": numpy.zeros((len(found), k, 4), numpy.float32),
               "det_scores": numpy.zeros((len(found), k), numpy.float32),
               "det_labels": numpy.full((len(found), k), -1, numpy.int64)}
        for i, (b, s, lab) in enumerate(found):
            out["det_boxes"][i, :len(s)], out["det_scores"][i, :len(s)], out["det_labels"][i, :len(s)] = b, s, lab
        if "size" in batch:
            out["size"] = batch["size"].numpy() if hasattr(batch["size"], "numpy") else batch["size"]
        return out

    def metrics(self):
        return self._metrics if self._metrics is not None else [DetectionMAP(num_classes=len(self.class_names))]

    def save_assets(self, directory):
        """A class-names file the task read, copied as ``class_names.txt`` (``task.class_names``)."""
        if self._names_file is None:
            return {}
        return {"task.class_names": copy_asset(self._names_file, directory, "class_names.txt")}

    def preprocess(self, inputs):
        """Paths, bytes or (H, W, 3) uint8 arrays -> ``{"img": (N, 3, S, S) float32, "size": (N, 2) (H, W)}``."""
        side = self.model.image_size
        images = [image_input(item, i) for i, item in enumerate(inputs)]
        resized = [(resize_images(im, side, side, "bilinear").astype(numpy.float32) - self.mean) / self.std
                   for im in images]
        return {"img": numpy.ascontiguousarray(numpy.stack(resized).transpose(0, 3, 1, 2)),
                "size": numpy.array([im.shape[:2] for im in images], dtype=numpy.int64)}

    def postprocess(self, outputs):
        """Detections -> one ``{"boxes", "labels", "scores"}`` per image, boxes in its pixels (rounded to 0.1)."""
        results = []
        for boxes, scores, labels, (h, w) in zip(outputs["det_boxes"], outputs["det_scores"],
                                                 outputs["det_labels"], outputs["size"]):
            found = labels >= 0
            pixels = numpy.clip(boxes[found], 0, 1) * numpy.float32([w, h, w, h])
            results.append({"boxes": [[round(float(v), 1) for v in b] for b in pixels],
                            "labels": [self.class_names[c] for c in labels[found]],
                            "scores": [round(float(s), 4) for s in scores[found]]})
        return results

    def draw(self, item, result):
        """The input image ``item`` (a path, bytes or an RGB array) with ``result``'s boxes drawn: (H, W, 3)
        uint8 RGB (:func:`vision.drawing.draw_detections`)."""
        return draw_detections(image_input(item, 0), result)

    def predict(self, inputs, score_threshold=None, top_k=None, batch_size=None):
        """A batch dict -> detections (:meth:`predict_batch`); raw inputs -> one result dict per image, in
        input order. ``score_threshold``: the least score listed (None: the task's); ``top_k``: boxes per
        image at most (None: the task's)."""
        if isinstance(inputs, dict):
            return self.predict_batch(inputs)
        if score_threshold is not None and not 0 <= float(score_threshold) <= 1:
            raise InputError(f"ObjectDetection.predict: score_threshold must be in [0, 1], got {score_threshold}")
        top_k = check_top_k(top_k, "ObjectDetection.predict")
        return list(self.predict_iter(inputs, batch_size, score_threshold=score_threshold, top_k=top_k))

    def predict_raw(self, inputs, device=None, score_threshold=None, top_k=None):
        """One batch of raw inputs -> a list of result dicts (see :meth:`predict`)."""
        self.model.eval()
        with framework.no_grad():
            batch = self.preprocess(list(inputs))
            outputs = self.predict_batch({"img": framework.to_tensor(batch["img"], device=device),
                                          "size": batch["size"]},
                                         self.score_threshold if score_threshold is None else score_threshold,
                                         self.top_k if top_k is None else top_k)
        return self.postprocess(outputs)
