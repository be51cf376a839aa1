"""Specs for framework/ops/loss.py: references loop over rows with PyTorch's definitions."""
import math

import numpy
import pytest

from framework import OpError, Tensor
from framework.nn import functional as F
from ..opspec import OpSpec


def _log_softmax_row(row):
    top = row.max()
    return row - (top + math.log(sum(math.exp(v - top) for v in row)))


def _reduce(losses, denominator, reduction, shape):
    losses = numpy.array(losses, dtype=numpy.float64)
    if reduction == "none":
        return losses.reshape(shape)
    return losses.sum() / (denominator if reduction == "mean" else 1)


def cross_entropy_reference(x, label, weight=None, ignore_index=-100, reduction="mean", soft_label=False,
                            axis=-1, label_smoothing=0.0, log_probs=False):
    """Per row: (1 - s) * (-w[y] log p[y]) + s / C * sum_c(-w[c] log p[c]); soft: -sum_c w[c] t'[c] log p[c]."""
    moved = numpy.moveaxis(x, axis, -1)
    classes = moved.shape[-1]
    rows = moved.reshape(-1, classes)
    weight = numpy.ones(classes) if weight is None else weight
    targets = numpy.moveaxis(label, axis, -1).reshape(-1, classes) if soft_label else label.reshape(-1)
    losses, denominator = [], 0.0
    for r, row in enumerate(rows):
        logp = row if log_probs else _log_softmax_row(row)
        if soft_label:
            t = targets[r] * (1 - label_smoothing) + label_smoothing / classes
            losses.append(-sum(weight[c] * t[c] * logp[c] for c in range(classes)))
            denominator += 1
            continue
        y = targets[r]
        if y == ignore_index:
            losses.append(0.0)
            continue
        smooth = -sum(weight[c] * logp[c] for c in range(classes))
        losses.append((1 - label_smoothing) * -weight[y] * logp[y] + label_smoothing / classes * smooth)
        denominator += weight[y]
    return _reduce(losses, denominator, reduction, moved.shape[:-1])


def nll_reference(log_probs, label, weight=None, ignore_index=-100, reduction="mean"):
    return cross_entropy_reference(log_probs, label, weight, ignore_index, reduction, axis=1, log_probs=True)


def _reduced(values, reduction):
    return values if reduction == "none" else values.sum() / (values.size if reduction == "mean" else 1)


def bce_reference(x, y, weight=1.0, pos_weight=1.0, reduction="mean"):
    sig = 1 / (1 + numpy.exp(-x))
    return _reduced(-weight * (pos_weight * y * numpy.log(sig) + (1 - y) * numpy.log(1 - sig)), reduction)


def _class_inputs(shape, classes_axis=-1, ignore=0, weighted=False):
    """Logits of ``shape`` and int labels (``ignore`` of them set to -100); optionally (C,) class weights."""
    def make(rng):
        classes = shape[classes_axis]
        row_shape = shape[:classes_axis % len(shape)] + shape[classes_axis % len(shape) + 1:]
        labels = rng.integers(0, classes, row_shape)
        labels.reshape(-1)[:ignore] = -100
        arrays = [rng.uniform(-2, 2, shape), labels]
        return arrays + [rng.uniform(0.5, 2, classes)] if weighted else arrays
    return make


def _soft_inputs(rng):
    logits = rng.uniform(-2, 2, (4, 5))
    targets = rng.uniform(0.1, 1, (4, 5))
    return [logits, targets / targets.sum(axis=1, keepdims=True), rng.uniform(0.5, 2, 5)]


def _ranking_inputs(rng, margin=0.2):
    """x1 - x2 placed so that max(0, -label * (x1 - x2) + margin) is never at its kink."""
    x1 = rng.uniform(-1, 1, 8)
    label = numpy.where(rng.uniform(size=8) > 0.5, 1.0, -1.0)
    offset = rng.uniform(0.1, 1, 8) * numpy.where(rng.uniform(size=8) > 0.5, 1, -1)
    return [x1, x1 - label * (margin + offset), label]


def _rejects_bad_input(outs, arrays):
    """Bad label shapes, dtypes or ids, weights, reductions and shapes: one OpError naming the op."""
    logits, ids = Tensor(numpy.zeros((4, 5), numpy.float32)), Tensor(numpy.array([0, 1, 7, 2]))
    floats = Tensor(numpy.zeros((4, 5), numpy.float32))
    bad_calls = [("cross_entropy: label 7 is out of range for 5 classes", lambda: F.cross_entropy(logits, ids)),
                 ("cross_entropy: labels must be integer", lambda: F.cross_entropy(logits, ids[:3])),
                 ("cross_entropy: labels must be integer", lambda: F.cross_entropy(logits, floats[:, 0])),
                 ("cross_entropy: soft labels", lambda: F.cross_entropy(logits, floats[:, :4], soft_label=True)),
                 ("cross_entropy: weight", lambda: F.cross_entropy(logits, ids, weight=floats[0, :4])),
                 ("cross_entropy: reduction", lambda: F.cross_entropy(logits, ids, reduction="avg")),
                 ("nll_loss: label 7", lambda: F.nll_loss(logits, ids)),
                 ("binary_cross_entropy_with_logits",
                  lambda: F.binary_cross_entropy_with_logits(logits, floats[:, :4])),
                 ("binary_cross_entropy_with_logits: pos_weight",
                  lambda: F.binary_cross_entropy_with_logits(logits, floats, pos_weight=floats[:, 0])),
                 ("mse_loss", lambda: F.mse_loss(logits, floats[0])),
                 ("margin_ranking_loss", lambda: F.margin_ranking_loss(floats[0], floats[0], floats[0, :3]))]
    for message, call in bad_calls:
        with pytest.raises(OpError, match=message):
            call()

SPECS = [
    OpSpec("cross_entropy", F.cross_entropy, _class_inputs((5, 4)), cross_entropy_reference,
           check=_rejects_bad_input),
    OpSpec("cross_entropy", lambda x, y, w: F.cross_entropy(x, y, weight=w),
           _class_inputs((6, 4), ignore=2, weighted=True), lambda x, y, w: cross_entropy_reference(x, y, w), wrt=[0]),
    OpSpec("cross_entropy", lambda x, y, w: F.cross_entropy(x, y, weight=w, label_smoothing=0.2, reduction="sum"),
           _class_inputs((6, 4), ignore=1, weighted=True),
           lambda x, y, w: cross_entropy_reference(x, y, w, reduction="sum", label_smoothing=0.2), wrt=[0]),
    OpSpec("cross_entropy", lambda x, y: F.cross_entropy(x, y, reduction="none", label_smoothing=0.1),
           _class_inputs((3, 4, 5), ignore=3),
           lambda x, y: cross_entropy_reference(x, y, reduction="none", label_smoothing=0.1)),
    OpSpec("cross_entropy", lambda x, y: F.cross_entropy(x, y, axis=1), _class_inputs((2, 3, 4), classes_axis=1),
           lambda x, y: cross_entropy_reference(x, y, axis=1)),
    OpSpec("cross_entropy", F.cross_entropy,  # Paddle's (N, 1) labels
           lambda rng: [rng.uniform(-2, 2, (4, 3)), rng.integers(0, 3, (4, 1))],
           lambda x, y: cross_entropy_reference(x, y[:, 0])),
    OpSpec("cross_entropy", lambda x, t, w: F.cross_entropy(x, t, weight=w, soft_label=True, label_smoothing=0.1),
           _soft_inputs, lambda x, t, w: cross_entropy_reference(x, t, w, soft_label=True, label_smoothing=0.1),
           wrt=[0]),
    OpSpec("cross_entropy", F.cross_entropy,  # stable for huge logits: the losses are 0 and log(1 + e^-1)
           lambda rng: [numpy.array([[1000.0, -1000.0, 0.0], [-500.0, 500.0, 499.0]]), numpy.array([0, 1])],
           lambda x, y: math.log1p(math.exp(-1)) / 2, grad=False),
    OpSpec("nll_loss", lambda x, y: F.nll_loss(x, y), _class_inputs((5, 4), ignore=1), nll_reference),
    OpSpec("nll_loss", lambda x, y, w: F.nll_loss(x, y, weight=w, reduction="none"),
           _class_inputs((2, 4, 3), classes_axis=1, ignore=2, weighted=True),
           lambda x, y, w: nll_reference(x, y, w, reduction="none"), wrt=[0]),
    OpSpec("binary_cross_entropy_with_logits", F.binary_cross_entropy_with_logits,
           lambda rng: [rng.uniform(-3, 3, (4, 5)), rng.uniform(0, 1, (4, 5))], bce_reference),
    OpSpec("binary_cross_entropy_with_logits",
           lambda x, y, w, pw: F.binary_cross_entropy_with_logits(x, y, weight=w, pos_weight=pw, reduction="sum"),
           lambda rng: [rng.uniform(-3, 3, (4, 5)), (rng.uniform(size=(4, 5)) > 0.5).astype(float),
                        rng.uniform(0.5, 1, (4, 1)), rng.uniform(0.5, 3, (5,))],
           lambda x, y, w, pw: bce_reference(x, y, w, pw, "sum"), wrt=[0, 1]),
    OpSpec("binary_cross_entropy_with_logits",
           lambda x, y: F.binary_cross_entropy_with_logits(x, y, reduction="none"),
           lambda rng: [rng.uniform(-3, 3, (6,)), rng.uniform(0, 1, (6,))],
           lambda x, y: bce_reference(x, y, reduction="none")),
    OpSpec("mse_loss", F.mse_loss, lambda rng: [rng.uniform(-1, 1, (3, 4)), rng.uniform(-1, 1, (3, 4))],
           lambda x, y: ((x - y) ** 2).mean()),
    OpSpec("mse_loss", lambda x, y: F.mse_loss(x, y, reduction="none"),
           lambda rng: [rng.uniform(-1, 1, (5,)), rng.uniform(-1, 1, (5,))], lambda x, y: (x - y) ** 2),
    OpSpec("l1_loss", lambda x, y: F.l1_loss(x, y, reduction="sum"),
           lambda rng: [rng.uniform(-1, 1, (3, 4)), rng.uniform(1.1, 2, (3, 4)) * rng.choice([-1, 1], (3, 4))],
           lambda x, y: numpy.abs(x - y).sum()),
    OpSpec("margin_ranking_loss", lambda a, b, y: F.margin_ranking_loss(a, b, y, margin=0.2), _ranking_inputs,
           lambda a, b, y: numpy.maximum(0, -y * (a - b) + 0.2).mean()),
    OpSpec("margin_ranking_loss", lambda a, b, y: F.margin_ranking_loss(a, b, y, margin=0.2, reduction="none"),
           _ranking_inputs, lambda a, b, y: numpy.maximum(0, -y * (a - b) + 0.2)),
]
