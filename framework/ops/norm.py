"""Normalisation: batch_norm (train and eval), layer_norm, group_norm and Lp normalize; channel_affine (an
eval-mode batch norm with its scale and shift computed once, optionally with the ReLU after it).

layer_norm and group_norm are one Function: view x as ``view``, standardise
over ``axes`` of that view, then scale and shift by a per-feature or
per-channel weight and bias. batch_norm has its own Function, because its
statistics and its weight are both per channel: with batch statistics it runs the
kernel family :mod:`framework.kernels.batch_norm` (compiled passes or NumPy's); with
fixed ones the output is one multiply and one add per element and the backward
per-channel sums and one pass.
"""
import math

import numpy

from ..kernels.affine import fused_channel_affine, scale_shift
from ..kernels.batch_norm import batch_norm_train, batch_norm_train_backward, channel_sum, channel_total
from ..tensor import Function, Tensor, OpError
from .. import backend, threadpool

__all__ = ["batch_norm", "layer_norm", "group_norm", "normalize", "channel_affine"]


class BatchNorm(Function):
    """y = (x - mean) * weight / sqrt(var + epsilon) + bias, per channel (axis 1).

    Attributes: ``epsilon``; ``fixed`` None (batch statistics: :mod:`framework.kernels.batch_norm`) or the
    running (mean, var) arrays (C,); ``running`` None or (running_mean, running_var, momentum) arrays updated
    in place from the batch statistics.
    """

    def forward(self, x, w, b):
        xp = self.xp
        x3 = x.reshape(x.shape[0], x.shape[1], -1)  # (N, C, L)
        if self.fixed is None:
            y, mean, var, self.saved = batch_norm_train(x3, w, b, self.epsilon)
            if self.running is not None:
                self._update_running(mean, var, x3.shape[0] * x3.shape[2])
            return y.reshape(x.shape)
        # eval: x * scale + (bias - mean * scale)
        scale, shift, mean, inv_std = eval_scale_shift(xp, *self.fixed, w, b, self.epsilon, x.dtype)
        self.saved = x3, mean, inv_std, w
        return scale_shift(xp, x3, scale, shift).reshape(x.shape)

    def _update_running(self, mean, var, count):
        """running = momentum * running + (1 - momentum) * batch, with the unbiased batch variance."""
        running_mean, running_var, momentum = self.running
        running_mean *= momentum
        running_mean += (1 - momentum) * mean.reshape(running_mean.shape)
        running_var *= momentum
        running_var += (1 - momentum) * count / (count - 1) * var.reshape(running_var.shape)

    def backward(self, gy):
        need_x, need_w, need_b = self.needs_input_grad
        if self.fixed is None:
            g3 = gy.reshape(self.saved.source.shape)
            gx, gw, gb = batch_norm_train_backward(self.saved, g3, need_x, need_w, need_b)
            return (None if gx is None else gx.reshape(gy.shape)), gw, gb
        xp = self.xp
        x3, mean, inv_std, w = self.saved                  # eval: the statistics are constants
        g3 = gy.reshape(x3.shape)
        gb = channel_total(xp, g3) if need_b or need_w else None
        gw = (channel_sum(xp, "bn_product", g3, x3) - mean * gb) * inv_std if need_w else None  # sum gy * xhat
        gx = threadpool.elementwise(xp.multiply, g3, (w * inv_std)[:, None]).reshape(gy.shape) if need_x else None
        return gx, gw, gb if need_b else None


def eval_scale_shift(xp, running_mean, running_var, w, b, epsilon, dtype):
    """(scale, shift, mean, inv_std) (C,) of an eval-mode batch norm: inv_std = 1 / sqrt(var + epsilon),
    scale = w * inv_std, shift = b - mean * scale, the statistics taken in ``dtype`` (the input's). The one
    computation of them, for :class:`BatchNorm` and for the program pass that fuses it
    (:class:`ChannelAffine`), so both give the same bits."""
    mean, var = (xp.asarray(s, dtype=dtype) for s in (running_mean, running_var))
    inv_std = 1 / xp.sqrt(var + epsilon)
    scale = w * inv_std
    return scale, b - mean * scale, mean, inv_std


class ChannelAffine(Function):
    """y = x * scale + shift per channel (axis 1), then max(y, 0) when the attribute ``relu`` is set.

    An eval-mode batch norm whose scale and shift are constants (``framework.jit.passes.fuse_batch_norm``),
    the ReLU that reads it folded in: the same float operations as :class:`BatchNorm`'s eval forward and
    ``ReLU``, so the same bits, in one op.
    """

    def forward(self, x, scale, shift):
        x3 = x.reshape(x.shape[0], x.shape[1], -1)  # (N, C, L)
        y = fused_channel_affine(x3, scale, shift, self.relu)
        self.saved = x3, scale, (y if self.relu else None)
        return y.reshape(x.shape)

    def backward(self, gy):
        xp = self.xp
        x3, scale, y = self.saved
        g3 = gy.reshape(x3.shape)
        if y is not None:
            g3 = g3 * (y > 0)
        need_x, need_scale, need_shift = self.needs_input_grad
        gx = threadpool.elementwise(xp.multiply, g3, scale[:, None]).reshape(gy.shape) if need_x else None
        gscale = channel_sum(xp, "affine_product", g3, x3) if need_scale else None
        return gx, gscale, (channel_total(xp, g3) if need_shift else None)


class Normalize(Function):
    """y = (x - mean) / sqrt(var + epsilon) * weight + bias, with batch statistics.

    Attributes: ``view`` (x reshaped for the statistics), ``axes`` (reduced
    axes of the view), ``param_shape`` (weight and bias broadcast against x).
    """

    def forward(self, x, w, b):
        xv = x.reshape(self.view)
        mean = xv.mean(axis=self.axes, keepdims=True)
        var = xv.var(axis=self.axes, keepdims=True)
        inv_std = 1 / self.xp.sqrt(var + self.epsilon)
        xhat = (xv - mean) * inv_std
        self.saved = xhat, inv_std, w
        return xhat.reshape(x.shape) * w.reshape(self.param_shape) + b.reshape(self.param_shape)

    def backward(self, gy):
        xhat, inv_std, w = self.saved
        x_shape = gy.shape
        reduced = tuple(i for i, n in enumerate(self.param_shape) if n == 1)
        gw = gb = None
        if self.needs_input_grad[1]:
            gw = (gy * xhat.reshape(x_shape)).sum(axis=reduced).reshape(w.shape)
        if self.needs_input_grad[2]:
            gb = gy.sum(axis=reduced).reshape(w.shape)
        gx = None
        if self.needs_input_grad[0]:
            gxhat = (gy * w.reshape(self.param_shape)).reshape(self.view)
            gxhat = (gxhat - gxhat.mean(axis=self.axes, keepdims=True)
                     - xhat * (gxhat * xhat).mean(axis=self.axes, keepdims=True))
            gx = (gxhat * inv_std).reshape(x_shape)
        return gx, gw, gb


class LpNormalize(Function):
    """y = x / max(||x||_p, epsilon) along ``axis``."""

    def forward(self, x):
        xp = self.xp
        norm = (xp.abs(x) ** self.p).sum(axis=self.axis, keepdims=True) ** (1 / self.p)
        denom = xp.maximum(norm, self.epsilon)
        self.saved = x, norm, denom
        return x / denom

    def backward(self, gy):
        xp = self.xp
        x, norm, denom = self.saved
        gx = gy / denom
        # where the norm is not clamped, d||x||/dx = sign(x) |x|^(p-1) / ||x||^(p-1)
        dot = (gy * x).sum(axis=self.axis, keepdims=True) / denom ** 2
        dnorm = xp.sign(x) * (xp.abs(x) / xp.maximum(norm, self.epsilon)) ** (self.p - 1)
        return gx - xp.where(norm > self.epsilon, dot, 0) * dnorm


def affine(op, x, param, shape, fill):
    """``param`` (a Tensor, for op ``op`` on ``x``) checked against ``shape`` (or a constant Tensor of ``fill`` when None)."""
    if param is None:
        return Tensor(backend.get_array_module(x.data).full(shape, fill, dtype=x.dtype))
    if param.shape != tuple(shape) or param.dtype != x.dtype:
        raise OpError(f"{op}: weight/bias {param.shape} {param.dtype} must be {tuple(shape)} {x.dtype} "
                      f"for x {x.shape}")
    return param


def check_float(op, x, min_ndim):
    """OpError naming ``op`` unless ``x`` is floating point with at least ``min_ndim`` axes."""
    if x.ndim < min_ndim or x.dtype.kind != "f":
        raise OpError(f"{op}: expected a floating-point tensor with at least {min_ndim} dims, "
                      f"got {x.dtype} of shape {x.shape}")


def batch_norm(x, running_mean, running_var, weight=None, bias=None, training=False, momentum=0.9,
               epsilon=1e-5):
    """Batch normalisation over every axis but the channel axis 1.

    y = (x - mean) / sqrt(var + epsilon) * weight + bias, per channel. In
    training, mean and (biased) var are the batch's, and the running Tensors
    are updated in place as Paddle does:
    ``running = momentum * running + (1 - momentum) * batch`` (the variance
    with the unbiased batch variance). In eval, the running statistics are used.

    Shapes: x (N, C, *), running_mean, running_var, weight, bias (C,) -> (N, C, *).
    ``weight``/``bias`` None mean 1/0; running stats may be None in training.
    """
    op = "batch_norm"
    check_float(op, x, 2)
    channels = x.shape[1]
    stats = [s for s in (running_mean, running_var) if s is not None]
    if any(s.shape != (channels,) for s in stats) or (not training and len(stats) < 2):
        raise OpError(f"{op}: running_mean and running_var must be ({channels},) for x {x.shape} "
                      f"(both are needed in eval mode), got "
                      f"{[None if s is None else s.shape for s in (running_mean, running_var)]}")
    weight = affine(op, x, weight, (channels,), 1)
    bias = affine(op, x, bias, (channels,), 0)
    attrs = dict(epsilon=epsilon, fixed=None, running=None)
    if training:
        if x.size // channels < 2:
            raise OpError(f"{op}: training needs more than one value per channel, got x {x.shape}")
        if len(stats) == 2:
            attrs["running"] = (running_mean.data, running_var.data, momentum)
    else:
        attrs["fixed"] = (running_mean.data, running_var.data)
    return BatchNorm.apply(x, weight, bias, **attrs)


def channel_affine(x, scale, shift, relu=False):
    """y = x * scale + shift per channel (axis 1), then max(y, 0) with ``relu`` (one op: what a traced eval-mode
    batch norm, and the ReLU after it, become).

    Shapes: x (N, C, *), scale and shift (C,) -> (N, C, *).
    """
    op = "channel_affine"
    check_float(op, x, 2)
    scale = affine(op, x, scale, (x.shape[1],), 1)
    shift = affine(op, x, shift, (x.shape[1],), 0)
    return ChannelAffine.apply(x, scale, shift, relu=bool(relu))


def layer_norm(x, normalized_shape, weight=None, bias=None, epsilon=1e-5):
    """Layer normalisation over the trailing ``normalized_shape`` axes.

    y = (x - mean) / sqrt(var + epsilon) * weight + bias, with mean and var
    over the last len(normalized_shape) axes of each sample.

    Shapes: x (*, *normalized_shape), weight and bias ``normalized_shape`` or None -> like x.
    """
    op = "layer_norm"
    shape = (normalized_shape,) if isinstance(normalized_shape, (int, numpy.integer)) else tuple(normalized_shape)
    check_float(op, x, len(shape))
    if x.shape[x.ndim - len(shape):] != shape:
        raise OpError(f"{op}: x {x.shape} does not end with normalized_shape {shape}")
    weight = affine(op, x, weight, shape, 1)
    bias = affine(op, x, bias, shape, 0)
    lead = x.shape[:x.ndim - len(shape)]
    return Normalize.apply(x, weight, bias, view=(math.prod(lead), math.prod(shape)), axes=(1,),
                           param_shape=(1,) * len(lead) + shape, epsilon=epsilon)


def group_norm(x, num_groups, weight=None, bias=None, epsilon=1e-5):
    """Group normalisation: channels split into ``num_groups`` groups, each sample normalised per group.

    Shapes: x (N, C, *) with C divisible by num_groups, weight and bias (C,) or None -> like x.
    """
    op = "group_norm"
    check_float(op, x, 2)
    n, channels = x.shape[:2]
    if num_groups < 1 or channels % num_groups:
        raise OpError(f"{op}: {channels} channels of x {x.shape} do not split into {num_groups} groups")
    weight = affine(op, x, weight, (channels,), 1)
    bias = affine(op, x, bias, (channels,), 0)
    return Normalize.apply(x, weight, bias, view=(n, num_groups, x.size // (n * num_groups)), axes=(2,),
                           param_shape=(1, channels) + (1,) * (x.ndim - 2), epsilon=epsilon)


def normalize(x, p=2, axis=1, epsilon=1e-12):
    """Lp normalisation along ``axis``: y = x / max(||x||_p, epsilon). Shapes: like x. p >= 1."""
    check_float("normalize", x, 1)
    if not -x.ndim <= axis < x.ndim or p < 1:
        raise OpError(f"normalize: axis {axis} and p {p} invalid for x {x.shape} (need p >= 1)")
    return LpNormalize.apply(x, p=float(p), axis=axis % x.ndim, epsilon=epsilon)
