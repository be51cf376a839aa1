"""Box ops for single-shot detection (SSD, Liu et al., ECCV 2016): IoU matrices, prior boxes, matching,
centre-size encoding with variances, smooth-L1 and the multibox loss with hard-negative mining, and
non-maximum suppression.

Conventions: corner boxes are ``(x1, y1, x2, y2)``; priors are centre-size ``(cx, cy, w, h)``; SSD
works in coordinates normalised by the image size. ``decode_boxes``, ``encode_boxes``, ``smooth_l1_loss``
and ``multibox_loss`` are differentiable (built from ops that trace and export); the rest are not
(integer or selection outputs) and compute on the raw arrays.
"""
import math

import numpy

from .. import backend
from ..tensor import Function, Tensor, OpError
from .loss import cross_entropy
from .manipulation import concat
from .math import exp, log

__all__ = ["box_iou", "prior_boxes", "encode_boxes", "decode_boxes", "match_priors", "smooth_l1_loss",
           "hard_negative_mask", "multibox_loss", "nms", "batched_nms"]

_REDUCTIONS = ("mean", "sum", "none")


def _array(x):
    return x.data if isinstance(x, Tensor) else x


def _host(x):
    """A Tensor or array as a NumPy array."""
    return backend.to_device(_array(x), "cpu")


def _check_boxes(op, boxes, name="boxes"):
    if boxes.ndim < 1 or boxes.shape[-1] != 4:
        raise OpError(f"{op}: {name} must end in 4 coordinates, got shape {tuple(boxes.shape)}")


def _iou(xp, a, b):
    """IoU of corner boxes a (N, 4) and b (M, 4) -> (N, M) on raw arrays (0 where both areas are 0)."""
    lt = xp.maximum(a[:, None, :2], b[None, :, :2])                                    # (N, M, 2)
    rb = xp.minimum(a[:, None, 2:], b[None, :, 2:])                                    # (N, M, 2)
    wh = xp.clip(rb - lt, 0, None)
    inter = wh[..., 0] * wh[..., 1]
    area_a = (a[:, 2] - a[:, 0]).clip(0) * (a[:, 3] - a[:, 1]).clip(0)
    area_b = (b[:, 2] - b[:, 0]).clip(0) * (b[:, 3] - b[:, 1]).clip(0)
    union = area_a[:, None] + area_b[None, :] - inter
    return xp.where(union > 0, inter / xp.where(union > 0, union, 1), 0).astype(a.dtype, copy=False)


def box_iou(boxes1, boxes2):
    """Intersection over union of every pair of corner boxes (not differentiable).

    Shapes: boxes1 (N, 4), boxes2 (M, 4) -> (N, M); degenerate pairs (zero union) give 0.
    """
    a, b = _array(boxes1), _array(boxes2)
    for name, x in (("boxes1", a), ("boxes2", b)):
        if x.ndim != 2:
            raise OpError(f"box_iou: {name} must be (N, 4), got shape {tuple(x.shape)}")
        _check_boxes("box_iou", x, name)
    return Tensor(_iou(backend.get_array_module(a), a, b))


def prior_boxes(feature_sizes, min_sizes, max_sizes, aspect_ratios, clip=True, dtype="float32"):
    """SSD's default boxes, centre-size ``(cx, cy, w, h)`` in normalised coordinates.

    Feature map k of size (H_k, W_k) puts boxes at the centres ((j + 0.5) / W_k, (i + 0.5) / H_k), in
    row-major order; at each centre, in this order: a square of side ``min_sizes[k]``, a square of side
    sqrt(min_sizes[k] * max_sizes[k]), then for each ratio r of ``aspect_ratios[k]`` the boxes
    (s sqrt(r), s / sqrt(r)) and (s / sqrt(r), s sqrt(r)) with s = min_sizes[k]. Sizes are fractions of
    the image side. ``clip`` clips every coordinate to [0, 1].

    Shapes: feature_sizes K ints or (H, W) pairs -> (P, 4), P = sum_k H_k W_k (2 + 2 len(aspect_ratios[k])).
    """
    if not len(feature_sizes) == len(min_sizes) == len(max_sizes) == len(aspect_ratios):
        raise OpError(f"prior_boxes: feature_sizes, min_sizes, max_sizes and aspect_ratios must have one entry "
                      f"per feature map, got {len(feature_sizes)}, {len(min_sizes)}, {len(max_sizes)}, "
                      f"{len(aspect_ratios)}")
    out = []
    for size, s_min, s_max, ratios in zip(feature_sizes, min_sizes, max_sizes, aspect_ratios):
        h, w = (size, size) if numpy.ndim(size) == 0 else size
        if min(ratios, default=1.0) <= 0 or s_min <= 0 or s_max < s_min:
            raise OpError(f"prior_boxes: sizes must be positive with max >= min and ratios positive, got "
                          f"{s_min}, {s_max}, {list(ratios)}")
        shapes = [(s_min, s_min), (math.sqrt(s_min * s_max),) * 2]
        for r in ratios:
            shapes += [(s_min * math.sqrt(r), s_min / math.sqrt(r)), (s_min / math.sqrt(r), s_min * math.sqrt(r))]
        cy, cx = numpy.meshgrid((numpy.arange(h) + 0.5) / h, (numpy.arange(w) + 0.5) / w, indexing="ij")
        centres = numpy.stack([cx.ravel(), cy.ravel()], axis=1)                       # (H*W, 2)
        sizes = numpy.asarray(shapes, dtype=numpy.float64)                             # (A, 2)
        boxes = numpy.concatenate([numpy.repeat(centres, len(shapes), axis=0),
                                   numpy.tile(sizes, (len(centres), 1))], axis=1)      # (H*W*A, 4)
        out.append(boxes)
    priors = numpy.concatenate(out)
    if clip:
        priors = priors.clip(0, 1)
    return Tensor(priors.astype(dtype))


def _variances(op, variances):
    if len(variances) != 2 or min(variances) <= 0:
        raise OpError(f"{op}: variances must be two positive numbers (centre, size), got {variances}")
    return float(variances[0]), float(variances[1])


def encode_boxes(boxes, priors, variances=(0.1, 0.2)):
    """SSD regression targets of corner boxes against centre-size priors:
    ((cx - pcx) / (v0 pw), (cy - pcy) / (v0 ph), log(w / pw) / v1, log(h / ph) / v1).

    Shapes: boxes (*, P, 4), priors (P, 4) -> (*, P, 4). Boxes need positive width and height.
    """
    _check_boxes("encode_boxes", boxes)
    _check_boxes("encode_boxes", priors, "priors")
    v0, v1 = _variances("encode_boxes", variances)
    wh = boxes[..., 2:] - boxes[..., :2]
    centre = (boxes[..., :2] + boxes[..., 2:]) * 0.5
    return concat([(centre - priors[:, :2]) / (priors[:, 2:] * v0), log(wh / priors[:, 2:]) * (1 / v1)], axis=-1)


def decode_boxes(loc, priors, variances=(0.1, 0.2)):
    """Corner boxes from SSD offsets (the inverse of :func:`encode_boxes`):
    centre = p_c + loc_c v0 p_wh, size = p_wh exp(loc_wh v1), then (centre -+ size / 2).

    Shapes: loc (*, P, 4), priors (P, 4) -> (*, P, 4).
    """
    _check_boxes("decode_boxes", loc, "loc")
    _check_boxes("decode_boxes", priors, "priors")
    v0, v1 = _variances("decode_boxes", variances)
    centre = priors[:, :2] + loc[..., :2] * (priors[:, 2:] * v0)
    half = priors[:, 2:] * exp(loc[..., 2:] * v1) * 0.5
    return concat([centre - half, centre + half], axis=-1)


def match_priors(boxes, labels, priors, threshold=0.5):
    """Assign ground truth to priors as SSD does (not differentiable).

    Each ground-truth box first takes the prior it overlaps most (a later box wins a shared prior); every
    other prior takes the box it overlaps most when that IoU is at least ``threshold``, else the
    background. Labels are shifted by one: 0 is the background, ground-truth class c becomes c + 1.

    Shapes: boxes (G, 4) corners, labels (G,) ints in [0, C), priors (P, 4) centre-size ->
    ``(classes (P,) int64, matched (P, 4) corner boxes)`` (matched boxes of background priors are the
    prior itself, as corners).
    """
    b, lab, p = _array(boxes), _array(labels), _array(priors)
    _check_boxes("match_priors", b)
    _check_boxes("match_priors", p, "priors")
    if b.ndim != 2 or lab.shape != (b.shape[0],):
        raise OpError(f"match_priors: boxes must be (G, 4) and labels (G,), got {tuple(b.shape)} and "
                      f"{tuple(lab.shape)}")
    xp = backend.get_array_module(p)
    corners = xp.concatenate([p[:, :2] - p[:, 2:] / 2, p[:, 2:] / 2 + p[:, :2]], axis=1)
    classes = xp.zeros(p.shape[0], dtype=xp.int64)
    if b.shape[0] == 0:
        return Tensor(classes), Tensor(corners)
    overlaps = _iou(xp, b.astype(p.dtype, copy=False), corners)                        # (G, P)
    best_prior = overlaps.argmax(axis=1)                                               # (G,)
    best_truth = overlaps.argmax(axis=0)                                               # (P,)
    best_overlap = overlaps.max(axis=0)
    best_overlap[best_prior] = 2.0
    best_truth[best_prior] = xp.arange(b.shape[0])             # fancy assignment: the last box wins a prior
    keep = best_overlap >= threshold
    classes[keep] = lab[best_truth[keep]].astype(xp.int64) + 1
    matched = xp.where(keep[:, None], b[best_truth].astype(p.dtype, copy=False), corners)
    return Tensor(classes), Tensor(matched)


class SmoothL1(Function):
    """loss = 0.5 d^2 / beta where |d| < beta, else |d| - 0.5 beta, with d = x - y."""

    def forward(self, x, y):
        xp = self.xp
        d = x - y
        small = xp.abs(d) < self.beta
        self.saved = d, small
        loss = xp.where(small, 0.5 * d * d / self.beta, xp.abs(d) - 0.5 * self.beta)
        if self.reduction == "none":
            return loss
        return loss.sum() / (loss.size if self.reduction == "mean" else 1)

    def backward(self, gy):
        xp = self.xp
        d, small = self.saved
        g = xp.where(small, d / self.beta, xp.sign(d))
        if self.reduction == "mean":
            gy = gy / d.size
        g = g * gy
        return g, -g


def smooth_l1_loss(input, label, beta=1.0, reduction="mean"):
    """Smooth L1 (Huber divided by ``beta``), as PyTorch's ``smooth_l1_loss``.

    Shapes: input (*), label (*) -> a scalar, or (*) for ``reduction="none"``.
    """
    if input.shape != label.shape:
        raise OpError(f"smooth_l1_loss: input {input.shape} and label {label.shape} differ")
    if reduction not in _REDUCTIONS or not beta > 0:
        raise OpError(f"smooth_l1_loss: reduction must be one of {_REDUCTIONS} and beta positive, got "
                      f"{reduction!r} and {beta}")
    return SmoothL1.apply(input, label, beta=float(beta), reduction=reduction)


def hard_negative_mask(losses, classes, neg_pos_ratio=3.0):
    """The background priors SSD trains on: per image, the ``neg_pos_ratio`` x (its positives) background
    priors of highest loss (ties to the lower index), at most all of them (not differentiable).

    Shapes: losses (N, P) float, classes (N, P) ints (0 background) -> (N, P) bool.
    """
    loss, cls = _array(losses), _array(classes)
    if loss.ndim != 2 or cls.shape != loss.shape:
        raise OpError(f"hard_negative_mask: losses and classes must be (N, P) alike, got {tuple(loss.shape)} "
                      f"and {tuple(cls.shape)}")
    xp = backend.get_array_module(loss)
    positive = cls > 0
    background = xp.where(positive, -xp.inf, loss)
    stable = {"kind": "stable"} if xp is numpy else {}                                 # CuPy's sort is stable
    order = xp.argsort(-background, axis=1, **stable)                                  # (N, P), hardest first
    rank = xp.argsort(order, axis=1)                                                    # (N, P), 0 = hardest
    count = xp.minimum(xp.floor(neg_pos_ratio * positive.sum(axis=1)), (~positive).sum(axis=1))   # (N,)
    return Tensor((rank < count[:, None]) & ~positive)


def multibox_loss(loc, conf, loc_targets, classes, neg_pos_ratio=3.0, beta=1.0):
    """SSD's loss: smooth-L1 of the positive priors' offsets plus softmax cross entropy of the positives and
    the hard negatives (:func:`hard_negative_mask`), both summed and divided by the number of positives
    in the batch (at least 1).

    Shapes: loc (N, P, 4), conf (N, P, C+1) logits (class 0 the background), loc_targets (N, P, 4)
    (:func:`encode_boxes` of the matched boxes), classes (N, P) ints -> ``(loc_loss, conf_loss)`` scalars.
    """
    if loc.ndim != 3 or conf.ndim != 3 or loc.shape != loc_targets.shape or conf.shape[:2] != loc.shape[:2]:
        raise OpError(f"multibox_loss: loc (N, P, 4), conf (N, P, C+1), loc_targets like loc expected, got "
                      f"{loc.shape}, {conf.shape}, {loc_targets.shape}")
    cls = _array(classes)
    xp = backend.get_array_module(cls)
    positive = (cls > 0).astype(loc.data.dtype)                                         # (N, P)
    count = max(float(positive.sum()), 1.0)
    per_prior = smooth_l1_loss(loc, loc_targets, beta=beta, reduction="none").sum(axis=-1)   # (N, P)
    loc_loss = (per_prior * Tensor(positive)).sum() * (1 / count)
    ce = cross_entropy(conf, Tensor(xp.asarray(cls, dtype=xp.int64)), reduction="none")       # (N, P)
    chosen = hard_negative_mask(ce.data, cls, neg_pos_ratio).data | (cls > 0)
    conf_loss = (ce * Tensor(chosen.astype(conf.data.dtype))).sum() * (1 / count)
    return loc_loss, conf_loss


_NMS_ROWS = 128     # boxes whose IoU rows are computed together: (128, K) at a time, whatever K


def _greedy_nms(boxes, scores, iou_threshold):
    """Indices kept by greedy NMS on NumPy arrays, by decreasing score (ties to the lower index): in score
    order, the IoU rows of a block of boxes against every box after the block's first, then one pass down
    the block's rows (a kept box suppresses the later ones it overlaps)."""
    order = numpy.argsort(-scores, kind="stable")
    ranked = boxes[order]
    suppressed = numpy.zeros(order.size, dtype=bool)
    keep = []
    for lo in range(0, order.size, _NMS_ROWS):
        hi = min(lo + _NMS_ROWS, order.size)
        overlaps = _iou(numpy, ranked[lo:hi], ranked[lo:]) > iou_threshold            # (hi - lo, K - lo)
        for i in range(lo, hi):
            if not suppressed[i]:
                keep.append(i)
                suppressed[lo:] |= overlaps[i - lo]
    return order[numpy.asarray(keep, dtype=numpy.int64)]


def nms(boxes, scores, iou_threshold=0.45, top_k=None):
    """Greedy non-maximum suppression: take the best-scoring box, drop every box whose IoU with it exceeds
    ``iou_threshold``, repeat (not differentiable; runs on the host).

    Shapes: boxes (N, 4) corners, scores (N,) -> kept indices (K,) int64 by decreasing score, at most
    ``top_k`` (None: all).
    """
    b, s = _host(_array(boxes)), _host(_array(scores))
    _check_boxes("nms", b)
    if b.ndim != 2 or s.shape != (b.shape[0],):
        raise OpError(f"nms: boxes must be (N, 4) and scores (N,), got {b.shape} and {s.shape}")
    keep = _greedy_nms(b, s, float(iou_threshold))
    return Tensor(keep[:top_k] if top_k is not None else keep)


def batched_nms(boxes, scores, labels, iou_threshold=0.45, top_k=None):
    """Per-class NMS: boxes of different labels never suppress each other; the survivors of all classes
    by decreasing score, at most ``top_k`` (None: all) (not differentiable; runs on the host).

    Shapes: boxes (N, 4), scores (N,), labels (N,) ints -> kept indices (K,) int64.
    """
    b, s, lab = (_host(_array(x)) for x in (boxes, scores, labels))
    _check_boxes("batched_nms", b)
    if b.ndim != 2 or s.shape != (b.shape[0],) or lab.shape != s.shape:
        raise OpError(f"batched_nms: boxes (N, 4), scores (N,) and labels (N,) expected, got {b.shape}, "
                      f"{s.shape} and {lab.shape}")
    kept = [numpy.flatnonzero(lab == c)[_greedy_nms(b[lab == c], s[lab == c], float(iou_threshold))]
            for c in numpy.unique(lab)]
    keep = numpy.concatenate(kept) if kept else numpy.zeros(0, dtype=numpy.int64)
    keep = keep[numpy.argsort(-s[keep], kind="stable")]
    return Tensor(keep[:top_k] if top_k is not None else keep)
