"""Writing a set of generated videos: worker processes (:func:`map_indexed`), text files (:func:`write_lines`)
and the marker of a finished set (:func:`ensure_made`)."""
import json
import multiprocessing
import os
import sys

from framework.config import ConfigError
from framework.progress import progress_bar
from framework.serialization import atomic_write

__all__ = ["map_indexed", "write_lines", "ensure_made"]


def write_lines(path, lines):
    """Write ``lines`` (str, without newlines) to ``path``, one per line, atomically."""
    with atomic_write(path) as f:
        f.write("".join(line + "\n" for line in lines))


def ensure_made(root, settings, what, make):
    """``root`` once it holds a finished set made with ``settings`` (a JSON-ready dict): ``make(root)`` (returning
    a JSON-ready summary) runs first unless ``root/complete.json``, written last, says so already; a marker of
    other settings is a ConfigError naming ``what``. Returns ``root``."""
    root = os.fspath(root)
    marker = os.path.join(root, "complete.json")
    if os.path.isfile(marker):
        with open(marker, encoding="utf-8") as f:
            found = json.load(f)
        if found.get("settings") == json.loads(json.dumps(settings)):
            return root
        raise ConfigError(f"{root} holds a {what} made with other settings ({found.get('settings')}); "
                          "choose another root")
    print(f"generating the {what} in {root}", file=sys.stderr, flush=True)
    result = make(root)
    write_lines(marker, [json.dumps({"settings": settings, "result": result})])
    return root


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
