"""What importing ``framework`` sets for the process: glibc's allocator keeps freed arrays, and OpenBLAS's idle
threads stop spinning sooner. Both were found measuring train steps on a 2-core virtual machine.

**Freed arrays stay in the heap** (:func:`keep_freed_memory`, run once at import). A training step allocates
and frees the same large arrays every step (gate buffers, GEMM outputs, gradients). glibc's ``malloc`` serves an
allocation above its mmap threshold (128 KiB, raised up to 32 MiB as blocks are freed) with a fresh ``mmap``
and gives it back with ``munmap`` when freed, and trims the heap's free top above 128 KiB; so each step
faults every page of those arrays in again, and with several threads every ``munmap`` also stops the other
cores to flush their address translations. A Senta LSTM step took about 5,500 page faults, and the first GEMM
into a fresh 13 MB output took 13 ms on two threads against 3 ms into reused memory. So the mmap threshold
becomes :data:`MMAP_THRESHOLD` and the trim threshold :data:`TRIM_THRESHOLD` (``mallopt``): arrays up to
1 GiB come from the heap, and freed memory stays there for the next allocation (a Senta head on LAC's trunk
with hashed bigrams has a 262,144-row table at 256 features, 268 MB: zeroing and touching it took 138 ms
mapped afresh, 43 ms reused). The process's resident size then stays at its peak rather than falling between
steps; a larger array is still mapped and unmapped on its own. Elsewhere than glibc (macOS, Windows; musl's
``mallopt`` does nothing and says so) nothing changes, and neither does it where the process sets glibc's
malloc itself: through ``MALLOC_MMAP_THRESHOLD_``,
``MALLOC_TRIM_THRESHOLD_``, ``MALLOC_TOP_PAD_``, ``MALLOC_MMAP_MAX_`` or a ``glibc.malloc.*`` entry of
``GLIBC_TUNABLES`` (``MALLOC_TRIM_THRESHOLD_=131072`` gives glibc's defaults back).

**OpenBLAS's threads sleep after 2^20 cycles idle** (``OPENBLAS_THREAD_TIMEOUT`` =
:data:`OPENBLAS_THREAD_TIMEOUT`, set at import unless the environment sets it). After a threaded GEMM,
OpenBLAS's worker threads spin waiting for the next one for 2^28 cycles (about 0.1 s) by default, and a
spinning worker takes a core from oar's own threads: the two directions of a Senta BiLSTM's backward pass,
each on its own thread, took 29 ms after a threaded GEMM against 14 ms after a pause. At 2^20 cycles (about
3 ms of spinning here, against 0.1 s) the workers still spin between back-to-back GEMMs but sleep soon after
a layer's; of the whole Senta train steps on two threads measured at 2^4, 2^14, 2^20 and 2^28, 2^20 was the
fastest or tied. OpenBLAS reads the variable when it loads, so this holds where NumPy is imported after oar: the
``oar`` command, the processes it starts, a script that imports oar first. For the same reason
``KMP_BLOCKTIME`` becomes 0 (unless set): the OpenMP threads of the optional MKL provider
(:mod:`framework.kernels.providers`, loaded later by oar itself) sleep as soon as a GEMM ends instead of
spinning 200 ms.
"""
import ctypes
import os
import sys

__all__ = ["MMAP_THRESHOLD", "TRIM_THRESHOLD", "OPENBLAS_THREAD_TIMEOUT", "keep_freed_memory", "set_up"]

MMAP_THRESHOLD = 1 << 30              # bytes: larger allocations are still mapped and unmapped on their own
TRIM_THRESHOLD = 2 ** 31 - 1          # bytes of free heap top kept (mallopt takes an int)
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3      # glibc's mallopt parameters
OPENBLAS_THREAD_TIMEOUT = 20         # log2 of the cycles an idle OpenBLAS worker spins before it sleeps
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


def set_up():
    """What importing ``framework`` does first, before NumPy loads: the OpenBLAS and MKL spin limits (unless the
    environment sets ``OPENBLAS_THREAD_TIMEOUT`` / ``KMP_BLOCKTIME``) and :func:`keep_freed_memory`."""
    os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", str(OPENBLAS_THREAD_TIMEOUT))
    os.environ.setdefault("KMP_BLOCKTIME", "0")
    keep_freed_memory()
