"""Detection metrics: PASCAL VOC mean average precision (IoU 0.5, all-point or 11-point interpolation,
``difficult`` objects ignored) and COCO's mAP averaged over IoU 0.50:0.05:0.95 (101-point interpolation,
at most 100 detections an image).

Boxes are corners in continuous coordinates (IoU without VOC's +1 pixel), which leaves every overlap
unchanged when boxes are given relative to the image instead of in pixels.
"""
import numpy

from framework.engine.metrics import Metric, to_numpy
from framework.nn.functional import box_iou
from framework.registry import METRICS

__all__ = ["average_precision", "voc_map", "coco_map", "DetectionMAP", "COCO_AREA_RANGES", "RELATIVE_AREA_RANGES"]


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


def _area(boxes):
    """Areas of corner boxes (..., 4) -> (...)."""
    return (boxes[..., 2] - boxes[..., 0]) * (boxes[..., 3] - boxes[..., 1])


def _outside(area, area_range):
    """Whether each area lies outside ``area_range`` (lo, hi), bounds included as COCO's."""
    return (area < area_range[0]) | (area > area_range[1])


def _class_matches(detections, truths, label, max_dets=None):
    """Class ``label``'s detections over all images in decreasing score order (stable, image by image among
    equal scores), each with the object of that class it overlaps most, which does not depend on an IoU
    threshold or an area range, so one call serves them all.

    detections: per image (boxes (K, 4), scores (K,), labels (K,)); truths: per image (boxes (G, 4), labels
    (G,), ignored (G,) bool); ``max_dets``: only each image's best that many detections (of all classes).
    Returns ``(best (D,) int, the object's index among the class's objects listed image by image, -1 where
    its image has none; iou (D,) with it; area (D,) of each detection; ignored (O,) and area (O,) of the
    objects)``.
    """
    parts = {key: [numpy.zeros(0)] for key in ("score", "best", "iou", "area", "ignored", "object_area")}
    count = 0
    for (boxes, scores, labels), (gt_boxes, gt_labels, ignored) in zip(detections, truths):
        mine = labels == label
        if max_dets is not None:
            mine &= numpy.isin(numpy.arange(len(scores)), numpy.argsort(-scores, kind="stable")[:max_dets])
        boxes, same = boxes[mine], gt_labels == label
        objects = gt_boxes[same]
        best, iou = numpy.full(len(boxes), -1), numpy.zeros(len(boxes))
        if len(objects) and len(boxes):
            overlaps = box_iou(boxes, objects).numpy()                                # (K, G)
            best = overlaps.argmax(axis=1)
            iou, best = overlaps[numpy.arange(len(boxes)), best], best + count
        for key, value in (("score", scores[mine]), ("best", best), ("iou", iou), ("area", _area(boxes)),
                           ("ignored", ignored[same]), ("object_area", _area(objects))):
            parts[key].append(value)
        count += len(objects)
    joined = {key: numpy.concatenate(values) for key, values in parts.items()}
    order = numpy.argsort(-joined["score"], kind="stable")
    return (joined["best"][order].astype(numpy.int64), joined["iou"][order], joined["area"][order],
            joined["ignored"].astype(bool), joined["object_area"])


def _flags(matches, iou_threshold, area_range=None):
    """True/false positives (in score order, float64) of :func:`_class_matches`' detections at
    ``iou_threshold``, and the count of objects that count.

    A detection is a true positive when its best object overlaps it by ``iou_threshold`` or more and no
    better-scored detection took that object first; one whose best object is ignored counts as neither.
    With ``area_range`` (lo, hi), as COCO's: objects whose area lies outside are ignored too, and so are
    detections that found nothing whose area lies outside.
    """
    best, iou, area, ignored, object_area = matches
    if area_range is not None:
        ignored = ignored | _outside(object_area, area_range)
    hit = (best >= 0) & (iou >= iou_threshold)
    hit_ignored = numpy.zeros(len(best), dtype=bool)
    hit_ignored[hit] = ignored[best[hit]]
    eligible = numpy.flatnonzero(hit & ~hit_ignored)
    true = numpy.zeros(len(best), dtype=bool)
    true[eligible[numpy.unique(best[eligible], return_index=True)[1]]] = True     # each object's first
    kept = ~hit_ignored
    if area_range is not None:
        kept &= true | ~_outside(area, area_range)
    return true[kept].astype(numpy.float64), int((~ignored).sum())


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
        flags, positives = _flags(_class_matches(detections, truths, label), iou_threshold)
        if positives == 0:
            aps.append(float("nan"))
            continue
        tp = numpy.cumsum(flags)
        recall = tp / positives
        precision = tp / numpy.arange(1, len(flags) + 1)
        aps.append(average_precision(recall, precision, eleven_point) if len(flags) else 0.0)
    valid = [a for a in aps if a == a]
    return {"map": float(numpy.mean(valid)) if valid else 0.0, "ap": aps}


#: COCO's object sizes by area, in pixels: small below 32², medium to 96², large above.
COCO_AREA_RANGES = {"small": (0.0, 32.0 ** 2), "medium": (32.0 ** 2, 96.0 ** 2), "large": (96.0 ** 2, numpy.inf)}

#: The same sizes for boxes relative to the image: COCO's 32 and 96 pixels as fractions of a 640-pixel side.
RELATIVE_AREA_RANGES = {name: (lo / 640.0 ** 2, hi / 640.0 ** 2) for name, (lo, hi) in COCO_AREA_RANGES.items()}


def coco_map(detections, truths, num_classes, max_dets=100, area_ranges=None):
    """COCO mAP@[.5:.95]: for each IoU threshold 0.50, 0.55, ..., 0.95 and each class with objects, the
    precision envelope sampled at recall 0, 0.01, ..., 1 (101 points, 0 past the last recall), averaged;
    ignored objects (``iscrowd`` or ``difficult``) count as neither. Returns ``{"map", "map50", "map75"}``,
    and with ``area_ranges`` ({name: (lo, hi)} areas in the boxes' units, e.g. :data:`COCO_AREA_RANGES`)
    ``map_<name>`` for each, as COCO's APs/APm/APl (objects outside the range ignored; -1 when the range
    holds no object, as COCO).
    """
    matches = [_class_matches(detections, truths, label, max_dets) for label in range(num_classes)]
    out = _coco_map_in(matches, None)
    for name, area_range in (area_ranges or {}).items():
        out[f"map_{name}"] = _coco_map_in(matches, area_range)["map"]
    return out


def _coco_map_in(matches, area_range):
    """:func:`coco_map` from each class's :func:`_class_matches`, over the objects of one area range (None: all)."""
    table = {}
    for threshold in numpy.round(numpy.arange(0.5, 0.951, 0.05), 2):
        per_class = []
        for class_matches in matches:
            flags, positives = _flags(class_matches, threshold, area_range)
            if positives == 0:
                continue
            tp = numpy.cumsum(flags)
            recall = tp / positives
            precision = numpy.maximum.accumulate((tp / numpy.arange(1, len(flags) + 1))[::-1])[::-1] \
                if len(flags) else numpy.zeros(0)
            points = numpy.searchsorted(recall, numpy.linspace(0, 1, 101), side="left")
            per_class.append(numpy.mean([precision[i] if i < len(precision) else 0.0 for i in points]))
        table[float(threshold)] = float(numpy.mean(per_class)) if per_class else -1.0
    return {"map": float(numpy.mean(list(table.values()))), "map50": table[0.5], "map75": table[0.75]}


@METRICS.register()
class DetectionMAP(Metric):
    """VOC mAP@0.5 (all-point ``map``, 11-point ``map_07``) and COCO ``map_coco`` over a split, with COCO's
    APs/APm/APl as ``map_coco_small``, ``map_coco_medium``, ``map_coco_large`` (:data:`RELATIVE_AREA_RANGES`:
    the boxes are relative to the image; -1 where no object has that size).

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
            coco = coco_map(self.detections, self.truths, self.num_classes, area_ranges=RELATIVE_AREA_RANGES)
            out["map_coco"] = coco["map"]
            out.update({f"map_coco_{name}": coco[f"map_{name}"] for name in RELATIVE_AREA_RANGES
                        if coco[f"map_{name}"] >= 0})
        return out
