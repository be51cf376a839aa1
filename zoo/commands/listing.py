"""``oar list``: the zoo's models, their task and headline test metrics (``--wide``, ``--json``)."""
import json

from ..catalog import cards
from ..tasks import TASK_TABLE

__all__ = ["add_arguments", "run"]


def add_arguments(parser):
    shape = parser.add_mutually_exclusive_group()
    shape.add_argument("--wide", action="store_true", help="every column, including where the weights came from")
    shape.add_argument("--json", action="store_true", help="one JSON object per card (the whole card)")


def _headline(entry, digits):
    metrics = entry.metrics
    spec = TASK_TABLE.get(entry.task)
    keys = [k for k in (spec.headline if spec else ()) if k in metrics] or \
        [k for k in metrics if k != "split" and isinstance(metrics[k], (int, float))][:3]    # no headline: the first three
    shown = " ".join(f"{k} {metrics[k]:.{digits}f}" for k in keys) or "-"
    if not keys or "split" not in metrics:
        return shown
    split = str(metrics["split"]) if digits > 3 else str(metrics["split"]).split(",")[0]   # narrow: the split's name
    return f"{shown} ({split})"


def run(args):
    """The zoo's models: name, task and headline test metrics (``--wide``: and source; ``--json``: whole cards)."""
    entries = list(cards().values())
    if args.json:
        for entry in entries:
            print(json.dumps(entry.to_mapping(), ensure_ascii=False))
        return
    rows = [("name", "task", "metrics")] + [(e.name, e.task, _headline(e, 4 if args.wide else 3))
                                            for e in entries]
    if args.wide:
        rows = [row + (source,) for row, source in zip(rows, ["source"] + [e.source or "-" for e in entries])]
    widths = [max(len(str(row[i])) for row in rows) for i in range(len(rows[0]) - 1)]
    for row in rows:
        print("  ".join(str(v).ljust(w) for v, w in zip(row, widths)) + "  " + str(row[-1]))
