"""Pruning plans: one ratio for every layer, or per-layer ratios from sensitivities, meeting a FLOPs target.

The multiply-adds of a pruned model follow from the program's
:func:`~framework.slim.graph.costs`: a node whose weight produces group A and
consumes group B keeps ``keep(A) * keep(B)`` of its multiply-adds, where
``keep`` is the fraction of channels a group keeps (rounded to whole channels,
as :func:`~framework.slim.prune.kept_channels` rounds them).

- :func:`pruned_macs` evaluates that for a plan;
- :func:`uniform_plan` finds the smallest single ratio, over every prunable
  group, that removes at least ``target`` of the multiply-adds;
- :func:`sensitivity_plan` is PaddleSlim's sensitive strategy: for a loss
  budget ``t``, each group takes the largest ratio whose measured metric drop is
  at most ``t`` (linear between the measured ratios), and ``t`` is bisected to
  the smallest budget whose plan meets the target; that plan's ratios are then scaled down together
  as far as the target allows (several layers may share the smallest budget).

With ``multiple`` > 1 every group whose size is a multiple of it keeps a multiple
of ``multiple`` channels (:func:`aligned`): blocked CPU kernels (ONNX Runtime's
NCHWc convolutions, 16 channels a block on AVX-512) run a width that is not a
multiple of their block on a slower path or padded up to the next one, so an odd
width removes multiply-adds without removing time.

An unreachable target is a SlimError naming the setting and the best reachable reduction.
"""
import numpy

from .errors import SlimError

__all__ = ["pruned_macs", "uniform_plan", "sensitivity_plan", "allowed_ratio", "aligned"]


def _keep_fraction(group, ratio):
    return max(int(round(group.size * (1.0 - ratio))), 1) / group.size


def pruned_macs(costs, groups, plan):
    """Multiply-adds left after ``plan`` ({group name: ratio}) for the node ``costs`` of the unpruned program."""
    keep = {}
    for group in groups:
        fraction = _keep_fraction(group, plan.get(group.name, 0.0))
        for name, axis in group.producers:
            keep[(name, axis)] = fraction
        for name, axis in group.consumers:
            keep[(name, axis)] = fraction
    return sum(c.macs * keep.get((c.weight, c.out_axis), 1.0) * keep.get((c.weight, c.in_axis), 1.0)
               for c in costs)


def aligned(groups, plan, multiple=1):
    """``plan`` with the ratio of each group whose size is a multiple of ``multiple`` moved to the nearest one
    keeping a multiple of ``multiple`` channels (at least ``multiple``); ratios that become 0 are dropped."""
    if multiple <= 1:
        return dict(plan)
    sizes, result = {g.name: g.size for g in groups}, {}
    for name, ratio in plan.items():
        size = sizes[name]
        if size % multiple == 0:
            keep = max(multiple, int(round(size * (1.0 - ratio) / multiple)) * multiple)
            ratio = round(1.0 - keep / size, 6)
        if ratio > 0:
            result[name] = ratio
    return result


def _reduction(costs, groups, plan):
    return 1.0 - pruned_macs(costs, groups, plan) / sum(c.macs for c in costs)


def _unreachable(setting, target, best, how):
    return SlimError(f"{setting}: removing {target:.0%} of the multiply-adds cannot be met; {how} removes "
                     f"{best:.1%}")


def uniform_plan(costs, groups, target, max_ratio=0.9, setting="prune.flops_target", multiple=1):
    """``{group name: ratio}``: the smallest ratio (to 1e-4) over every prunable group of ``groups`` that removes
    at least ``target`` (a fraction) of the multiply-adds, at most ``max_ratio`` (each :func:`aligned` to
    ``multiple``)."""
    names = [g.name for g in groups if g.prunable]
    uniform = lambda ratio: aligned(groups, dict.fromkeys(names, ratio), multiple)       # noqa: E731
    best = _reduction(costs, groups, uniform(max_ratio))
    if best < target:
        raise _unreachable(setting, target, best, f"pruning every prunable layer by {max_ratio:g}")
    lo, hi = 0.0, max_ratio
    while hi - lo > 1e-4:
        mid = round((lo + hi) / 2, 6)
        lo, hi = (lo, mid) if _reduction(costs, groups, uniform(mid)) >= target else (mid, hi)
    return uniform(hi)


def allowed_ratio(drops, budget):
    """The largest ratio whose metric drop is at most ``budget``: ``drops`` is ``{ratio: drop}`` measured
    (ratio 0 counts as drop 0); linear between measured ratios, the drop taken as never decreasing."""
    ratios = [0.0] + sorted(r for r in drops if r > 0)
    losses = numpy.maximum.accumulate([0.0] + [max(drops[r], 0.0) for r in ratios[1:]])
    if budget >= losses[-1]:
        return ratios[-1]
    i = int(numpy.searchsorted(losses, budget, side="right"))       # losses[i-1] <= budget < losses[i]
    lo, hi = ratios[i - 1], ratios[i]
    span = losses[i] - losses[i - 1]
    return lo + (hi - lo) * ((budget - losses[i - 1]) / span if span > 0 else 0.0)


def sensitivity_plan(costs, groups, sensitivities, target, setting="prune.flops_target", multiple=1):
    """``{group name: ratio}`` from ``sensitivities`` (``{group name: {ratio: metric drop}}``) meeting
    ``target`` with the smallest metric-drop budget (module docstring), each ratio :func:`aligned` to
    ``multiple``."""
    def plan_for(budget):
        return aligned(groups, {name: round(allowed_ratio(drops, budget), 4)
                                for name, drops in sensitivities.items()}, multiple)

    top = max((max(d.values()) for d in sensitivities.values() if d), default=0.0)
    worst = plan_for(max(top, 0.0) + 1.0)
    best = _reduction(costs, groups, worst)
    if best < target:
        raise _unreachable(setting, target, best, "the largest measured ratio of every layer")
    lo, hi = 0.0, max(top, 0.0) + 1.0
    for _ in range(40):
        mid = (lo + hi) / 2
        lo, hi = (lo, mid) if _reduction(costs, groups, plan_for(mid)) >= target else (mid, hi)
    plan = plan_for(hi)
    scaled = lambda factor: aligned(groups, _scaled(plan, factor), multiple)          # noqa: E731
    lo_f, hi_f = 0.0, 1.0                        # the budget's plan may overshoot: scale it down to the target
    for _ in range(30):
        mid = (lo_f + hi_f) / 2
        lo_f, hi_f = (lo_f, mid) if _reduction(costs, groups, scaled(mid)) >= target else (mid, hi_f)
    return {name: ratio for name, ratio in scaled(hi_f).items() if ratio > 0}


def _scaled(plan, factor):
    return {name: round(ratio * factor, 4) for name, ratio in plan.items()}
