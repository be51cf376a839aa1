"""Losses: softmax cross entropy (fused), negative log-likelihood, binary cross
entropy with logits, mean squared / absolute error and margin ranking.

Every loss takes ``reduction`` in {"mean", "sum", "none"} and reduces inside
its Function. Class-index losses (cross_entropy, nll_loss) turn their labels
into a dense target matrix q (rows, classes) once, so that one formula serves
hard labels, ignored positions, class weights, soft labels and label
smoothing: loss_row = -sum_c q[row, c] * log p[row, c].
"""
import math

import numpy

from .. import backend
from ..tensor import Function, OpError

__all__ = ["cross_entropy", "nll_loss", "binary_cross_entropy_with_logits", "mse_loss", "l1_loss",
           "margin_ranking_loss"]

_REDUCTIONS = ("mean", "sum", "none")


class _ReducedLoss(Function):
    """Base for losses: ``self.reduction`` and, for "mean", ``self.denom`` (default: element count)."""

    denom = None

    def _reduce(self, loss):
        if self.reduction == "none":
            return loss
        total = loss.sum()
        if self.reduction == "sum":
            return total
        return total / (loss.size if self.denom is None else self.denom)

    def _each(self, gy, shape):
        """d(reduced loss)/d(each element's loss), shaped ``shape``."""
        if self.reduction == "none":
            return gy
        if self.reduction == "mean":
            gy = gy / (math.prod(shape) if self.denom is None else self.denom)
        return self.xp.broadcast_to(gy, shape)


class _ClassLoss(_ReducedLoss):
    """Loss over a class axis: rows are all positions, with the class axis ``self.axis`` last."""

    def _rows(self, x):
        moved = self.xp.moveaxis(x, self.axis, -1)
        self.row_shape = moved.shape
        return moved.reshape(-1, moved.shape[-1])

    def _unrows(self, g):
        return self.xp.ascontiguousarray(self.xp.moveaxis(g.reshape(self.row_shape), -1, self.axis))


class SoftmaxCrossEntropy(_ClassLoss):
    """loss_row = -sum_c q[row, c] * log_softmax(x)[row, c]; the gradient is sum_c(q) * softmax - q."""

    def forward(self, x):
        xp = self.xp
        rows = self._rows(x)
        shifted = rows - rows.max(axis=1, keepdims=True)
        log_p = shifted - xp.log(xp.exp(shifted).sum(axis=1, keepdims=True))
        self.saved = log_p
        return self._reduce(-(self.q * log_p).sum(axis=1).reshape(self.row_shape[:-1]))

    def backward(self, gy):
        log_p = self.saved
        g = self._each(gy, self.row_shape[:-1]).reshape(-1, 1)
        return self._unrows(g * (self.q.sum(axis=1, keepdims=True) * self.xp.exp(log_p) - self.q))


class NllLoss(_ClassLoss):
    """loss_row = -sum_c q[row, c] * log_probs[row, c]."""

    def forward(self, log_probs):
        return self._reduce(-(self.q * self._rows(log_probs)).sum(axis=1).reshape(self.row_shape[:-1]))

    def backward(self, gy):
        return self._unrows(-self._each(gy, self.row_shape[:-1]).reshape(-1, 1) * self.q)


class BinaryCrossEntropyWithLogits(_ReducedLoss):
    """loss = weight * (pos_weight * y * softplus(-x) + (1 - y) * softplus(x)), i.e.
    -weight * (pos_weight * y * log sigmoid(x) + (1 - y) * log(1 - sigmoid(x)))."""

    def forward(self, x, y):
        xp = self.xp
        soft_neg, soft_pos = xp.logaddexp(0, -x), xp.logaddexp(0, x)  # -log sigmoid(x), -log(1 - sigmoid(x))
        weight, pos_weight = (xp.asarray(a, dtype=x.dtype) for a in (self.weight, self.pos_weight))
        self.saved = y, soft_neg, soft_pos, weight, pos_weight
        return self._reduce(weight * (pos_weight * y * soft_neg + (1 - y) * soft_pos))

    def backward(self, gy):
        xp = self.xp
        y, soft_neg, soft_pos, weight, pos_weight = self.saved
        g = self._each(gy, y.shape) * weight
        sig, one_minus_sig = xp.exp(-soft_neg), xp.exp(-soft_pos)
        gx = g * ((1 - y) * sig - pos_weight * y * one_minus_sig)
        gl = g * (pos_weight * soft_neg - soft_pos) if self.needs_input_grad[1] else None
        return gx, gl


class PairwiseLoss(_ReducedLoss):
    """loss = (x - y)^2 (``kind="square"``) or |x - y| (``kind="abs"``)."""

    def forward(self, x, y):
        diff = x - y
        self.saved = diff
        return self._reduce(diff * diff if self.kind == "square" else self.xp.abs(diff))

    def backward(self, gy):
        diff = self.saved
        g = self._each(gy, diff.shape) * (2 * diff if self.kind == "square" else self.xp.sign(diff))
        return g, -g


class MarginRanking(_ReducedLoss):
    """loss = max(0, -label * (x1 - x2) + margin)."""

    def forward(self, x1, x2, label):
        diff = x1 - x2
        loss = self.xp.maximum(-label * diff + self.margin, 0)
        self.saved = diff, label, loss > 0
        return self._reduce(loss)

    def backward(self, gy):
        diff, label, active = self.saved
        g = self._each(gy, diff.shape) * active
        return -g * label, g * label, -g * diff


def _check_reduction(op, reduction):
    if reduction not in _REDUCTIONS:
        raise OpError(f"{op}: reduction must be one of {_REDUCTIONS}, got {reduction!r}")


def _class_weight(op, weight, classes, dtype):
    """The (C,) class weight array in ``dtype`` (ones when None)."""
    if weight is None:
        return None
    if weight.shape != (classes,):
        raise OpError(f"{op}: weight must have one entry per class ({classes},), got {weight.shape}")
    return weight.data.astype(dtype, copy=False)


def _hard_targets(op, xp, label, classes, weight, ignore_index, smoothing, dtype):
    """q (rows, C) for integer labels, and the "mean" denominator (total weight of the non-ignored labels).

    As PyTorch: q[row] = (1 - smoothing) * w[y] * onehot(y) + smoothing / C * w,
    and q[row] = 0 where y == ignore_index.
    """
    ids = label.reshape(-1)
    valid = ids != ignore_index
    out_of_range = valid & ((ids < 0) | (ids >= classes))
    if bool(out_of_range.any()):
        bad = int(ids[out_of_range][0])
        raise OpError(f"{op}: label {bad} is out of range for {classes} classes (labels of shape {label.shape})")
    safe = xp.where(valid, ids, 0)
    w = xp.ones(classes, dtype=dtype) if weight is None else weight
    row_weight = w[safe] * valid
    q = xp.zeros((ids.size, classes), dtype=dtype)
    q[xp.arange(ids.size), safe] = (1 - smoothing) * row_weight
    if smoothing:
        q += (smoothing / classes) * w * valid[:, None]
    return q, float(row_weight.sum())


def _class_loss_inputs(op, input, label, axis, reduction, soft_label):
    """Validate a class-axis loss's input and label; returns (axis, classes, label array)."""
    _check_reduction(op, reduction)
    if input.dtype.kind != "f" or input.ndim < 1 or not -input.ndim <= axis < input.ndim:
        raise OpError(f"{op}: input must be a float tensor with a class axis {axis}, got {input.dtype} {input.shape}")
    axis %= input.ndim
    classes = input.shape[axis]
    row_shape = input.shape[:axis] + input.shape[axis + 1:]
    labels = label.data
    if soft_label:
        if label.shape != input.shape or label.dtype.kind != "f":
            raise OpError(f"{op}: soft labels must be floats of the input's shape {input.shape}, "
                          f"got {label.dtype} {label.shape}")
        return axis, classes, labels
    if label.ndim == input.ndim and label.shape[axis] == 1:  # Paddle's (N, 1) labels
        labels = labels.reshape(row_shape)
    if labels.shape != row_shape or labels.dtype.kind not in "iu":
        raise OpError(f"{op}: labels must be integer class ids of shape {row_shape} for input {input.shape} "
                      f"(class axis {axis}), got {label.dtype} {label.shape}")
    return axis, classes, labels


def cross_entropy(input, label, weight=None, ignore_index=-100, reduction="mean", soft_label=False, axis=-1,
                  label_smoothing=0.0):
    """Softmax cross entropy of logits, fused and numerically stable.

    loss = -sum_c q_c * log_softmax(input)_c per position, where q is the
    one-hot label (times its class weight), mixed with the uniform
    distribution by ``label_smoothing`` as PyTorch does; with ``soft_label``,
    q = label (times the class weights). Positions whose label equals
    ``ignore_index`` contribute 0. "mean" divides by the total weight of the
    non-ignored labels (by the number of positions for soft labels).

    Shapes: input (*, C, *) with the class axis ``axis`` (default last);
    label: int class ids of input's shape without ``axis`` (or with it of
    size 1), or with ``soft_label`` floats of input's shape; weight (C,) or None.
    Returns a scalar, or for "none" input's shape without ``axis``.
    """
    op = "cross_entropy"
    axis, classes, labels = _class_loss_inputs(op, input, label, axis, reduction, soft_label)
    if not 0 <= label_smoothing <= 1:
        raise OpError(f"{op}: label_smoothing must be in [0, 1], got {label_smoothing}")
    xp = backend.get_array_module(input.data)
    weight = _class_weight(op, weight, classes, input.dtype)
    if soft_label:
        moved = xp.moveaxis(labels.astype(input.dtype, copy=False), axis, -1).reshape(-1, classes)
        q = moved * (1 - label_smoothing) + label_smoothing / classes
        q = q if weight is None else q * weight
        denom = float(q.shape[0])
    else:
        q, denom = _hard_targets(op, xp, labels, classes, weight, ignore_index, label_smoothing, input.dtype)
    return SoftmaxCrossEntropy.apply(input, q=q, axis=axis, reduction=reduction, denom=denom)


def nll_loss(log_probs, label, weight=None, ignore_index=-100, reduction="mean"):
    """Negative log-likelihood of integer labels given log-probabilities.

    loss = -weight[y] * log_probs[..., y, ...]; ignored labels contribute 0;
    "mean" divides by the total weight of the non-ignored labels.

    Shapes: log_probs (N, C) or (N, C, d1, ...), label (N,) or (N, d1, ...)
    int; weight (C,) or None. Returns a scalar, or for "none" the label's shape.
    """
    op = "nll_loss"
    axis, classes, labels = _class_loss_inputs(op, log_probs, label, 1 if log_probs.ndim > 1 else 0,
                                               reduction, False)
    xp = backend.get_array_module(log_probs.data)
    weight = _class_weight(op, weight, classes, log_probs.dtype)
    q, denom = _hard_targets(op, xp, labels, classes, weight, ignore_index, 0.0, log_probs.dtype)
    return NllLoss.apply(log_probs, q=q, axis=axis, reduction=reduction, denom=denom)


def _elementwise_inputs(op, reduction, **tensors):
    """Raise unless the named tensors are floats of one shape and dtype."""
    _check_reduction(op, reduction)
    first = next(iter(tensors.values()))
    if any(t.shape != first.shape or t.dtype != first.dtype for t in tensors.values()) or first.dtype.kind != "f":
        described = ", ".join(f"{name} {t.dtype} {t.shape}" for name, t in tensors.items())
        raise OpError(f"{op}: {', '.join(tensors)} must be float tensors of one shape and dtype, got {described}")


def _broadcasts_to(shape, target):
    try:
        return numpy.broadcast_shapes(shape, target) == tuple(target)
    except ValueError:
        return False


def binary_cross_entropy_with_logits(logit, label, weight=None, reduction="mean", pos_weight=None):
    """Sigmoid cross entropy for multi-label targets, computed stably from logits.

    loss = -weight * (pos_weight * label * log sigmoid(logit) + (1 - label) * log(1 - sigmoid(logit))).

    Shapes: logit and label (*) floats in [0, 1] for label; weight broadcastable
    to (*); pos_weight broadcastable to (*) (typically (C,) for the last axis).
    Returns a scalar, or (*) for "none".
    """
    op = "binary_cross_entropy_with_logits"
    _elementwise_inputs(op, reduction, logit=logit, label=label)
    arrays = {}
    for name, value in (("weight", weight), ("pos_weight", pos_weight)):
        if value is not None and not _broadcasts_to(value.shape, logit.shape):
            raise OpError(f"{op}: {name} {value.shape} does not broadcast to logit {logit.shape}")
        arrays[name] = 1.0 if value is None else value.data
    return BinaryCrossEntropyWithLogits.apply(logit, label, reduction=reduction, **arrays)


def mse_loss(input, label, reduction="mean"):
    """Mean squared error: reduce((input - label)^2). Shapes: input and label (*) -> scalar, or (*) for "none"."""
    _elementwise_inputs("mse_loss", reduction, input=input, label=label)
    return PairwiseLoss.apply(input, label, kind="square", reduction=reduction)


def l1_loss(input, label, reduction="mean"):
    """Mean absolute error: reduce(|input - label|). Shapes: input and label (*) -> scalar, or (*) for "none"."""
    _elementwise_inputs("l1_loss", reduction, input=input, label=label)
    return PairwiseLoss.apply(input, label, kind="abs", reduction=reduction)


def margin_ranking_loss(input, other, label, margin=0.0, reduction="mean"):
    """Margin ranking loss: reduce(max(0, -label * (input - other) + margin)).

    ``label`` is 1 where ``input`` should rank higher, -1 where ``other`` should.
    Shapes: input, other, label (*) floats -> scalar, or (*) for "none".
    """
    _elementwise_inputs("margin_ranking_loss", reduction, input=input, other=other, label=label)
    return MarginRanking.apply(input, other, label, margin=margin, reduction=reduction)
