"""A timeout on blocking collectives: a rank that waits too long ends the job with a clear message.

When one rank dies, the MPI launcher ends the others; when one rank hangs
(a deadlock, a stuck filesystem, a collective that the other ranks never
call), nothing does. The watchdog is a daemon thread that watches the one
collective the main thread is blocked in; past its deadline it prints which
rank waited for what and for how long, and exits the process, so the
launcher ends the whole job instead of letting it hang.
"""
import contextlib
import os
import sys
import threading
import time

__all__ = ["Watchdog", "TIMEOUT_EXIT_CODE"]

TIMEOUT_EXIT_CODE = 124  # the exit status of coreutils' timeout(1)


class Watchdog:
    """Watches one blocking call at a time; exits the process past ``timeout`` seconds.

    Args:
        timeout: seconds a collective may block (None or <= 0: no limit).
        rank, world_size: named in the message.
    """

    def __init__(self, timeout, rank, world_size):
        self.rank, self.world_size = rank, world_size
        self._current = None  # (deadline, started, what) of the call being watched
        self._thread = None
        self.set_timeout(timeout)

    def set_timeout(self, timeout):
        """Seconds a call may block from now on (None or <= 0: no limit)."""
        self.timeout = float(timeout) if timeout and timeout > 0 else None

    @contextlib.contextmanager
    def watch(self, what):
        """Context around a blocking call named ``what`` (e.g. ``"all_reduce of 4096 float32"``)."""
        if self.timeout is None:
            yield
            return
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="oar-distributed-watchdog", daemon=True)
            self._thread.start()
        started = time.monotonic()
        self._current = (started + self.timeout, started, what)
        try:
            yield
        finally:
            self._current = None

    def _run(self):
        while True:
            time.sleep(min(1.0, (self.timeout or 4.0) / 4))
            current = self._current
            if current is not None and time.monotonic() > current[0]:
                self._expire(*current)

    def _expire(self, deadline, started, what):
        waited = time.monotonic() - started
        sys.stderr.write(
            f"oar.distributed: rank {self.rank} of {self.world_size}: {what} has waited {waited:.0f} s "
            f"(timeout {self.timeout:g} s); another rank has probably crashed or hangs. Ending the job "
            f"(set OAR_DIST_TIMEOUT or init_parallel_env(timeout=...) to wait longer).\n")
        sys.stderr.flush()
        os._exit(TIMEOUT_EXIT_CODE)
