"""Specs for framework/ops/boxes.py: references loop over single boxes and priors with SSD's definitions
(Liu et al. 2016; ssd.pytorch's ``match`` and ``MultiBoxLoss``)."""
import math

import numpy

from framework.nn import functional as F
from ..opspec import OpSpec, away_from


def _corners(rng, n, low=0.0, high=1.0, min_size=0.05):
    """n corner boxes inside [low, high] with sides of at least ``min_size``."""
    x1, y1 = rng.uniform(low, high - min_size, n), rng.uniform(low, high - min_size, n)
    w = rng.uniform(min_size, high - x1)
    h = rng.uniform(min_size, high - y1)
    return numpy.stack([x1, y1, x1 + w, y1 + h], axis=1)


def _centre_size(rng, n):
    return numpy.stack([rng.uniform(0.1, 0.9, n), rng.uniform(0.1, 0.9, n),
                        rng.uniform(0.05, 0.6, n), rng.uniform(0.05, 0.6, n)], axis=1)


def _iou_one(a, b):
    iw = max(0.0, min(a[2], b[2]) - max(a[0], b[0]))
    ih = max(0.0, min(a[3], b[3]) - max(a[1], b[1]))
    inter = iw * ih
    union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter
    return inter / union if union > 0 else 0.0


def iou_reference(a, b):
    return numpy.array([[_iou_one(x, y) for y in b] for x in a])


def _iou_inputs(rng):
    a, b = _corners(rng, 5), _corners(rng, 7)
    b[0] = a[1]                                    # an identical pair: IoU 1
    b[1] = [2.0, 2.0, 3.0, 3.0]                    # disjoint from all: IoU 0
    return [a, b]


PRIOR_ARGS = dict(feature_sizes=[3, (2, 1)], min_sizes=[0.2, 0.5], max_sizes=[0.5, 0.9],
                  aspect_ratios=[[2.0], [2.0, 3.0]])


def prior_reference():
    rows = []
    for size, s, big, ratios in zip(*PRIOR_ARGS.values()):
        h, w = (size, size) if isinstance(size, int) else size
        for i in range(h):
            for j in range(w):
                cx, cy = (j + 0.5) / w, (i + 0.5) / h
                rows.append([cx, cy, s, s])
                rows.append([cx, cy, math.sqrt(s * big), math.sqrt(s * big)])
                for r in ratios:
                    rows.append([cx, cy, s * math.sqrt(r), s / math.sqrt(r)])
                    rows.append([cx, cy, s / math.sqrt(r), s * math.sqrt(r)])
    return numpy.clip(numpy.array(rows), 0, 1)


def encode_reference(boxes, priors, v=(0.1, 0.2)):
    out = numpy.zeros(boxes.shape)
    for i, (b, p) in enumerate(zip(boxes, priors)):
        cx, cy, w, h = (b[0] + b[2]) / 2, (b[1] + b[3]) / 2, b[2] - b[0], b[3] - b[1]
        out[i] = [(cx - p[0]) / (v[0] * p[2]), (cy - p[1]) / (v[0] * p[3]),
                  math.log(w / p[2]) / v[1], math.log(h / p[3]) / v[1]]
    return out


def decode_reference(loc, priors, v=(0.1, 0.2)):
    out = numpy.zeros(loc.shape)
    for n in range(loc.shape[0]):
        for i, (l, p) in enumerate(zip(loc[n], priors)):
            cx, cy = p[0] + l[0] * v[0] * p[2], p[1] + l[1] * v[0] * p[3]
            w, h = p[2] * math.exp(l[2] * v[1]), p[3] * math.exp(l[3] * v[1])
            out[n, i] = [cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2]
    return out


def _match_inputs(rng):
    priors = _centre_size(rng, 30)
    boxes = _corners(rng, 4, min_size=0.2)
    return [boxes, numpy.array([2, 0, 1, 2]), priors]


def match_reference(boxes, labels, priors, threshold=0.5):
    """ssd.pytorch's ``match``, one prior at a time."""
    corners = [[p[0] - p[2] / 2, p[1] - p[3] / 2, p[0] + p[2] / 2, p[1] + p[3] / 2] for p in priors]
    overlaps = iou_reference(boxes, corners)
    truth = [int(numpy.argmax(overlaps[:, j])) for j in range(len(priors))]
    best = [float(numpy.max(overlaps[:, j])) for j in range(len(priors))]
    for g in range(len(boxes)):
        j = int(numpy.argmax(overlaps[g]))
        best[j], truth[j] = 2.0, g
    classes = numpy.array([labels[truth[j]] + 1 if best[j] >= threshold else 0 for j in range(len(priors))])
    matched = numpy.array([boxes[truth[j]] if classes[j] else corners[j] for j in range(len(priors))])
    return classes, matched


def smooth_l1_reference(x, y, beta=1.0):
    d = (x - y).ravel()
    return sum(0.5 * v * v / beta if abs(v) < beta else abs(v) - 0.5 * beta for v in d) / d.size


def _smooth_inputs(rng):
    return [away_from(rng.uniform(-3, 3, (4, 6)), [-1.0, 1.0]), numpy.zeros((4, 6))]


def _mining_inputs(rng):
    classes = numpy.zeros((3, 12), dtype=numpy.int64)
    classes[0, [1, 5]] = [1, 2]
    classes[1, 3] = 1
    classes[1, :] = numpy.where(numpy.arange(12) < 11, classes[1], 2)    # 2 positives of 12
    return [rng.uniform(0, 5, (3, 12)), classes]


def mining_reference(losses, classes, ratio=3.0):
    out = numpy.zeros(losses.shape, dtype=bool)
    for n in range(losses.shape[0]):
        negatives = [j for j in range(losses.shape[1]) if classes[n, j] == 0]
        count = min(int(ratio * (len(classes[n]) - len(negatives))), len(negatives))
        for j in sorted(negatives, key=lambda j: -losses[n, j])[:count]:
            out[n, j] = True
    return out


def _multibox_inputs(rng):
    classes = numpy.zeros((2, 10), dtype=numpy.int64)
    classes[0, [2, 7]] = [1, 3]
    classes[1, 4] = 2
    return [rng.uniform(-2, 2, (2, 10, 4)), rng.uniform(-2, 2, (2, 10, 4)), rng.uniform(-3, 3, (2, 10, 4)),
            classes]


def multibox_reference(loc, conf, targets, classes, ratio=3.0):
    count = max((classes > 0).sum(), 1)
    loc_loss = sum(smooth_l1_reference(loc[n, j], targets[n, j]) * 4
                   for n in range(loc.shape[0]) for j in range(loc.shape[1]) if classes[n, j] > 0)
    ce = numpy.array([[-(row[c] - math.log(sum(math.exp(v) for v in row))) for row, c in zip(conf[n], classes[n])]
                      for n in range(conf.shape[0])])
    chosen = mining_reference(ce, classes, ratio) | (classes > 0)
    return loc_loss / count, (ce * chosen).sum() / count


def _nms_inputs(rng):
    boxes = _corners(rng, 12, min_size=0.1) * 100
    boxes[3] = boxes[0] + [1, 1, 1, 1]             # near-duplicates, suppressed by the better one
    boxes[8] = boxes[5] + [2, 0, 2, 0]
    return [boxes, rng.uniform(0, 1, 12), numpy.array([0, 1, 0, 0, 2, 1, 1, 0, 1, 2, 2, 0])]


def nms_reference(boxes, scores, threshold=0.45, labels=None):
    """A box survives when no kept box of its label with a higher score (lower index on ties) covers it."""
    labels = numpy.zeros(len(scores), dtype=int) if labels is None else labels
    kept = []
    for i in sorted(range(len(scores)), key=lambda i: (-scores[i], i)):
        if all(labels[k] != labels[i] or _iou_one(boxes[k], boxes[i]) <= threshold for k in kept):
            kept.append(i)
    return numpy.array(kept)


SPECS = [
    OpSpec("box_iou", lambda a, b: F.box_iou(a, b), _iou_inputs, iou_reference, grad=False),
    OpSpec("prior_boxes", lambda: F.prior_boxes(**PRIOR_ARGS), lambda rng: [], prior_reference, grad=False),
    OpSpec("encode_boxes", lambda b, p: F.encode_boxes(b, p),
           lambda rng: [_corners(rng, 6, min_size=0.1), _centre_size(rng, 6)], encode_reference),
    OpSpec("decode_boxes", lambda l, p: F.decode_boxes(l, p),
           lambda rng: [rng.uniform(-2, 2, (2, 6, 4)), _centre_size(rng, 6)], decode_reference),
    OpSpec("match_priors", lambda b, l, p: F.match_priors(b, l, p), _match_inputs, match_reference, grad=False),
    OpSpec("smooth_l1_loss", lambda x, y: F.smooth_l1_loss(x, y), _smooth_inputs, smooth_l1_reference, wrt=[0]),
    OpSpec("hard_negative_mask", lambda l, c: F.hard_negative_mask(l, c), _mining_inputs, mining_reference,
           grad=False),
    OpSpec("multibox_loss", lambda l, c, t, k: F.multibox_loss(l, c, t, k), _multibox_inputs, multibox_reference,
           wrt=[0, 1]),
    OpSpec("nms", lambda b, s: F.nms(b, s), lambda rng: _nms_inputs(rng)[:2], nms_reference, grad=False),
    OpSpec("batched_nms", lambda b, s, l: F.batched_nms(b, s, l), _nms_inputs,
           lambda b, s, l: nms_reference(b, s, labels=l), grad=False),
]
