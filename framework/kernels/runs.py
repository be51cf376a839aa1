"""The row order of the recurrent kernels: sequences sorted by decreasing length, time-major runs (one per
direction), the gathers between them and the ops' batch-major arrays, and the step blocks their loops walk."""
import itertools

import numpy

from .. import backend

__all__ = ["segments", "time_index", "SortedRuns"]


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


def time_index(lengths, num_steps, reverse):
    """(N, T) int64 source positions of the run's steps: t, or lengths-1-t inside each length when reversed.

    The map is its own inverse, so it also puts a run's step s back at its position.
    """
    xp = backend.get_array_module(lengths)
    steps = xp.arange(num_steps, dtype=xp.int64)[None, :]
    if not reverse:
        return xp.broadcast_to(steps, (len(lengths), num_steps))
    return xp.where(steps < lengths[:, None], lengths[:, None] - 1 - steps, steps)


class SortedRuns:
    """Gathers between batch-major (N, T, F) arrays and the GRU kernel's sorted, time-major runs (T, S, N, F).

    The kernel's row i is sequence ``order[i]`` (rows by decreasing length) and
    its step t of run s reads position ``index[s][n, t]`` of sequence n (t, or
    lengths-1-t inside the length for a reverse run); ``active[t]`` (host ints)
    counts the rows still running at step t. The position map is its own
    inverse and ``rank`` inverts ``order``, so one gather serves both ways.
    """

    def __init__(self, lengths, num_steps, reverses):
        xp = backend.get_array_module(lengths)
        self.lengths = lengths
        self.order = xp.argsort(-lengths)
        self.rank = xp.empty_like(self.order)
        self.rank[self.order] = xp.arange(len(lengths))
        host = numpy.asarray(backend.to_device(lengths, "cpu"))
        self.active = (host[None, :] > numpy.arange(num_steps)[:, None]).sum(axis=1).tolist()
        self.reverses = tuple(bool(reverse) for reverse in reverses)
        self.index = [time_index(lengths, num_steps, reverse) for reverse in reverses]

    def to_runs(self, arrays, columns=slice(None)):
        """S arrays (N, T, F) -> (T, S, N, F') in run order, F' the given ``columns`` of F."""
        xp = backend.get_array_module(arrays[0])
        n, num_steps = arrays[0].shape[:2]
        width = len(range(arrays[0].shape[2])[columns])
        out = xp.empty((num_steps, len(arrays), n, width), dtype=arrays[0].dtype)
        for s, a in enumerate(arrays):
            out[:, s] = a[self.order[None, :], self.index[s][self.order].T, columns]
        return out

    def from_runs(self, runs, offset=0):
        """(T', S, N, F) in run order -> S arrays (N, T, F), reading step t at ``runs[t + offset, s]``."""
        return [runs[index + offset, s, self.rank[:, None]] for s, index in enumerate(self.index)]

    def last(self, states):
        """Each run's state after each row's last step, (S, N, D) in batch order, from states (T+1, S, N, D)."""
        xp = backend.get_array_module(states)
        return xp.stack([states[self.lengths, s, self.rank] for s in range(len(self.index))])

    def sort_rows(self, a):
        """(S, N, F) in batch order -> run order."""
        return a[:, self.order]

    def unsort_rows(self, a):
        """(S, N, F) in run order -> batch order."""
        return a[:, self.rank]
