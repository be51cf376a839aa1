"""Communicators: the collectives on raw arrays, for one process, over MPI, and over NCCL.

Every communicator offers the same methods on raw arrays (NumPy, or CuPy on
the NCCL path), all collective (every rank calls them in the same order):

- ``all_reduce(array, op)`` in place, ``op`` one of ``sum, max, min, prod, avg``;
- ``broadcast(array, root)`` in place;
- ``all_gather(array)`` -> a new array ``(world_size, *array.shape)``;
- ``all_reduce_async(array)`` -> a handle with ``test()`` and ``wait()``: the
  in-place sum is started now and complete after ``wait()``;
- ``barrier()``, ``all_gather_object(obj)`` -> list, ``broadcast_object(obj, root)``;
- ``dup()``: a communicator over the same ranks whose collectives never
  interleave with this one's (data parallelism reduces gradients on its own).

:class:`SingleProcess` is the world of one rank (every call a no-op).
:class:`MPICommunicator` runs them with mpi4py on NumPy buffers (CuPy arrays
are staged through host memory). :class:`NCCLCommunicator` runs CuPy arrays
through NCCL (``cupy.cuda.nccl``) on its own CUDA stream, ordered after the
work already queued on the current stream, and everything else through the
MPI communicator that bootstrapped it. Blocking MPI calls run under the
:class:`~framework.distributed.watchdog.Watchdog`.
"""
import numpy

from .. import backend
from ..errors import UserError

__all__ = ["REDUCE_OPS", "SingleProcess", "MPICommunicator", "NCCLCommunicator", "DistributedError"]

REDUCE_OPS = ("sum", "max", "min", "prod", "avg")


class DistributedError(UserError, RuntimeError):
    """A collective cannot run (bad argument, missing MPI/NCCL); the message says what is wrong."""


def _check_op(op):
    if op not in REDUCE_OPS:
        raise DistributedError(f"all_reduce: op must be one of {REDUCE_OPS}, got {op!r}")
    return op


def _average(array, world_size):
    if array.dtype.kind != "f":
        raise DistributedError(f"all_reduce(op='avg') needs a floating-point array, got {array.dtype}")
    array /= world_size


class _Done:
    """The handle of a collective that has already completed."""

    def test(self):
        return True

    def wait(self):
        return None


class SingleProcess:
    """The communicator of a world of one process: every collective leaves its input as it is."""

    rank, world_size, local_rank, name = 0, 1, 0, "single"

    def all_reduce(self, array, op="sum"):
        _check_op(op)
        return array

    def broadcast(self, array, root=0):
        return array

    def all_gather(self, array):
        return backend.get_array_module(array).stack([array])

    def all_reduce_async(self, array):
        return _Done()

    def barrier(self):
        return None

    def all_gather_object(self, obj):
        return [obj]

    def broadcast_object(self, obj, root=0):
        return obj

    def dup(self):
        return self


class _MPIRequest:
    """Handle of an MPI non-blocking collective; ``wait()`` blocks under the watchdog."""

    def __init__(self, request, watchdog, what):
        self.request, self.watchdog, self.what = request, watchdog, what

    def test(self):
        return self.request.Test()

    def wait(self):
        with self.watchdog.watch(self.what):
            self.request.Wait()


class MPICommunicator:
    """Collectives over an mpi4py communicator ``comm`` on NumPy buffers.

    Args:
        comm: an ``mpi4py.MPI.Comm`` (e.g. ``COMM_WORLD``).
        watchdog: a :class:`~framework.distributed.watchdog.Watchdog` for blocking calls.
        local_rank: this process's rank among the ranks on its machine.
    """

    name = "mpi"

    def __init__(self, comm, watchdog, local_rank=0):
        from mpi4py import MPI
        self.MPI, self.comm, self.watchdog = MPI, comm, watchdog
        self.rank, self.world_size, self.local_rank = comm.Get_rank(), comm.Get_size(), local_rank
        self._ops = {"sum": MPI.SUM, "max": MPI.MAX, "min": MPI.MIN, "prod": MPI.PROD, "avg": MPI.SUM}

    def _what(self, call, array):
        return f"{call} of {array.size} {array.dtype}"

    def all_reduce(self, array, op="sum"):
        _check_op(op)
        with _HostBuffer(array) as buf:
            with self.watchdog.watch(self._what("all_reduce", buf)):
                self.comm.Allreduce(self.MPI.IN_PLACE, buf, op=self._ops[op])
            if op == "avg":
                _average(buf, self.world_size)
        return array

    def broadcast(self, array, root=0):
        with _HostBuffer(array) as buf:
            with self.watchdog.watch(self._what("broadcast", buf)):
                self.comm.Bcast(buf, root=root)
        return array

    def all_gather(self, array):
        xp = backend.get_array_module(array)
        host = numpy.ascontiguousarray(backend.to_device(array, "cpu"))
        out = numpy.empty((self.world_size,) + host.shape, dtype=host.dtype)
        with self.watchdog.watch(self._what("all_gather", host)):
            self.comm.Allgather(host, out)
        return out if xp is numpy else xp.asarray(out)

    def all_reduce_async(self, array):
        if not isinstance(array, numpy.ndarray) or not array.flags.c_contiguous:
            self.all_reduce(array)  # staged through host memory: done before it returns
            return _Done()
        request = self.comm.Iallreduce(self.MPI.IN_PLACE, array, op=self.MPI.SUM)
        return _MPIRequest(request, self.watchdog, self._what("all_reduce", array))

    def barrier(self):
        with self.watchdog.watch("barrier"):
            self.comm.Barrier()

    def all_gather_object(self, obj):
        with self.watchdog.watch("all_gather_object"):
            return self.comm.allgather(obj)

    def broadcast_object(self, obj, root=0):
        with self.watchdog.watch("broadcast_object"):
            return self.comm.bcast(obj, root=root)

    def dup(self):
        return MPICommunicator(self.comm.Dup(), self.watchdog, self.local_rank)


class _HostBuffer:
    """Context giving a contiguous NumPy buffer for ``array``; results are copied back on exit."""

    def __init__(self, array):
        self.array = array

    def __enter__(self):
        array = self.array
        if isinstance(array, numpy.ndarray) and array.flags.c_contiguous:
            self.buf = array
        else:
            self.buf = numpy.ascontiguousarray(backend.to_device(array, "cpu"))
        return self.buf

    def __exit__(self, *exc):
        if self.buf is not self.array and exc[0] is None:
            xp = backend.get_array_module(self.array)
            self.array[...] = self.buf if xp is numpy else xp.asarray(self.buf)
        return False


class _NCCLEvent:
    """Handle of a collective queued on the NCCL stream.

    ``wait()`` blocks the host until it is done, under the watchdog (so a rank
    that never joins ends the job instead of hanging it).
    """

    def __init__(self, event, watchdog, what):
        self.event, self.watchdog, self.what = event, watchdog, what

    def test(self):
        return self.event.done

    def wait(self):
        with self.watchdog.watch(self.what):
            self.event.synchronize()


class NCCLCommunicator:
    """Collectives on CuPy arrays through NCCL; NumPy arrays and objects go through ``bootstrap``.

    The NCCL unique id is made on rank 0 and broadcast over ``bootstrap`` (an
    MPI communicator, or :class:`SingleProcess` for a world of one GPU). Call
    it after the process has selected its GPU (``cupy.cuda.Device(i).use()``).
    Each collective is queued on a private stream after an event recorded on
    the current stream; the host then waits for it under the watchdog.
    """

    name = "nccl"

    def __init__(self, bootstrap, watchdog):
        import cupy
        from cupy.cuda import nccl
        if not nccl.available:
            raise DistributedError("CuPy was built without NCCL; install a CuPy wheel with NCCL "
                                   "(pip install 'oar[gpu]') or train on CPU over MPI")
        self.cupy, self.nccl, self.bootstrap, self.watchdog = cupy, nccl, bootstrap, watchdog
        self.rank, self.world_size, self.local_rank = bootstrap.rank, bootstrap.world_size, bootstrap.local_rank
        unique_id = bootstrap.broadcast_object(nccl.get_unique_id() if self.rank == 0 else None, root=0)
        self.comm = nccl.NcclCommunicator(self.world_size, unique_id, self.rank)
        self.stream = cupy.cuda.Stream(non_blocking=True)
        self._dtypes = {numpy.dtype(k): v for k, v in (
            ("float16", nccl.NCCL_FLOAT16), ("float32", nccl.NCCL_FLOAT32), ("float64", nccl.NCCL_FLOAT64),
            ("int8", nccl.NCCL_INT8), ("uint8", nccl.NCCL_UINT8), ("int32", nccl.NCCL_INT32),
            ("int64", nccl.NCCL_INT64))}
        self._ops = {"sum": nccl.NCCL_SUM, "max": nccl.NCCL_MAX, "min": nccl.NCCL_MIN,
                     "prod": nccl.NCCL_PROD, "avg": nccl.NCCL_SUM}

    def _is_gpu(self, array):
        return not isinstance(array, numpy.ndarray)

    def _dtype(self, array, call):
        if not array.flags.c_contiguous:
            raise DistributedError(f"{call} over NCCL needs a contiguous array, got strides {array.strides}")
        if array.dtype not in self._dtypes:
            raise DistributedError(f"{call} over NCCL: dtype {array.dtype} is not supported "
                                   f"(supported: {', '.join(sorted(map(str, self._dtypes)))})")
        return self._dtypes[array.dtype]

    def _queue(self, call, launch):
        """Run ``launch(stream_ptr)`` on the NCCL stream after the current stream's work; returns the handle."""
        cuda = self.cupy.cuda
        ready = cuda.Event(disable_timing=True)
        ready.record(cuda.get_current_stream())
        self.stream.wait_event(ready)
        launch(self.stream.ptr)
        done = cuda.Event(disable_timing=True)
        done.record(self.stream)
        return _NCCLEvent(done, self.watchdog, f"{call} over NCCL")

    def all_reduce(self, array, op="sum"):
        _check_op(op)
        if not self._is_gpu(array):
            return self.bootstrap.all_reduce(array, op)
        dtype = self._dtype(array, "all_reduce")
        ptr = array.data.ptr
        self._queue("all_reduce", lambda s: self.comm.allReduce(ptr, ptr, array.size, dtype, self._ops[op],
                                                                s)).wait()
        if op == "avg":
            _average(array, self.world_size)
        return array

    def all_reduce_async(self, array):
        dtype = self._dtype(array, "all_reduce")
        ptr = array.data.ptr
        return self._queue("all_reduce", lambda s: self.comm.allReduce(ptr, ptr, array.size, dtype,
                                                                       self._ops["sum"], s))

    def broadcast(self, array, root=0):
        if not self._is_gpu(array):
            return self.bootstrap.broadcast(array, root)
        dtype = self._dtype(array, "broadcast")
        ptr = array.data.ptr
        self._queue("broadcast", lambda s: self.comm.broadcast(ptr, ptr, array.size, dtype, root, s)).wait()
        return array

    def all_gather(self, array):
        if not self._is_gpu(array):
            return self.bootstrap.all_gather(array)
        dtype = self._dtype(array, "all_gather")
        out = self.cupy.empty((self.world_size,) + array.shape, dtype=array.dtype)
        self._queue("all_gather", lambda s: self.comm.allGather(array.data.ptr, out.data.ptr, array.size,
                                                                dtype, s)).wait()
        return out

    def barrier(self):
        with self.watchdog.watch("barrier (GPU synchronize)"):
            self.cupy.cuda.get_current_stream().synchronize()
            self.stream.synchronize()
        self.bootstrap.barrier()

    def all_gather_object(self, obj):
        return self.bootstrap.all_gather_object(obj)

    def broadcast_object(self, obj, root=0):
        return self.bootstrap.broadcast_object(obj, root)

    def dup(self):
        return self  # one stream orders every NCCL collective of this process
