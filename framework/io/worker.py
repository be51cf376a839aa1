"""Loading batches: in the main thread, or in a pool of worker threads or processes.

A task is ``(batch_no, key, positions, items)``: ``positions`` are the sample
indices of one batch (stream positions for an iterable dataset, whose
``items`` are sent along); ``key`` is ``(seed, epoch)``. A worker fetches the
whole batch and collates it; the pool hands results back in ``batch_no``
order, whatever order the workers finish in.

Process workers start with ``fork`` where the platform has it, else ``spawn``
(then the dataset and collate_fn must be picklable); they ignore SIGINT, so
Ctrl-C reaches only the main process, which shuts them down. Datasets run in
process workers must not touch the GPU. Arrays of 64 KiB or more travel from
process workers as files in a shared-memory folder (``/dev/shm`` where it
exists): one copy on each side instead of a trip through a pipe, which keeps
the main process's cost per batch small as workers are added. When no batch
has come from the process workers for ``_STALL_S`` seconds, the pool warns once
and asks each of them (SIGUSR1, :mod:`faulthandler`) to write its Python stacks
to stderr, so a worker stuck on a lock it inherited through ``fork`` says where.
"""
import contextlib
import faulthandler
import io
import itertools
import multiprocessing
import os
import pickle
import queue
import shutil
import signal
import tempfile
import threading
import time
import traceback
import warnings

import numpy

from ..random import get_rng
from ..errors import UserError

__all__ = ["DataLoaderError", "sample_rng", "load_batch", "WorkerPool"]

_POLL_S = 0.1
_GRACE_S = {"process": 0.5, "thread": 5.0}
_STALL_S = 300.0                    # no batch from the process workers this long: they write their stacks
_STACKS_SIGNAL = getattr(signal, "SIGUSR1", None)
_SHARED_MIN_BYTES = 1 << 16
_SHARED_MEMORY_DIR = "/dev/shm"
_context = threading.local()
_file_numbers = itertools.count()


class DataLoaderError(UserError, RuntimeError):
    """Loading a batch failed: a sample or collate_fn raised, a worker died, or a timeout passed.

    Attributes: ``index`` (the sample index or stream position, or None),
    ``exc_type`` and ``exc_message`` (the original exception's type name and
    message, or None).
    """

    def __init__(self, message, index=None, exc_type=None, exc_message=None):
        super().__init__(message)
        self.index, self.exc_type, self.exc_message = index, exc_type, exc_message


def sample_rng():
    """The NumPy Generator for random augmentation of the sample being loaded.

    Inside a DataLoader it is seeded by ``(loader seed, epoch, sample index)``,
    so a sample gets the same draws whatever the number and kind of workers.
    Outside a loader it is the framework's generator (``framework.random.get_rng()``).
    """
    key = getattr(_context, "key", None)
    if key is None:
        return get_rng()
    if _context.rng is None:
        _context.rng = numpy.random.default_rng(key)
    return _context.rng


class _Failure:
    """What went wrong in one batch, in a form that survives pickling (the exception itself does not)."""

    def __init__(self, exc, index=None, positions=None):
        self.index, self.positions = index, positions
        self.exc_type, self.exc_message = type(exc).__name__, str(exc)
        self.traceback = None
        self.exception = exc

    def __getstate__(self):
        return {**self.__dict__, "traceback": worker_traceback(self.exception), "exception": None}

    def error(self, where=""):
        """The DataLoaderError to raise in the main process; ``where`` names the worker kind."""
        what = f"sample {self.index}" if self.index is not None else f"collate_fn on samples {self.positions}"
        error = DataLoaderError(f"DataLoader{where}: {what} raised {self.exc_type}: {self.exc_message}",
                                self.index, self.exc_type, self.exc_message)
        if self.exception is None:
            error.add_note("Traceback in the worker:\n" + self.traceback)
        return error


def worker_traceback(exc):
    """The text of ``exc``'s traceback, made only when a failure crosses a process.

    Python 3.11 parses source lines to place its ``^^^`` markers, and that parser
    is not thread-safe (a concurrent parse raises ``SystemError``); the frames
    are then listed without the markers.
    """
    try:
        return "".join(traceback.format_exception(exc))
    except SystemError:
        frames = traceback.extract_tb(exc.__traceback__)
        listed = "".join(f'  File "{frame.filename}", line {frame.lineno}, in {frame.name}\n' for frame in frames)
        return listed + "".join(traceback.format_exception_only(exc))


def raise_failure(outcome, where=""):
    """Return ``outcome`` (a batch), or raise the DataLoaderError of a failed batch."""
    if isinstance(outcome, _Failure):
        raise outcome.error(where) from outcome.exception
    return outcome


def stream_failure(exc, position):
    """The DataLoaderError for an iterable dataset that raised at stream ``position``."""
    return _Failure(exc, index=position).error(" (IterableDataset stream)")


def load_batch(dataset, collate_fn, key, positions, items=None, stop=None):
    """Fetch samples ``positions`` of ``dataset`` (or take ``items``) and collate them.

    Returns the batch, a failure record (see :func:`raise_failure`), or None when
    ``stop`` (an Event) was set on the way.
    """
    if items is None:
        items = []
        for index in positions:
            if stop is not None and stop.is_set():
                return None
            _context.key, _context.rng = key + (index,), None
            try:
                items.append(dataset[index])
            except Exception as exc:
                return _Failure(exc, index=index)
            finally:
                _context.key = None
    try:
        return collate_fn(items)
    except Exception as exc:
        return _Failure(exc, positions=list(positions))


def _worker_loop(dataset, collate_fn, tasks, results, stop, in_process, shared_folder):
    if in_process:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        results.cancel_join_thread()
        if _STACKS_SIGNAL is not None:
            with contextlib.suppress(ValueError, OSError, RuntimeError, AttributeError):
                faulthandler.register(_STACKS_SIGNAL, all_threads=True)
    while True:
        task = tasks.get()
        if task is None or stop.is_set():
            return
        batch_no, key, positions, items = task
        outcome = load_batch(dataset, collate_fn, key, positions, items, stop)
        if stop.is_set():
            return
        results.put((batch_no, _pickled(outcome, positions, shared_folder) if in_process else outcome))


def _pickled(outcome, positions, shared_folder):
    try:
        return _dumps(outcome, shared_folder)
    except Exception as exc:
        failure = _Failure(type(exc)(f"the batch cannot be sent back from the worker process: {exc}"),
                           positions=list(positions))
        return _dumps(failure, None)


def _dumps(obj, shared_folder):
    if shared_folder is None:
        return pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    buffer = io.BytesIO()
    _SharedArrayPickler(buffer, shared_folder).dump(obj)
    return buffer.getvalue()


class _SharedArrayPickler(pickle.Pickler):
    """Pickles large arrays as files in ``folder`` (read back, and deleted, by :func:`_read_shared`)."""

    def __init__(self, file, folder):
        super().__init__(file, protocol=pickle.HIGHEST_PROTOCOL)
        self.folder = folder

    def reducer_override(self, obj):
        if type(obj) is not numpy.ndarray or obj.nbytes < _SHARED_MIN_BYTES or obj.dtype.hasobject:
            return NotImplemented
        path = os.path.join(self.folder, f"{os.getpid()}-{next(_file_numbers)}")
        try:
            with open(path, "wb") as f:
                numpy.ascontiguousarray(obj).tofile(f)
        except OSError:  # shared memory full: send the array through the pipe instead
            with contextlib.suppress(OSError):
                os.unlink(path)
            return NotImplemented
        return _read_shared, (path, obj.dtype, obj.shape)


def _read_shared(path, dtype, shape):
    array = numpy.fromfile(path, dtype=dtype).reshape(shape)
    os.unlink(path)
    return array


def _make_shared_folder():
    """A fresh folder in shared memory for arrays sent by process workers, or None where there is none."""
    if not os.path.isdir(_SHARED_MEMORY_DIR):
        return None
    try:
        return tempfile.mkdtemp(prefix="oar-loader-", dir=_SHARED_MEMORY_DIR)
    except OSError:
        return None


def _start_method():
    return "fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn"


def _exit_reason(code):
    if code is None:
        return ""
    if code < 0:
        return f" (killed by signal {signal.Signals(-code).name})"
    return f" (exit code {code})"


class WorkerPool:
    """``num_workers`` threads or processes (``worker_type``) that load batches; results come back in order.

    ``dataset`` is None for iterable datasets (tasks then carry their items).
    ``timeout`` (seconds, 0 = none) bounds the wait for one batch.
    ``start_method`` overrides the process start method (``"fork"``/``"spawn"``/``"forkserver"``).
    """

    def __init__(self, dataset, collate_fn, num_workers, worker_type="thread", timeout=0, start_method=None):
        self.kind = worker_type
        self.timeout = timeout
        self._ready = {}
        self._closed = False
        self._shared_folder = None
        if worker_type == "process":
            start_method = start_method or _start_method()
            ctx = multiprocessing.get_context(start_method)
            self._tasks, self._results, self._stop, spawn = ctx.Queue(), ctx.Queue(), ctx.Event(), ctx.Process
            self._shared_folder = _make_shared_folder()
        else:
            self._tasks, self._results, self._stop = queue.Queue(), queue.Queue(), threading.Event()
            spawn = threading.Thread
        args = (dataset, collate_fn, self._tasks, self._results, self._stop, worker_type == "process",
                self._shared_folder)
        self._workers = [spawn(target=_worker_loop, args=args, name=f"DataLoader-{worker_type}-{i}", daemon=True)
                         for i in range(num_workers)]
        started = []
        try:
            for worker in self._workers:
                worker.start()
                started.append(worker)
        except Exception as exc:
            self._workers = started
            self.close()
            hint = "" if start_method in (None, "fork") else \
                f"; with the {start_method} start method the dataset and collate_fn must be picklable"
            raise DataLoaderError(f"DataLoader: cannot start {worker_type} workers "
                                  f"({type(exc).__name__}: {exc}){hint}") from exc

    def submit(self, task):
        """Queue a task ``(batch_no, key, positions, items)``."""
        self._tasks.put(task)

    def result(self, batch_no, positions):
        """The batch ``batch_no`` (sample ``positions``); raises DataLoaderError if it failed."""
        deadline = time.monotonic() + self.timeout if self.timeout else None
        last_result, stall_reported = time.monotonic(), False
        while batch_no not in self._ready:
            try:
                done, outcome = self._results.get(timeout=_POLL_S)
            except queue.Empty:
                self._check_workers(batch_no)
                if deadline is not None and time.monotonic() > deadline:
                    raise DataLoaderError(f"DataLoader: timed out after {self.timeout} s waiting for batch "
                                          f"{batch_no} (samples {positions}) from the {self.kind} workers") from None
                if not stall_reported and self.kind == "process" and time.monotonic() - last_result > _STALL_S:
                    stall_reported = True
                    self._ask_for_stacks(batch_no)
                continue
            last_result = time.monotonic()
            self._ready[done] = outcome
        outcome = self._ready.pop(batch_no)
        if self.kind == "process":
            outcome = pickle.loads(outcome)
        return raise_failure(outcome, f" (worker {self.kind})")

    def _ask_for_stacks(self, batch_no):
        """Warn that the process workers sent nothing for ``_STALL_S`` s; each writes its stacks to stderr."""
        warnings.warn(f"DataLoader: no batch from the process workers for {_STALL_S:g} s (waiting for batch "
                      f"{batch_no}); their Python stacks follow on stderr", RuntimeWarning, stacklevel=3)
        if _STACKS_SIGNAL is None:
            return
        for worker in self._workers:
            if worker.is_alive():
                with contextlib.suppress(ProcessLookupError, TypeError):
                    os.kill(worker.pid, _STACKS_SIGNAL)

    def _check_workers(self, batch_no):
        for worker in self._workers:
            if not worker.is_alive():
                code = getattr(worker, "exitcode", None)
                raise DataLoaderError(f"DataLoader: {worker.name} stopped unexpectedly{_exit_reason(code)} "
                                      f"while batch {batch_no} was loading")

    def close(self):
        """Stop the workers: idle ones exit, busy threads finish their batch, busy processes are terminated."""
        if self._closed:
            return
        self._closed = True
        self._stop.set()
        for _ in self._workers:
            self._tasks.put(None)
        deadline = time.monotonic() + _GRACE_S[self.kind]
        for worker in self._workers:
            worker.join(max(0.0, deadline - time.monotonic()))
        if self.kind == "process":
            self._close_processes()

    def _close_processes(self):
        for worker in self._workers:
            if worker.is_alive():
                worker.terminate()
            worker.join()
            worker.close()
        _drain(self._tasks)
        for q in (self._tasks, self._results):
            q.close()
            q.join_thread()
        if self._shared_folder is not None:
            shutil.rmtree(self._shared_folder, ignore_errors=True)


def _drain(q):
    """Empty a multiprocessing queue whose readers are gone, so its feeder thread can finish."""
    try:
        while True:
            q.get(timeout=0.01)
    except (queue.Empty, OSError, EOFError, ValueError):
        pass
