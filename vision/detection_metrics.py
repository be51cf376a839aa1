"""Detection metrics: PASCAL VOC mean average precision (IoU 0.5, all-point or 11-point interpolation,
``difficult`` objects ignored) and COCO's mAP averaged over IoU 0.50:0.05:0.95 (101-point interpolation,
at most 100 detections an image).

Boxes are corners in continuous coordinates (IoU without VOC's +1 pixel), which leaves every overlap
unchanged when boxes are given relative to the image instead of in pixels.
"""
import numpy

from framework.engine.metrics import Metric, to_numpy
from framework.registry import METRICS

__all__ = ["average_precision", "voc_map", "coco_map", "DetectionMAP"]


def _iou(box, boxes):
    """IoU of one box (4,) with boxes (G, 4) -> (G,)."""
    lt, rb = numpy.maximum(box[:2], boxes[:, :2]), numpy.minimum(box[2:], boxes[:, 2:])
    inter = numpy.prod(numpy.clip(rb - lt, 0, None), axis=1)
    union = numpy.prod(box[2:] - box[:2]) + numpy.prod(boxes[:, 2:] - boxes[:, :2], axis=1) - inter
    return numpy.where(union > 0, inter / numpy.where(union > 0, union, 1), 0.0)


def average_precision(recall, precision, eleven_point=False):
    """VOC AP of a precision-recall curve (points in detection order): the area under the precision
    envelope (all-point, VOC 2010+), or the mean of the best precision at recall >= 0, 0.1, ..., 1
    (11-point, VOC 2007)."""
    if eleven_point:
        return float(numpy.mean([precision[recall >= t].max() if (recall >= t).any() else 0.0
                                 for t in numpy.linspace(0, 1, 11)]))
    r = numpy.concatenate([[0.0], recall, [1.0]])
    p = numpy.concatenate([[0.0], precision, [0.0]])
    p = numpy.maximum.accumulate(p[::-1])[::-1]
    steps = numpy.flatnonzero(r[1:] != r[:-1])
    return float(((r[steps + 1] - r[steps]) * p[steps + 1]).sum())


def _match_class(detections, truths, label, iou_threshold, max_dets=None):
    """True/false positives (in score order) of class ``label`` and its count of non-ignored objects.

    detections: per image (boxes (K, 4), scores (K,), labels (K,)); truths: per image (boxes (G, 4),
    labels (G,), ignored (G,) bool). A detection matching an ignored object counts as neither.
    """
    rows, positives = [], 0
    for image, ((boxes, scores, labels), (gt_boxes, gt_labels, ignored)) in enumerate(zip(detections, truths)):
        mine = labels == label
        if max_dets is not None:
            mine &= numpy.isin(numpy.arange(len(scores)), numpy.argsort(-scores, kind="stable")[:max_dets])
        rows += [(float(s), image, b) for s, b in zip(scores[mine], boxes[mine])]
        positives += int(((gt_labels == label) & ~ignored).sum())
    rows.sort(key=lambda row: -row[0])
    taken = [numpy.zeros(len(t[0]), dtype=bool) for t in truths]
    flags = []                                   # 1 true positive, 0 false positive, None ignored
    for _, image, box in rows:
        gt_boxes, gt_labels, ignored = truths[image]
        same = numpy.flatnonzero(gt_labels == label)
        if not len(same):
            flags.append(0)
            continue
        overlaps = _iou(box, gt_boxes[same])
        best = int(overlaps.argmax())
        if overlaps[best] < iou_threshold:
            flags.append(0)
        elif ignored[same[best]]:
            flags.append(None)
        elif not taken[image][same[best]]:
            taken[image][same[best]] = True
            flags.append(1)
        else:
            flags.append(0)
    kept = numpy.array([f for f in flags if f is not None], dtype=numpy.float64)
    return kept, positives


def voc_map(detections, truths, num_classes, iou_threshold=0.5, eleven_point=False):
    """PASCAL VOC mAP: per class, detections of all images by decreasing score are matched to the
    best-overlapping object of that class (IoU >= ``iou_threshold``; each object once, later matches are
    false positives; a match with a ``difficult`` object is ignored), AP by :func:`average_precision`,
    averaged over the classes that have objects.

    detections: per image ``(boxes (K, 4), scores (K,), labels (K,))``; truths: per image ``(boxes (G, 4),
    labels (G,), difficult (G,) bool)``. Returns ``{"map": …, "ap": [per class, NaN without objects]}``.
    """
    aps = []
    for label in range(num_classes):
        flags, positives = _match_class(detections, truths, label, iou_threshold)
        if positives == 0:
            aps.append(float("nan"))
            continue
        tp = numpy.cumsum(flags)
        recall = tp / positives
        precision = tp / numpy.arange(1, len(flags) + 1)
        aps.append(average_precision(recall, precision, eleven_point) if len(flags) else 0.0)
    valid = [a for a in aps if a == a]
    return {"map": float(numpy.mean(valid)) if valid else 0.0, "ap": aps}


def coco_map(detections, truths, num_classes, max_dets=100):
    """COCO mAP@[.5:.95]: for each IoU threshold 0.50, 0.55, ..., 0.95 and each class with objects, the
    precision envelope sampled at recall 0, 0.01, ..., 1 (101 points, 0 past the last recall), averaged;
    ignored objects (``iscrowd`` or ``difficult``) count as neither. Returns ``{"map", "map50", "map75"}``.
    """
    table = {}
    for threshold in numpy.round(numpy.arange(0.5, 0.951, 0.05), 2):
        per_class = []
        for label in range(num_classes):
            flags, positives = _match_class(detections, truths, label, threshold, max_dets)
            if positives == 0:
                continue
            tp = numpy.cumsum(flags)
            recall = tp / positives
            precision = numpy.maximum.accumulate((tp / numpy.arange(1, len(flags) + 1))[::-1])[::-1] \
                if len(flags) else numpy.zeros(0)
            points = numpy.searchsorted(recall, numpy.linspace(0, 1, 101), side="left")
            per_class.append(numpy.mean([precision[i] if i < len(precision) else 0.0 for i in points]))
        table[float(threshold)] = float(numpy.mean(per_class)) if per_class else 0.0
    return {"map": float(numpy.mean(list(table.values()))), "map50": table[0.5], "map75": table[0.75]}


@METRICS.register()
class DetectionMAP(Metric):
    """VOC mAP@0.5 (all-point ``map``, 11-point ``map_07``) and COCO ``map_coco`` over a split.

    Reads outputs ``det_boxes`` (N, K, 4), ``det_scores`` (N, K), ``det_labels`` (N, K) (label -1: no
    detection) and the batch's ``gt_boxes`` (N, G, 4), ``gt_labels`` (N, G) (-1: padding),
    ``gt_difficult`` (N, G).
    """

    counters = ("detections", "truths")

    def __init__(self, num_classes: int, coco: bool = True):
        self.num_classes, self.coco = int(num_classes), bool(coco)
        self.reset()

    def reset(self):
        self.detections, self.truths = [], []

    def update(self, outputs, batch):
        boxes, scores, labels = (to_numpy(outputs[k]) for k in ("det_boxes", "det_scores", "det_labels"))
        gt_boxes, gt_labels, difficult = (to_numpy(batch[k]) for k in ("gt_boxes", "gt_labels", "gt_difficult"))
        for i in range(len(boxes)):
            d, g = labels[i] >= 0, gt_labels[i] >= 0
            self.detections.append((boxes[i][d], scores[i][d], labels[i][d]))
            self.truths.append((gt_boxes[i][g], gt_labels[i][g], difficult[i][g].astype(bool)))

    def compute(self):
        out = {"map": voc_map(self.detections, self.truths, self.num_classes)["map"],
               "map_07": voc_map(self.detections, self.truths, self.num_classes, eleven_point=True)["map"]}
        if self.coco:
            out["map_coco"] = coco_map(self.detections, self.truths, self.num_classes)["map"]
        return out
