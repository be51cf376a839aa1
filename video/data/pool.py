"""Writing a set of generated videos in worker processes: :func:`map_indexed`."""
import multiprocessing
import os

from framework.progress import progress_bar

__all__ = ["map_indexed"]


def map_indexed(function, jobs, workers=None, progress=None, desc="videos"):
    """``function(job) -> (index, value)`` over ``jobs`` in ``workers`` processes (default: all cores; fork where
    the platform has it); returns ``(values, workers)`` with ``values[index] = value`` (a list of len(jobs)).

    ``progress``: None or False shows nothing; True a progress bar on stderr named ``desc``
    (:func:`framework.progress.progress_bar`); a callable is called as ``progress(done, total)`` after each job.
    """
    total = len(jobs)
    workers = max(1, int(workers or os.cpu_count() or 1))
    values = [None] * total
    pool = None
    if workers == 1:
        results = map(function, jobs)
    else:
        method = "fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn"
        pool = multiprocessing.get_context(method).Pool(workers)
        results = pool.imap_unordered(function, jobs, chunksize=4)
    bar = progress_bar(total=total, desc=desc, unit="video") if progress is True else None
    try:
        for done, (index, value) in enumerate(results, start=1):
            values[index] = value
            if bar is not None:
                bar.update(1)
            elif callable(progress):
                progress(done, total)
    finally:
        if bar is not None:
            bar.close()
        if pool is not None:
            pool.close()
            pool.join()
    return values, workers
