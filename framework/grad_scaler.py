"""``GradScaler``: dynamic loss scaling for mixed-precision training (``torch.cuda.amp.GradScaler`` semantics).

Multiply the loss by a large scale before backward so small float16
gradients do not flush to zero, divide the gradients by it before the update,
skip the update when any gradient is inf/NaN and halve the scale, double it
after ``growth_interval`` clean steps (usage in :mod:`framework.amp`).
"""
import math
import numbers

from . import backend
from .tensor import Tensor

__all__ = ["GradScaler"]


def _number(value, kind, check, what):
    """``value`` as ``kind`` when ``check`` holds, else a ValueError naming ``what``."""
    if not isinstance(value, numbers.Real) or isinstance(value, bool) or not check(value):
        raise ValueError(f"GradScaler: {what}, got {value!r}")
    return kind(value)


class GradScaler:
    """Dynamic loss scaling (PyTorch's ``GradScaler`` semantics).

    Args:
        init_scale: the first scale.
        growth_factor: the scale is multiplied by it after ``growth_interval``
            consecutive steps without inf/NaN gradients (> 1).
        backoff_factor: the scale is multiplied by it after a step with inf/NaN
            gradients (between 0 and 1).
        growth_interval: clean steps between growths.
        enabled: False makes every method a pass-through (``scale`` returns the
            loss, ``step`` just steps).
    """

    def __init__(self, init_scale=2.**15, growth_factor=2., backoff_factor=.5, growth_interval=2000, enabled=True):
        self._scale = _number(init_scale, float, lambda v: 0 < v < math.inf, "init_scale must be a number > 0")
        self._growth_factor = _number(growth_factor, float, lambda v: v > 1, "growth_factor must be > 1")
        self._backoff_factor = _number(backoff_factor, float, lambda v: 0 < v < 1,
                                       "backoff_factor must be between 0 and 1")
        self._growth_interval = _number(growth_interval, int, lambda v: v >= 1 and v == int(v),
                                        "growth_interval must be an integer >= 1")
        self._enabled = bool(enabled)
        self._growth_tracker = 0
        self._steps = {}  # id(optimizer) -> {"found_inf": bool, "stepped": bool} since the last update()

    def is_enabled(self):
        return self._enabled

    def get_scale(self):
        """The current scale (1.0 when disabled)."""
        return self._scale if self._enabled else 1.0

    def scale(self, loss):
        """``loss * scale`` (a Tensor of the loss's shape and dtype); the loss itself when disabled."""
        return loss * self._scale if self._enabled else loss

    def unscale_(self, optimizer):
        """Divide every gradient of ``optimizer``'s parameters by the scale, once per step.

        Each gradient is replaced by a new unscaled array (never changed in
        place); whether any of them holds inf/NaN is found with one reduction
        per gradient on its device and a single transfer to the host.
        """
        if not self._enabled:
            return
        if id(optimizer) in self._steps:
            raise RuntimeError("GradScaler.unscale_: already called for this optimizer since the last update()")
        inverse = 1.0 / self._scale
        finite = []
        for group in optimizer.param_groups:
            for param in group["params"]:
                if param.grad is None:
                    continue
                grad = param.grad.data
                grad = grad * grad.dtype.type(inverse)
                finite.append(backend.get_array_module(grad).isfinite(grad).all())
                param.grad = Tensor(grad)
        found_inf = bool(finite) and not bool(backend.get_array_module(finite[0]).stack(finite).all())
        self._steps[id(optimizer)] = {"found_inf": found_inf, "stepped": False}

    def step(self, optimizer):
        """Unscale (unless ``unscale_`` ran this step), then ``optimizer.step()`` unless a gradient is inf/NaN.

        Returns True when the optimizer stepped, False when the step was skipped.
        """
        if not self._enabled:
            optimizer.step()
            return True
        if id(optimizer) not in self._steps:
            self.unscale_(optimizer)
        record = self._steps[id(optimizer)]
        if record["stepped"]:
            raise RuntimeError("GradScaler.step: already called for this optimizer since the last update()")
        record["stepped"] = True
        if record["found_inf"]:
            return False
        optimizer.step()
        return True

    def update(self):
        """Adjust the scale after this step's ``step``/``unscale_`` calls: back off on inf/NaN, else maybe grow."""
        if not self._enabled:
            return
        if not self._steps:
            raise RuntimeError("GradScaler.update: no unscale_() or step() since the last update(), "
                               "so there is no inf/NaN check to act on")
        if any(record["found_inf"] for record in self._steps.values()):
            self._scale *= self._backoff_factor
            self._growth_tracker = 0
        else:
            self._growth_tracker += 1
            if self._growth_tracker == self._growth_interval:
                self._scale *= self._growth_factor
                self._growth_tracker = 0
        self._steps.clear()

    def state_dict(self):
        """The scaler's state as plain numbers (empty when disabled), for exact resume."""
        if not self._enabled:
            return {}
        return {"scale": self._scale, "growth_factor": self._growth_factor, "backoff_factor": self._backoff_factor,
                "growth_interval": self._growth_interval, "_growth_tracker": self._growth_tracker}

    def load_state_dict(self, state_dict):
        """Restore a state from :meth:`state_dict`; a missing key is an error naming it."""
        if not state_dict:
            raise ValueError("GradScaler.load_state_dict: the state is empty (was it saved by a disabled scaler?)")
        missing = sorted({"scale", "growth_factor", "backoff_factor", "growth_interval", "_growth_tracker"}
                         - set(state_dict))
        if missing:
            raise ValueError(f"GradScaler.load_state_dict: missing keys {missing} (got {sorted(state_dict)})")
        self._scale = float(state_dict["scale"])
        self._growth_factor = float(state_dict["growth_factor"])
        self._backoff_factor = float(state_dict["backoff_factor"])
        self._growth_interval = int(state_dict["growth_interval"])
        self._growth_tracker = int(state_dict["_growth_tracker"])
