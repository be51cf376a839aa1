"""Metrics over a sharded evaluation: every rank counts its shard, then the counts are merged.

A metric (``framework.engine.metrics.Metric``) exposes what it has
accumulated through ``state()`` -> ``{name: value}`` and takes a merged state
back through ``set_state(state)``. Merging sums numbers and arrays and
concatenates lists (in rank order), so additive counters (correct / total,
sums and counts, confusion matrices) and kept predictions (for a ranking
metric) both reduce exactly; ``compute()`` then gives every rank the metric of
the whole evaluation set.
"""
from .comm import DistributedError
from .env import get_communicator

__all__ = ["merge_states", "reduce_metrics", "check_reducible"]


def merge_states(states):
    """Merge the ``state()`` dicts of one metric from every rank: sum values, concatenate lists."""
    merged = {}
    for key in states[0]:
        values = [state[key] for state in states]
        if isinstance(values[0], list):
            merged[key] = [item for value in values for item in value]
        else:
            total = values[0]
            for value in values[1:]:
                total = total + value
            merged[key] = total
    return merged


def reduce_metrics(metrics, communicator=None):
    """Make every metric in ``metrics`` hold the merged counts of all ranks (one collective in all).

    Call it on every rank after the last ``update`` and before ``compute``.
    """
    communicator = communicator or get_communicator()
    if communicator.world_size == 1:
        return metrics
    gathered = communicator.all_gather_object([metric.state() for metric in metrics])
    for i, metric in enumerate(metrics):
        metric.set_state(merge_states([states[i] for states in gathered]))
    return metrics


def check_reducible(metrics):
    """Raise DistributedError naming the first metric that cannot give its ``state()``."""
    for metric in metrics:
        try:
            metric.state()
        except NotImplementedError as err:
            raise DistributedError(f"metric {type(metric).__name__} cannot be evaluated on several processes: "
                                   f"{err}") from None
    return metrics
