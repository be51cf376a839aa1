"""A one-line progress display for the long-running data tools (set generation, feature extraction)."""
import sys
import time

__all__ = ["ProgressLine"]


class ProgressLine:
    """``progress(done, total)`` rewrites one line on ``stream``: ``done/total <unit> (rate/s, ETA)``.

    Updates at most every ``interval`` seconds, and always at the end.
    """

    def __init__(self, unit="videos", stream=None, interval=0.5):
        self.unit, self.stream, self.interval = unit, stream or sys.stderr, interval
        self.start = self.shown = None

    def __call__(self, done, total):
        now = time.perf_counter()
        if self.start is None:
            self.start = now
        if done < total and self.shown is not None and now - self.shown < self.interval:
            return
        self.shown = now
        rate = done / max(now - self.start, 1e-9)
        eta = (total - done) / rate if rate > 0 else 0.0
        end = "\n" if done >= total else ""
        print(f"\r{done}/{total} {self.unit} ({rate:.1f}/s, {eta:.0f} s left)", end=end, file=self.stream,
              flush=True)
