"""The NumPy work that BLAS does not thread, spread over the cores by one small thread pool.

BLAS runs a GEMM on every core, but NumPy runs each elementwise ufunc, reduction
and copy on one. NumPy releases the GIL inside such calls on large arrays, so the
same call on disjoint chunks of the arrays, one chunk per thread, runs on several
cores at once. :func:`run_chunks` splits a job over ``[0, length)`` into at most
:func:`num_threads` contiguous ranges and runs them on the pool (the calling
thread takes the first); :func:`elementwise` is the common case of one ufunc over
same-shaped or broadcast arrays.

Every chunk computes exactly what the whole call computes on its part: an
elementwise result or a copy is bit for bit the unchunked one, whatever the
thread count. A reduction split along a reduced axis sums partial sums and is
equal only within rounding (the callers say so where they do it).

The thread count is ``OAR_NUM_THREADS``, else ``OMP_NUM_THREADS`` or
``OPENBLAS_NUM_THREADS`` (the BLAS thread count), else the cores; a count above
the cores this process may run on is clamped to them with one warning
(:func:`requested_threads`, which ONNX Runtime's sessions read too);
:func:`set_num_threads` changes the pool and, through threadpoolctl when it is
installed, BLAS too. Work smaller than :data:`MIN_CHUNK_ELEMENTS` per chunk runs
in the calling thread, as does any call made from inside a chunk.
"""
import math
import os
import threading
import warnings
from concurrent.futures import ThreadPoolExecutor

import numpy

from .settings import env_int

__all__ = ["MIN_CHUNK_ELEMENTS", "THREAD_VARIABLES", "available_cores", "clamp_threads", "requested_threads", "num_threads", "set_num_threads", "chunk_bounds", "run_chunks", "elementwise", "copyto",
           "fill"]

#: A chunk of fewer elements than this is not worth handing to another thread: below ~2 MB of float32 an
#: elementwise pass runs from cache in well under a millisecond, and splitting it was measured slower.
MIN_CHUNK_ELEMENTS = 1 << 19

_state = threading.local()          # .inside: this thread is running a chunk
_lock = threading.Lock()
_pool = None                        # ThreadPoolExecutor of num_threads() - 1 workers, made on first use
_threads = None                     # the configured count; None until first read


THREAD_VARIABLES = ("OAR_NUM_THREADS", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS")
_clamped = {}                       # {(variable, count): cores} already warned about


def available_cores():
    """The cores this process may run on (its CPU affinity where the system says, else the machine's)."""
    try:
        return len(os.sched_getaffinity(0)) or 1
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def clamp_threads(count, source):
    """``count`` threads, at most :func:`available_cores`; a larger count gives one warning naming ``source``
    (the variable or argument that asked for it) and the cores."""
    cores = available_cores()
    if count <= cores:
        return count
    if (source, count) not in _clamped:
        _clamped[(source, count)] = cores
        warnings.warn(f"{source}={count} asks for more threads than the {cores} cores this process may run on; "
                      f"using {cores}", RuntimeWarning, stacklevel=3)
    return cores


def requested_threads(names=THREAD_VARIABLES):
    """The thread count the first set variable of ``names`` asks for, clamped to the cores (checked: a value that
    is not a positive integer is a SettingError naming the variable), or None when none is set."""
    for name in names:
        count = env_int(name)
        if count is not None:
            return clamp_threads(count, name)
    return None


def num_threads():
    """The number of threads the non-GEMM work is spread over (1: none is)."""
    global _threads
    if _threads is None:
        requested = requested_threads()
        _threads = available_cores() if requested is None else requested
    return _threads


def set_num_threads(count):
    """Use ``count`` threads for the chunked work, and for BLAS when threadpoolctl is installed."""
    global _threads, _pool
    count = int(count)
    if count < 1:
        raise ValueError(f"set_num_threads: need a positive count, got {count}")
    with _lock:
        _threads = count
        if _pool is not None:
            _pool.shutdown(wait=True)
            _pool = None
    try:
        import threadpoolctl
    except ImportError:
        return
    threadpoolctl.threadpool_limits(count, user_api="blas")


def _forget_pool_in_child():
    """After ``fork`` the child has none of the parent's pool threads: it makes its own pool on first use."""
    global _pool, _lock
    _pool = None
    _lock = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pool_in_child)


def _executor():
    global _pool
    with _lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(max_workers=num_threads() - 1, thread_name_prefix="oar")
        return _pool


def chunk_bounds(length, elements_per_index=1, threads=None):
    """Up to ``threads`` (default :func:`num_threads`) contiguous ranges [(start, stop), …] covering
    [0, length), each of at least :data:`MIN_CHUNK_ELEMENTS` elements when an index is
    ``elements_per_index`` elements (always one range when the job is small)."""
    threads = num_threads() if threads is None else threads
    chunks = min(threads, length, max(1, length * elements_per_index // MIN_CHUNK_ELEMENTS))
    edges = [length * i // chunks for i in range(chunks + 1)] if chunks > 1 else [0, length]
    return list(zip(edges[:-1], edges[1:]))


def run_chunks(fn, length, elements_per_index=1):
    """Call ``fn(start, stop)`` on the ranges of :func:`chunk_bounds`, in parallel; return when all are done.

    Each call must touch only its own part of any array it writes. An exception in
    any chunk is raised here (after every chunk has finished).
    """
    if length <= 0:
        return
    if getattr(_state, "inside", False) or num_threads() == 1:
        fn(0, length)
        return
    bounds = chunk_bounds(length, elements_per_index)
    if len(bounds) == 1:
        fn(0, length)
        return
    futures = [_executor().submit(_run_inside, fn, start, stop) for start, stop in bounds[1:]]
    try:
        _run_inside(fn, *bounds[0])
    finally:
        errors = [future.exception() for future in futures]
    for error in errors:
        if error is not None:
            raise error


def _run_inside(fn, start, stop):
    _state.inside = True
    try:
        fn(start, stop)
    finally:
        _state.inside = False


def elementwise(ufunc, *operands, out=None, dtype=None):
    """``ufunc(*operands, out=out)`` on NumPy arrays, chunked over the threads; returns ``out``.

    Operands are arrays broadcasting to the result's shape, or scalars. Without
    ``out`` a new C-contiguous array of the broadcast shape and ``dtype`` (default:
    the ufunc's result type) is made. Chunks run along the result's first axis
    (over the flat result when every operand has its shape and all are
    C-contiguous). Anything that is not NumPy runs as one plain call.
    """
    arrays = [a for a in operands if isinstance(a, numpy.ndarray)]
    if not arrays or not all(isinstance(a, (numpy.ndarray, numpy.generic, int, float)) for a in operands):
        return ufunc(*operands) if out is None else ufunc(*operands, out=out)
    shape = numpy.broadcast_shapes(*(a.shape for a in arrays))
    if out is None and dtype is None and (num_threads() == 1 or math.prod(shape) < 2 * MIN_CHUNK_ELEMENTS):
        return ufunc(*operands, order="C")                  # one plain call: nothing to split
    if out is None:
        if dtype is None:
            dtype = ufunc(*(a.ravel()[:1] if isinstance(a, numpy.ndarray) else a for a in operands)).dtype
        out = numpy.empty(shape, dtype=dtype)
    if out.size < 2 * MIN_CHUNK_ELEMENTS or num_threads() == 1 or out.ndim == 0:
        return ufunc(*operands, out=out)
    if out.flags.c_contiguous and all(a.shape == shape and a.flags.c_contiguous for a in arrays):
        flat_out = out.reshape(-1)
        flat = [a.reshape(-1) if isinstance(a, numpy.ndarray) else a for a in operands]

        def flat_chunk(start, stop):
            ufunc(*(a[start:stop] if isinstance(a, numpy.ndarray) else a for a in flat), out=flat_out[start:stop])
        run_chunks(flat_chunk, out.size)
        return out
    rows = out.shape[0]
    sliced = [isinstance(a, numpy.ndarray) and a.ndim == out.ndim and a.shape[0] == rows for a in operands]

    def row_chunk(start, stop):
        ufunc(*(a[start:stop] if cut else a for a, cut in zip(operands, sliced)), out=out[start:stop])
    run_chunks(row_chunk, rows, out.size // max(rows, 1))
    return out


def copyto(dst, src):
    """``numpy.copyto(dst, src)`` (casting as it does) in chunks along the first axis of ``dst``; ``src`` has
    ``dst``'s shape or broadcasts to it without a first axis of its own."""
    if not isinstance(dst, numpy.ndarray) or dst.ndim == 0:
        dst[...] = src
        return dst
    whole = isinstance(src, numpy.ndarray) and src.ndim == dst.ndim and src.shape[0] == dst.shape[0]
    run_chunks(lambda lo, hi: numpy.copyto(dst[lo:hi], src[lo:hi] if whole else src, casting="unsafe"),
               dst.shape[0], dst.size // max(dst.shape[0], 1))
    return dst


def fill(a, value):
    """``a.fill(value)`` in chunks along the first axis."""
    if not isinstance(a, numpy.ndarray) or a.ndim == 0:
        a.fill(value)
        return a
    run_chunks(lambda lo, hi: a[lo:hi].fill(value), a.shape[0], a.size // max(a.shape[0], 1))
    return a
