"""The process's allocator kept from returning freed arrays to the system.

A training step allocates and frees the same large arrays every step (gate buffers, GEMM outputs, gradients).
glibc's ``malloc`` serves an allocation above its mmap threshold (128 KiB, raised up to 32 MiB as blocks are
freed) with a fresh ``mmap`` and gives it back with ``munmap`` when freed, and trims the heap's free top above
128 KiB; so each step faults every page of those arrays in again, and with several threads every ``munmap`` also
stops the other cores to flush their address translations. On a 2-core virtual machine a Senta LSTM step took
about 5,500 page faults, and the first GEMM into a fresh 13 MB output took 13 ms on two threads against 3 ms
into reused memory.

:func:`keep_freed_memory` (run once when ``framework`` is imported) sets glibc's mmap threshold to :data:`MMAP_THRESHOLD` and its trim threshold to :data:`TRIM_THRESHOLD` through
``mallopt``: arrays up to 256 MiB come from the heap, and freed memory stays there for the next allocation
rather than going back to the system. The process's resident size then stays at its peak rather than falling
between steps; a larger array is still mapped and unmapped on its own. Elsewhere than glibc (macOS, musl,
Windows; musl's ``mallopt`` does nothing and says so) nothing changes, and neither does it where the process sets glibc's malloc itself: through
``MALLOC_MMAP_THRESHOLD_``, ``MALLOC_TRIM_THRESHOLD_``, ``MALLOC_TOP_PAD_``, ``MALLOC_MMAP_MAX_`` or a
``glibc.malloc.*`` entry of ``GLIBC_TUNABLES`` (``MALLOC_TRIM_THRESHOLD_=131072`` gives glibc's defaults back).
"""
import ctypes
import os
import sys

__all__ = ["MMAP_THRESHOLD", "TRIM_THRESHOLD", "keep_freed_memory"]

MMAP_THRESHOLD = 256 << 20            # bytes: larger allocations are still mapped and unmapped on their own
TRIM_THRESHOLD = 2 ** 31 - 1          # bytes of free heap top kept (mallopt takes an int)
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3      # glibc's mallopt parameters
_GLIBC_VARIABLES = ("MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_", "MALLOC_TOP_PAD_", "MALLOC_MMAP_MAX_")


def _set_by_process():
    """Whether the environment sets glibc's malloc itself."""
    return (any(name in os.environ for name in _GLIBC_VARIABLES)
            or "glibc.malloc." in os.environ.get("GLIBC_TUNABLES", ""))


def keep_freed_memory():
    """Set glibc's mmap and trim thresholds (above) unless the environment sets glibc's malloc itself.
    Returns True when they were set, False where the environment sets them or the C library is not glibc."""
    if not sys.platform.startswith("linux") or _set_by_process():
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt          # the C library the process runs on
    except (OSError, AttributeError):
        return False
    mallopt.argtypes, mallopt.restype = (ctypes.c_int, ctypes.c_int), ctypes.c_int
    return bool(mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD)) and bool(mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD))
