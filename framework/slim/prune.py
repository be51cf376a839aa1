"""Filter pruning by L1 norm: rank a group's channels, mask them, and cut them out for real.

A *plan* is ``{group name: ratio}`` over the :class:`~framework.slim.graph.ChannelGroup`
list of a model's program; ratio 0.5 removes half of the group's channels,
those whose filters have the smallest L1 norm (summed over every producer of
the group: the convolutions of all branches of a residual sum).

- :func:`kept_channels` turns a plan into the channel indices each group keeps
  (a group a temporal shift reads keeps its strongest channels fold by fold,
  each fold's share of what is kept as the shift computes it for the new width);
- :func:`mask` zeroes the removed channels in place (weights, biases, batch-norm
  scale and shift), so the model computes what the pruned one will, at full
  size — what sensitivity analysis evaluates;
- :func:`apply` performs the surgery: every member, buffer and consumer of a
  group is sliced to the kept channels, and the layers' size attributes
  (``out_channels``, ``num_features``, ``in_features`` …) follow, so the
  model is a smaller dense model;
- :func:`resize_to` reshapes a fresh (unpruned) model to the shapes of a pruned
  state dict, so a pruned checkpoint loads into the model its config builds.
"""
import numpy

from .. import backend
from ..kernels.temporal_shift import shift_folds
from ..nn import Linear
from .errors import SlimError

__all__ = ["channel_importance", "kept_channels", "mask", "restore", "apply", "resize_to", "refresh_sizes", "named_tensors"]


def named_tensors(model):
    """``{name: Tensor}`` of the model's parameters and buffers."""
    return {**dict(model.named_parameters()), **dict(model.named_buffers())}


def _host(tensor):
    return numpy.asarray(backend.to_device(tensor.data, "cpu"))


def channel_importance(tensors, group):
    """(size,) float64: the L1 norm of each channel's filters, summed over the group's producers."""
    total = numpy.zeros(group.size)
    for name, axis in group.producers:
        w = numpy.abs(_host(tensors[name]).astype(numpy.float64))
        total += numpy.moveaxis(w, axis, 0).reshape(group.size, -1).sum(axis=1)
    return total


def kept_channels(model, groups, plan, setting="prune.ratios"):
    """``{group name: sorted int64 indices of the channels kept}`` for the groups ``plan`` prunes.

    A ratio outside [0, 1) or one that would leave no channel is a SlimError naming ``setting`` and the
    group; so is a plan naming a group that is not prunable or does not exist.
    """
    by_name, tensors, kept = {g.name: g for g in groups}, named_tensors(model), {}
    for name, ratio in plan.items():
        group = by_name.get(name)
        if group is None or not group.prunable:
            known = ", ".join(g.name for g in groups if g.prunable) or "none"
            why = "is not a layer of this model" if group is None else f"cannot be pruned: {group.blocked}"
            raise SlimError(f"{setting}: {name!r} {why} (prunable layers: {known})")
        ratio = float(ratio)
        keep = int(round(group.size * (1.0 - ratio)))
        if not 0.0 <= ratio < 1.0 or keep < 1:
            raise SlimError(f"{setting}: ratio {ratio:g} for {name!r} removes all {group.size} of its filters; "
                            f"use a ratio below {1.0 - 0.5 / group.size:.3f}")
        if keep < group.size:
            kept[name] = _strongest(channel_importance(tensors, group), keep, group.shift_ratio)
    return kept


def _strongest(importance, keep, shift_ratio=None):
    """Sorted int64 indices of the ``keep`` channels of largest ``importance`` (C,); with a ``shift_ratio``, the
    strongest of each temporal-shift fold ([0, c1), [c1, c2), [c2, C)), as many from each as the shift's folds
    of ``keep`` channels hold."""
    size = len(importance)
    old = (0, *shift_folds(size, shift_ratio), size) if shift_ratio is not None else (0, size)
    new = (0, *shift_folds(keep, shift_ratio), keep) if shift_ratio is not None else (0, keep)
    parts = []
    for start, stop, count in zip(old[:-1], old[1:], numpy.diff(new)):
        order = numpy.argsort(-importance[start:stop], kind="stable")
        parts.append(start + order[:min(int(count), stop - start)])
    kept = numpy.sort(numpy.concatenate(parts)).astype(numpy.int64)
    if len(kept) != keep:
        raise SlimError(f"keeping {keep} of {size} channels shifted by {shift_ratio:g}: the folds cannot hold them")
    return kept


def mask(model, groups, kept):
    """Zero, in place, the removed channels of every member of each group in ``kept``
    (:func:`kept_channels`); returns ``{tensor name: original array}`` to restore them with :func:`restore`."""
    tensors, saved = named_tensors(model), {}
    for group in groups:
        if group.name not in kept:
            continue
        drop = numpy.setdiff1d(numpy.arange(group.size), kept[group.name])
        for name, axis in group.members:
            tensor = tensors[name]
            saved.setdefault(name, tensor.data.copy())
            index = [slice(None)] * tensor.ndim
            index[axis] = backend.get_array_module(tensor.data).asarray(drop)
            tensor.data[tuple(index)] = 0
    return saved


def restore(model, saved):
    """Put back the arrays :func:`mask` returned."""
    tensors = named_tensors(model)
    for name, array in saved.items():
        tensors[name].data = array


def apply(model, groups, kept):
    """Cut the removed channels out of ``model`` in place (module docstring); returns the model."""
    tensors, cuts = named_tensors(model), {}
    for group in groups:
        if group.name in kept:
            for name, axis in group.members + group.buffers + group.consumers:
                cuts.setdefault(name, []).append((axis, kept[group.name]))
    for name, axes in cuts.items():
        tensor = tensors[name]
        xp = backend.get_array_module(tensor.data)
        data = tensor.data
        for axis, index in axes:
            data = xp.take(data, xp.asarray(index), axis=axis)
        tensor.data = xp.ascontiguousarray(data)
        if tensor.grad is not None:
            tensor.grad = None
    refresh_sizes(model)
    return model


def resize_to(model, state):
    """Give every parameter and buffer of ``model`` the shape it has in ``state`` (``{name: array}``, a pruned
    model's state dict), as zeros to be loaded over; returns the model."""
    for name, tensor in named_tensors(model).items():
        if name in state and tuple(state[name].shape) != tuple(tensor.shape):
            xp = backend.get_array_module(tensor.data)
            tensor.data = xp.zeros(tuple(state[name].shape), dtype=tensor.data.dtype)
    refresh_sizes(model)
    return model


def refresh_sizes(model):
    """Set the size attributes of convolutions, batch norms and linear layers from their weights' shapes."""
    for _, layer in model.named_sublayers(include_self=True):
        weight = layer.__dict__["_parameters"].get("weight")
        if weight is None:
            continue
        shape = weight.shape
        if hasattr(layer, "out_channels") and hasattr(layer, "groups"):
            layer.out_channels, layer.in_channels = shape[0], shape[1] * layer.groups
        elif hasattr(layer, "num_features"):
            layer.num_features = shape[0]
        elif hasattr(layer, "in_features") and len(shape) == 2:       # nn.Linear is (in, out), others (out, in)
            layer.in_features, layer.out_features = shape if isinstance(layer, Linear) else shape[::-1]
