"""The step blocks shared by the recurrent kernels' loops over sorted, time-major runs."""
import itertools

__all__ = ["segments"]


def segments(active, n, arrays):
    """The steps grouped by their active row count: a list of (m, [a[t0:t1, :, :m] for a in arrays]).

    ``active`` is the per-step count of running rows (non-increasing; rows sorted by
    decreasing length), ``arrays`` are time-major (T', S, N, …) arrays of ``n`` rows.
    Each block covers the consecutive steps t0 <= t < t1 with active[t] = m > 0;
    the loops walk a block's steps with ``zip`` (one view per array per step).
    """
    blocks, start = [], 0
    for m, steps in itertools.groupby(active):
        end = start + len(list(steps))
        if m:
            blocks.append((m, [a[start:end] if m == n else a[start:end, :, :m] for a in arrays]))
        start = end
    return blocks
