"""The optimizer base: parameter groups, learning rate (a float or a schedule),
gradient clipping, coupled weight decay, and a state dict for exact resume.

One :meth:`Optimizer.step` collects every trainable parameter that has a
gradient, clips all those gradients together (``grad_clip``), adds each
group's weight decay, and lets the subclass update ``param.data`` in place.
Gradients are read, never written: clipping and decay make new arrays.
Optimizer state (moments, velocities, step counts) is created on a
parameter's first update, on the parameter's device.
"""
import numbers

import numpy

from .. import backend
from ..tensor import Tensor
from .clip import ClipGradBase
from .lr import LRScheduler
from .regularizer import L2Decay, WeightDecayRegularizer

__all__ = ["Optimizer"]


def _to_numpy(value):
    """A state entry for a state dict: arrays as NumPy copies, scalars as they are."""
    if isinstance(value, numbers.Number):
        return value
    return numpy.array(backend.to_device(value, "cpu"))


def _position(key, prefix, count, owner):
    """The index i of a state-dict key ``f"{prefix}{i}"``, checked against ``count``."""
    suffix = str(key)[len(prefix):]
    if not str(key).startswith(prefix) or not suffix.isdigit() or int(suffix) >= count:
        raise ValueError(f"{owner}.set_state_dict: unexpected key {key!r} "
                         f"(expected {prefix}0 .. {prefix}{count - 1})")
    return int(suffix)


class Optimizer:
    """Base of every optimizer; subclasses implement ``_init_state`` and ``_update``.

    Args:
        learning_rate (float | LRScheduler): the base rate; a schedule is read at
            every step (the caller steps the schedule, as in Paddle).
        parameters: a list of Tensors, or a list of group dicts
            ``{"params": [...], "learning_rate": 0.1, "weight_decay": ..., <hyperparameter>: ...}``.
            A group's ``learning_rate`` is a multiplier of the base rate (as Paddle's
            ``optimize_attr["learning_rate"]``; default 1.0); its other keys replace
            the optimizer's own value for that group.
        weight_decay: None, a float (the L2 coefficient) or an ``L2Decay``/``L1Decay``,
            added to the clipped gradient before the update.
        grad_clip: None or a ``ClipGradBy*``, applied to the gradients of all groups together.
        hyperparameters (dict): the subclass's own settings (e.g. ``momentum``),
            each overridable per group.

    Attributes:
        param_groups (list of dict): each with ``params`` (a list of Tensors) and
            every setting resolved.
    """

    def __init__(self, learning_rate=0.001, parameters=None, weight_decay=None, grad_clip=None,
                 hyperparameters=None):
        self._learning_rate = self._checked_lr(learning_rate)
        if grad_clip is not None and not isinstance(grad_clip, ClipGradBase):
            raise TypeError(f"{type(self).__name__}: grad_clip must be a ClipGradBy* object or None, "
                            f"got {grad_clip!r}")
        self._grad_clip = grad_clip
        defaults = {"learning_rate": 1.0, "weight_decay": weight_decay, **(hyperparameters or {})}
        self.param_groups = self._build_groups(parameters, defaults)
        self._state = [[None] * len(group["params"]) for group in self.param_groups]

    # ---- construction -----------------------------------------------------
    def _checked_lr(self, learning_rate):
        if isinstance(learning_rate, LRScheduler):
            return learning_rate
        if not isinstance(learning_rate, numbers.Real) or isinstance(learning_rate, bool):
            raise TypeError(f"{type(self).__name__}: learning_rate must be a float or an LRScheduler, "
                            f"got {learning_rate!r}")
        return float(learning_rate)

    def _build_groups(self, parameters, defaults):
        owner = type(self).__name__
        if parameters is None:
            raise ValueError(f"{owner}: parameters is required (e.g. parameters=model.parameters())")
        parameters = list(parameters)
        specs = parameters if parameters and isinstance(parameters[0], dict) else [{"params": parameters}]
        groups, seen = [], set()
        for i, spec in enumerate(specs):
            if not isinstance(spec, dict) or "params" not in spec:
                raise TypeError(f"{owner}: parameters must be all Tensors or all group dicts with a "
                                f"'params' key; item {i} is {type(spec).__name__}")
            unknown = sorted(set(spec) - set(defaults) - {"params"})
            if unknown:
                raise ValueError(f"{owner}: parameter group {i} has unknown keys {unknown}; "
                                 f"valid keys: params, {', '.join(sorted(defaults))}")
            params = [spec["params"]] if isinstance(spec["params"], Tensor) else list(spec["params"])
            for p in params:
                if not isinstance(p, Tensor):
                    raise TypeError(f"{owner}: parameter group {i} holds a {type(p).__name__}, not a Tensor")
                if id(p) in seen:
                    raise ValueError(f"{owner}: parameter {p.name or tuple(p.shape)} appears more than once")
                seen.add(id(p))
            group = {**defaults, **spec, "params": params}
            group["weight_decay"] = self._checked_decay(group["weight_decay"])
            self._check_group(group, i)
            groups.append(group)
        if not seen:
            raise ValueError(f"{owner}: got no parameters to optimize")
        return groups

    def _checked_decay(self, weight_decay):
        """A group's weight decay as a regularizer (None for no decay)."""
        if weight_decay is None or isinstance(weight_decay, WeightDecayRegularizer):
            return weight_decay
        if isinstance(weight_decay, numbers.Real) and not isinstance(weight_decay, bool):
            return L2Decay(weight_decay) if weight_decay else None
        raise TypeError(f"{type(self).__name__}: weight_decay must be None, a float or an "
                        f"L2Decay/L1Decay, got {weight_decay!r}")

    def _check_group(self, group, index):
        """Validate one resolved group's settings; subclasses extend it."""
        multiplier = group["learning_rate"]
        if not isinstance(multiplier, numbers.Real) or isinstance(multiplier, bool) or multiplier < 0:
            raise ValueError(f"{type(self).__name__}: parameter group {index} learning_rate "
                             f"(a multiplier of the base rate) must be a number >= 0, got {multiplier!r}")

    # ---- learning rate ----------------------------------------------------
    def get_lr(self):
        """The current base learning rate (a float): the schedule's value or the fixed rate."""
        if isinstance(self._learning_rate, LRScheduler):
            return self._learning_rate()
        return self._learning_rate

    def set_lr(self, value):
        """Set a fixed base learning rate; not allowed when the optimizer follows a schedule."""
        if isinstance(self._learning_rate, LRScheduler):
            raise TypeError(f"{type(self).__name__}.set_lr: the learning rate follows a "
                            f"{type(self._learning_rate).__name__}; step or set that schedule instead")
        self._learning_rate = self._checked_lr(value)

    # ---- updates ----------------------------------------------------------
    def step(self):
        """Update, in place, every parameter with ``requires_grad`` and a gradient; skip the rest."""
        entries = [(gi, pi, p) for gi, group in enumerate(self.param_groups)
                   for pi, p in enumerate(group["params"]) if p.requires_grad and p.grad is not None]
        pairs = [(p, p.grad) for _, _, p in entries]
        if self._grad_clip is not None:
            pairs = self._grad_clip(pairs)
        base_lr = self.get_lr()
        for (gi, pi, param), (_, grad) in zip(entries, pairs):
            group = self.param_groups[gi]
            if tuple(grad.shape) != tuple(param.shape):
                raise ValueError(f"{type(self).__name__}.step: gradient of shape {tuple(grad.shape)} for "
                                 f"parameter {param.name or f'group{gi}.param{pi}'} of shape {tuple(param.shape)}")
            g = self._decayed(param, grad.data, group)
            if self._state[gi][pi] is None:
                self._state[gi][pi] = self._init_state(param.data, group)
            self._update(param, g, self._state[gi][pi], base_lr * group["learning_rate"], group)

    def minimize(self, loss):
        """The DyGraph spelling of :meth:`step`: ``loss.backward()`` must have run first."""
        self.step()

    def clear_grad(self):
        """Set the gradient of every parameter to None."""
        for group in self.param_groups:
            for p in group["params"]:
                p.grad = None

    clear_gradients = clear_grad

    def _decayed(self, param, grad, group):
        """The gradient array with the group's coupled weight decay added (a new array)."""
        decay = group["weight_decay"]
        return grad if decay is None else decay(param.data, grad)

    def _init_state(self, param, group):
        """The fresh state dict of one parameter array: arrays on its device and scalars."""
        raise NotImplementedError

    def _update(self, param, grad, state, lr, group):
        """Update ``param.data`` and ``state`` in place from the gradient array ``grad`` at rate ``lr``."""
        raise NotImplementedError

    # ---- state ------------------------------------------------------------
    def state_dict(self):
        """The optimizer state as plain nested dicts of NumPy arrays and scalars.

        Keys: ``group_sizes`` (int array, parameters per group), ``state``
        (``{"group{i}": {"param{j}": {name: array or scalar}}}``, by position;
        parameters not updated yet are absent), and ``lr_scheduler`` (the
        schedule's state) or ``learning_rate`` (the fixed rate). Arrays are
        copies: later steps do not change a returned dict.
        """
        state = {}
        for gi, group_state in enumerate(self._state):
            entries = {f"param{pi}": {k: _to_numpy(v) for k, v in s.items()}
                       for pi, s in enumerate(group_state) if s is not None}
            if entries:
                state[f"group{gi}"] = entries
        out = {"group_sizes": numpy.array([len(g["params"]) for g in self.param_groups], dtype=numpy.int64),
               "state": state}
        if isinstance(self._learning_rate, LRScheduler):
            out["lr_scheduler"] = self._learning_rate.state_dict()
        else:
            out["learning_rate"] = self._learning_rate
        return out

    def set_state_dict(self, state_dict):
        """Restore a state saved by :meth:`state_dict` onto this optimizer's parameters.

        Raises a ValueError naming the problem when the groups or their sizes,
        a state entry's keys or an array's shape do not match, or when the
        state holds a schedule and this optimizer a fixed rate (or the reverse).
        The parameter state is replaced only once every entry has been checked.
        """
        owner = type(self).__name__
        if "group_sizes" not in state_dict:
            raise ValueError(f"{owner}.set_state_dict: missing key 'group_sizes' (got {sorted(state_dict)})")
        sizes = [len(g["params"]) for g in self.param_groups]
        saved_sizes = [int(n) for n in numpy.asarray(state_dict["group_sizes"]).reshape(-1)]
        if saved_sizes != sizes:
            raise ValueError(f"{owner}.set_state_dict: the state is for {len(saved_sizes)} parameter groups "
                             f"of sizes {saved_sizes}; this optimizer has {len(sizes)} of sizes {sizes}")
        restored = [[None] * n for n in sizes]
        for group_key, entries in state_dict.get("state", {}).items():
            gi = _position(group_key, "group", len(sizes), owner)
            for param_key, saved in entries.items():
                pi = _position(param_key, "param", sizes[gi], owner)
                restored[gi][pi] = self._restored(gi, pi, saved)
        schedule = isinstance(self._learning_rate, LRScheduler)
        expected_key = "lr_scheduler" if schedule else "learning_rate"
        if expected_key not in state_dict:
            raise ValueError(f"{owner}.set_state_dict: missing key {expected_key!r}: this optimizer's learning "
                             f"rate is {'a ' + type(self._learning_rate).__name__ if schedule else 'a float'}")
        if schedule:
            self._learning_rate.set_state_dict(state_dict["lr_scheduler"])
        else:
            self._learning_rate = self._checked_lr(float(state_dict["learning_rate"]))
        self._state = restored

    def _restored(self, gi, pi, saved):
        """The state of parameter ``pi`` of group ``gi`` rebuilt from its saved entry, on its device."""
        param = self.param_groups[gi]["params"][pi]
        where = f"{type(self).__name__}.set_state_dict: group{gi}.param{pi} ({param.name or 'unnamed'}, " \
                f"shape {tuple(param.shape)})"
        state = self._init_state(param.data, self.param_groups[gi])
        if set(saved) != set(state):
            raise ValueError(f"{where} has state keys {sorted(saved)}, expected {sorted(state)}")
        xp = backend.get_array_module(param.data)
        for key, value in saved.items():
            if isinstance(state[key], numbers.Number):
                state[key] = type(state[key])(value)
                continue
            shape = tuple(getattr(value, "shape", numpy.shape(value)))
            if shape != tuple(state[key].shape):
                raise ValueError(f"{where}: saved {key} has shape {shape}, expected {tuple(state[key].shape)}")
            state[key][...] = xp.asarray(value)
        return state
