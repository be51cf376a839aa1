"""Timing of benchmark steps: the repeated-run timers every ``oar bench`` suite uses.

Each runs ``fn()`` ``warmup`` times untimed, then ``repeat`` times timed. The
minimum is the least disturbed by other work on the machine; the median is
given where a step varies by itself (e.g. a data loader). CPU time counts
every thread of this process and is the steadier figure on a shared machine.
"""
import statistics
import time

__all__ = ["run_times", "best_time", "best_times", "median_time", "peak_rss_mb"]


def run_times(fn, repeat=5, warmup=1, before_each=None):
    """(wall seconds, CPU seconds) lists of ``repeat`` timed runs of ``fn()`` after ``warmup`` untimed ones.

    ``before_each``: called untimed before every timed run (e.g. a barrier).
    """
    for _ in range(warmup):
        fn()
    walls, cpus = [], []
    for _ in range(repeat):
        if before_each is not None:
            before_each()
        wall, cpu = time.perf_counter(), time.process_time()
        fn()
        walls.append(time.perf_counter() - wall)
        cpus.append(time.process_time() - cpu)
    return walls, cpus


def best_time(fn, repeat=5, warmup=1):
    """Shortest wall time of ``fn()`` in seconds."""
    return min(run_times(fn, repeat, warmup)[0])


def best_times(fn, repeat=3, warmup=1):
    """(shortest wall time, shortest CPU time) of ``fn()`` in seconds."""
    walls, cpus = run_times(fn, repeat, warmup)
    return min(walls), min(cpus)


def median_time(fn, repeat=5, warmup=1, before_each=None):
    """Median wall time of ``fn()`` in seconds."""
    return statistics.median(run_times(fn, repeat, warmup, before_each)[0])


def peak_rss_mb():
    """Peak resident memory of this process in MiB (``VmHWM``). Unlike ``getrusage``'s ``ru_maxrss``, which Linux
    carries over ``fork`` and ``exec`` (a child started by a 2 GB parent reports 2 GB), it counts only this
    process image. Falls back to ``ru_maxrss`` where ``/proc`` is missing."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except (OSError, ValueError, IndexError):
        pass
    import resource
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
