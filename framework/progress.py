"""Progress bars for every long step (training, evaluation, batch inference, fetching, generation).

One place that configures tqdm the same way everywhere: it writes to stderr, so
stdout keeps only results, and it hides itself when stderr is not a terminal
(``disable=None``), so logs and pipes stay clean. ``OAR_PROGRESS=1`` forces it
on, ``OAR_PROGRESS=0`` off.
"""
import sys

from tqdm import tqdm

from .settings import env_flag

__all__ = ["progress_bar", "disabled"]


def disabled():
    """Whether ``OAR_PROGRESS`` hides the bars (True), shows them (False) or leaves it to tqdm (None: hidden when
    stderr is not a terminal); a bad value is one SettingError."""
    forced = env_flag("OAR_PROGRESS", None)
    return None if forced is None else not forced      # None: tqdm's own rule, hidden when not a terminal


def progress_bar(iterable=None, total=None, desc=None, unit="it", enabled=True, **options):
    """A tqdm bar on stderr over ``iterable`` (or a manual one with ``total``; call ``update(n)``).

    ``enabled=False`` gives a bar that shows nothing (same interface), e.g. on MPI ranks other than 0.
    ``unit_scale`` and the rest of tqdm's options pass through.
    """
    return tqdm(iterable, total=total, desc=desc, unit=unit, file=sys.stderr, dynamic_ncols=True,
                disable=disabled() if enabled else True, leave=False, **options)
