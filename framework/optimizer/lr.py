"""Learning-rate schedules, as Paddle 2's ``paddle.optimizer.lr``.

A schedule holds ``last_epoch`` (its position: 0 right after construction,
+1 per :meth:`LRScheduler.step`) and ``last_lr``, the rate at that position.
The user or the trainer calls ``step()`` once per epoch or once per iteration,
whichever the schedule is meant to count; an optimizer built with a schedule
reads the current rate, ``scheduler()``, at every update and never steps it.

Every schedule here is a closed form of ``last_epoch`` (CosineAnnealingDecay
included, where Paddle's ``step()`` uses an equivalent recurrence), so
``step(epoch)`` jumps to any position and a restored state continues exactly.
"""
import bisect
import math
import numbers

__all__ = ["LRScheduler", "PiecewiseDecay", "CosineAnnealingDecay", "ExponentialDecay",
           "StepDecay", "MultiStepDecay", "PolynomialDecay", "LinearWarmup", "NoamDecay"]


def _real(value, what, owner):
    """``value`` as a float; a TypeError names ``owner`` and ``what`` otherwise."""
    if not isinstance(value, numbers.Real) or isinstance(value, bool):
        raise TypeError(f"{owner}: {what} must be a number, got {value!r}")
    return float(value)


def _positive_int(value, what, owner, allow_zero=False):
    """``value`` as an int > 0 (>= 0 with ``allow_zero``); a ValueError names ``owner`` otherwise."""
    if not isinstance(value, numbers.Integral) or value < (0 if allow_zero else 1):
        bound = ">= 0" if allow_zero else "> 0"
        raise ValueError(f"{owner}: {what} must be an int {bound}, got {value!r}")
    return int(value)


def _increasing(values, what, owner):
    """``values`` as a list of strictly increasing ints; a ValueError names ``owner`` otherwise."""
    values = list(values)
    if any(not isinstance(v, numbers.Integral) for v in values) or any(a >= b for a, b in zip(values, values[1:])):
        raise ValueError(f"{owner}: {what} must be strictly increasing ints, got {values}")
    return [int(v) for v in values]


class LRScheduler:
    """Base of every schedule: ``step()`` advances, ``get_lr()`` is the rate at ``last_epoch``.

    Subclasses implement :meth:`get_lr` as a function of ``self.last_epoch``
    and ``self.base_lr``.

    Args:
        learning_rate (float): the base rate ``base_lr`` the schedule scales.
        last_epoch (int): the position before construction; construction
            steps once, so a new schedule sits at ``last_epoch + 1`` (0 by default).

    Attributes:
        base_lr (float), last_epoch (int), last_lr (float): the rate ``__call__`` returns.
    """

    def __init__(self, learning_rate=0.1, last_epoch=-1):
        self.base_lr = _real(learning_rate, "learning_rate", type(self).__name__)
        self.last_lr = self.base_lr
        self.last_epoch = int(last_epoch)
        self.step()

    def __call__(self):
        """The current learning rate (a float)."""
        return self.last_lr

    def step(self, epoch=None):
        """Advance one position, or jump to position ``epoch``; updates ``last_lr``."""
        self.last_epoch = self.last_epoch + 1 if epoch is None else int(epoch)
        self.last_lr = float(self.get_lr())

    def get_lr(self):
        """The learning rate at position ``self.last_epoch``."""
        raise NotImplementedError

    def state_dict(self):
        """The position as a plain dict ``{"last_epoch": int, "last_lr": float}``."""
        return {"last_epoch": self.last_epoch, "last_lr": self.last_lr}

    def set_state_dict(self, state_dict):
        """Restore the position saved by :meth:`state_dict`; a missing key raises a ValueError naming it."""
        missing = sorted({"last_epoch", "last_lr"} - set(state_dict))
        if missing:
            raise ValueError(f"{type(self).__name__}.set_state_dict: missing keys {missing} "
                             f"(got {sorted(state_dict)})")
        self.last_epoch = int(state_dict["last_epoch"])
        self.last_lr = float(state_dict["last_lr"])


class PiecewiseDecay(LRScheduler):
    """Piecewise-constant rate: ``values[i]`` while ``boundaries[i-1] <= last_epoch < boundaries[i]``.

    Args:
        boundaries (list of int): strictly increasing positions where the rate changes.
        values (list of float): ``len(boundaries) + 1`` rates.
    """

    def __init__(self, boundaries, values, last_epoch=-1):
        self.boundaries = _increasing(boundaries, "boundaries", "PiecewiseDecay")
        self.values = [_real(v, "values", "PiecewiseDecay") for v in values]
        if len(self.values) != len(self.boundaries) + 1:
            raise ValueError(f"PiecewiseDecay: needs len(values) == len(boundaries) + 1, got "
                             f"{len(self.values)} values for {len(self.boundaries)} boundaries")
        super().__init__(self.values[0], last_epoch)

    def get_lr(self):
        return self.values[bisect.bisect_right(self.boundaries, self.last_epoch)]


class CosineAnnealingDecay(LRScheduler):
    """Cosine annealing: ``eta_min + (base_lr - eta_min) * (1 + cos(pi * last_epoch / T_max)) / 2``.

    The rate falls from ``learning_rate`` at 0 to ``eta_min`` at ``T_max`` and,
    stepped further, rises back along the same cosine (period ``2 * T_max``).
    """

    def __init__(self, learning_rate, T_max, eta_min=0.0, last_epoch=-1):
        self.T_max = _positive_int(T_max, "T_max", "CosineAnnealingDecay")
        self.eta_min = _real(eta_min, "eta_min", "CosineAnnealingDecay")
        super().__init__(learning_rate, last_epoch)

    def get_lr(self):
        cosine = 1 + math.cos(math.pi * self.last_epoch / self.T_max)
        return self.eta_min + (self.base_lr - self.eta_min) * cosine / 2


class ExponentialDecay(LRScheduler):
    """Exponential decay: ``base_lr * gamma ** last_epoch``."""

    def __init__(self, learning_rate, gamma, last_epoch=-1):
        self.gamma = _real(gamma, "gamma", "ExponentialDecay")
        super().__init__(learning_rate, last_epoch)

    def get_lr(self):
        return self.base_lr * self.gamma ** self.last_epoch


class StepDecay(LRScheduler):
    """Step decay: ``base_lr * gamma ** (last_epoch // step_size)``."""

    def __init__(self, learning_rate, step_size, gamma=0.1, last_epoch=-1):
        self.step_size = _positive_int(step_size, "step_size", "StepDecay")
        self.gamma = _real(gamma, "gamma", "StepDecay")
        super().__init__(learning_rate, last_epoch)

    def get_lr(self):
        return self.base_lr * self.gamma ** (self.last_epoch // self.step_size)


class MultiStepDecay(LRScheduler):
    """Multi-step decay: ``base_lr * gamma ** k``, k = how many ``milestones`` are <= ``last_epoch``."""

    def __init__(self, learning_rate, milestones, gamma=0.1, last_epoch=-1):
        self.milestones = _increasing(milestones, "milestones", "MultiStepDecay")
        self.gamma = _real(gamma, "gamma", "MultiStepDecay")
        super().__init__(learning_rate, last_epoch)

    def get_lr(self):
        return self.base_lr * self.gamma ** bisect.bisect_right(self.milestones, self.last_epoch)


class PolynomialDecay(LRScheduler):
    """Polynomial decay: ``(base_lr - end_lr) * (1 - e / d) ** power + end_lr``.

    Without ``cycle``, ``e = min(last_epoch, decay_steps)`` and ``d = decay_steps``
    (the rate stays at ``end_lr`` after ``decay_steps``); with ``cycle``,
    ``e = last_epoch`` and ``d`` is ``decay_steps`` times ``ceil(last_epoch / decay_steps)``
    (at least 1), so the decay restarts from a lower peak each cycle.
    """

    def __init__(self, learning_rate, decay_steps, end_lr=0.0001, power=1.0, cycle=False, last_epoch=-1):
        self.decay_steps = _positive_int(decay_steps, "decay_steps", "PolynomialDecay")
        self.end_lr = _real(end_lr, "end_lr", "PolynomialDecay")
        self.power = _real(power, "power", "PolynomialDecay")
        self.cycle = bool(cycle)
        super().__init__(learning_rate, last_epoch)

    def get_lr(self):
        epoch, steps = self.last_epoch, self.decay_steps
        if self.cycle:
            steps *= max(math.ceil(epoch / steps), 1)
        else:
            epoch = min(epoch, steps)
        return (self.base_lr - self.end_lr) * (1 - epoch / steps) ** self.power + self.end_lr


class LinearWarmup(LRScheduler):
    """Linear warm-up from ``start_lr`` to ``end_lr`` over ``warmup_steps``, then ``learning_rate``.

    For ``last_epoch < warmup_steps`` the rate is
    ``(end_lr - start_lr) * last_epoch / warmup_steps + start_lr``. After that
    it is ``learning_rate`` when a float, or, when ``learning_rate`` is a
    schedule, that schedule at position ``last_epoch - warmup_steps`` (the
    inner schedule starts at its own position 0 when the warm-up ends, as in Paddle).

    Args:
        learning_rate (float | LRScheduler): the rate or schedule after warm-up.
        warmup_steps (int): length of the warm-up (>= 0).
        start_lr, end_lr (float): the rates at the first and the last+1 warm-up position.
    """

    def __init__(self, learning_rate, warmup_steps, start_lr, end_lr, last_epoch=-1):
        if not isinstance(learning_rate, LRScheduler):
            learning_rate = _real(learning_rate, "learning_rate", "LinearWarmup")
        self.learning_rate = learning_rate
        self.warmup_steps = _positive_int(warmup_steps, "warmup_steps", "LinearWarmup", allow_zero=True)
        self.start_lr = _real(start_lr, "start_lr", "LinearWarmup")
        self.end_lr = _real(end_lr, "end_lr", "LinearWarmup")
        super().__init__(start_lr, last_epoch)

    def get_lr(self):
        """The rate at ``last_epoch``; after warm-up this moves the inner schedule to its position."""
        if self.last_epoch < self.warmup_steps:
            return (self.end_lr - self.start_lr) * self.last_epoch / self.warmup_steps + self.start_lr
        if isinstance(self.learning_rate, LRScheduler):
            self.learning_rate.step(self.last_epoch - self.warmup_steps)
            return self.learning_rate()
        return self.learning_rate

    def state_dict(self):
        """The position, with the inner schedule's state under ``"learning_rate"`` when there is one."""
        state = super().state_dict()
        if isinstance(self.learning_rate, LRScheduler):
            state["learning_rate"] = self.learning_rate.state_dict()
        return state

    def set_state_dict(self, state_dict):
        """Restore the position and the inner schedule's."""
        if isinstance(self.learning_rate, LRScheduler):
            if "learning_rate" not in state_dict:
                raise ValueError("LinearWarmup.set_state_dict: missing key 'learning_rate' "
                                 f"(the state of the inner {type(self.learning_rate).__name__}); "
                                 f"got {sorted(state_dict)}")
            self.learning_rate.set_state_dict(state_dict["learning_rate"])
        super().set_state_dict(state_dict)


class NoamDecay(LRScheduler):
    """Noam (Transformer) schedule: ``lr * d_model ** -0.5 * min(e ** -0.5, e * warmup_steps ** -1.5)``.

    ``e = last_epoch``; at ``e = 0`` the first term is taken as 1 (so the rate is 0).
    """

    def __init__(self, d_model, warmup_steps, learning_rate=1.0, last_epoch=-1):
        self.d_model = _positive_int(d_model, "d_model", "NoamDecay")
        self.warmup_steps = _positive_int(warmup_steps, "warmup_steps", "NoamDecay")
        super().__init__(learning_rate, last_epoch)

    def get_lr(self):
        e = self.last_epoch
        decay = 1.0 if e == 0 else e ** -0.5
        return self.base_lr * self.d_model ** -0.5 * min(decay, e * self.warmup_steps ** -1.5)
