"""Per-layer sensitivity: how much a metric drops as each group's filters are pruned by L1 norm.

For every prunable group and every ratio, the removed channels are masked
(:func:`framework.slim.prune.mask`, which computes exactly what the cut model
will), the metric is measured by the caller's ``evaluate()`` (accuracy on a dev
subset), and the weights are put back. The result is the sensitivity table
PaddleSlim writes: ``{group name: {ratio: metric}}`` plus the unpruned metric.
"""
from ..progress import progress_bar
from .prune import kept_channels, mask, restore

__all__ = ["sensitivities", "drops", "table_text"]


def sensitivities(model, groups, evaluate, ratios, progress=True):
    """``(baseline, {group name: {ratio: metric}})`` for each prunable group of ``groups`` at each ratio of
    ``ratios``; ``evaluate()`` returns a float (higher is better) for the model as it stands."""
    chosen = [g for g in groups if g.prunable]
    baseline, table = float(evaluate()), {}
    with progress_bar(total=len(chosen) * len(ratios), desc="sensitivity", unit="eval", enabled=progress) as bar:
        for group in chosen:
            row = {}
            for ratio in ratios:
                saved = mask(model, groups, kept_channels(model, groups, {group.name: ratio}, "prune.ratios"))
                try:
                    row[float(ratio)] = float(evaluate())
                finally:
                    restore(model, saved)
                bar.update(1)
            table[group.name] = row
    return baseline, table


def drops(baseline, table):
    """``{group name: {ratio: baseline - metric}}``: the metric drop of each measurement."""
    return {name: {ratio: baseline - value for ratio, value in row.items()} for name, row in table.items()}


def table_text(baseline, table):
    """The table as Markdown: one row per group, one column per ratio, the metric in each cell."""
    ratios = sorted({r for row in table.values() for r in row})
    lines = [f"unpruned: {baseline:.4f}", "", "| layer | " + " | ".join(f"{r:g}" for r in ratios) + " |",
             "|---|" + "---|" * len(ratios)]
    for name, row in table.items():
        lines.append(f"| {name} | " + " | ".join(f"{row[r]:.4f}" if r in row else "-" for r in ratios) + " |")
    return "\n".join(lines) + "\n"
