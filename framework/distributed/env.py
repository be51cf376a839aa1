"""The parallel environment: which rank this process is, how many there are, and how they talk.

A run is distributed when an MPI launcher started it (``mpirun -n 2 python
tools/train.py …``, or ``oar train --nproc 2 …``, which runs mpirun): then
:func:`init_parallel_env` initialises MPI through mpi4py and, on the GPU,
builds an NCCL communicator whose unique id rank 0 broadcasts over MPI. A
process that no launcher started is a world of one rank; nothing imports
mpi4py then, and every collective is a no-op.

In a distributed run an uncaught exception on any rank prints its traceback
(prefixed with the rank) and ends the whole job: the ranks that all fail
within a short grace exit together (so the launcher forwards every message),
a rank failing alone ends the job through ``MPI_Abort``, so the other ranks
never wait for it forever; the :class:`Watchdog` ends a job
whose collective blocks longer than the timeout (``OAR_DIST_TIMEOUT``
seconds, default 600).
"""
import os
import sys
import time
import traceback

import numpy

from .. import backend
from ..settings import env_float
from .comm import DistributedError, MPICommunicator, NCCLCommunicator, SingleProcess
from .watchdog import Watchdog

__all__ = ["ParallelEnv", "init_parallel_env", "get_rank", "get_world_size", "get_local_rank",
           "get_communicator", "is_initialized", "launched_by_mpi", "abort", "rank_seed", "timeout_setting",
           "DEFAULT_TIMEOUT"]

DEFAULT_TIMEOUT = 600.0
ABORT_GRACE = 2.0   # seconds abort() waits for the other ranks to end with it
# world size variables set by MPICH/Intel MPI (Hydra), Open MPI and MVAPICH launchers
_LAUNCHER_SIZE_VARIABLES = ("PMI_SIZE", "OMPI_COMM_WORLD_SIZE", "MV2_COMM_WORLD_SIZE")

_env = None


class ParallelEnv:
    """What :func:`init_parallel_env` found.

    Attributes:
        rank, world_size, local_rank: this process's place in the job (local: on its machine).
        device: 'cpu' or 'gpu'.
        communicator: the :mod:`~framework.distributed.comm` object the collectives use
            (NCCL on the GPU, MPI on the CPU, a no-op one for a single process).
        cpu_communicator: the MPI (or no-op) communicator, for objects and NumPy buffers.
    """

    def __init__(self, communicator, cpu_communicator, device):
        self.communicator, self.cpu_communicator, self.device = communicator, cpu_communicator, device
        self.rank, self.world_size = communicator.rank, communicator.world_size
        self.local_rank = communicator.local_rank

    @property
    def backend(self):
        """'nccl', 'mpi' or 'single'."""
        return self.communicator.name

    def __repr__(self):
        return (f"ParallelEnv(rank={self.rank}, world_size={self.world_size}, local_rank={self.local_rank}, "
                f"device={self.device!r}, backend={self.backend!r})")


def launched_by_mpi():
    """The world size an MPI launcher announced in the environment (0 when none started this process)."""
    for name in _LAUNCHER_SIZE_VARIABLES:
        value = os.environ.get(name, "")
        if value.isdigit():
            return int(value)
    return 0


def timeout_setting():
    """Seconds a collective may wait before the watchdog stops the job: ``OAR_DIST_TIMEOUT`` (default
    :data:`DEFAULT_TIMEOUT`, 0: no limit); a bad value is one SettingError."""
    return env_float("OAR_DIST_TIMEOUT", DEFAULT_TIMEOUT, low=0)


def _timeout(timeout):
    return timeout_setting() if timeout is None else float(timeout)


def init_parallel_env(device=None, timeout=None):
    """Set up this process's place in the job; returns the :class:`ParallelEnv`.

    Without an MPI launcher (or with one process) it is a world of one rank.
    Under a launcher it initialises MPI (mpi4py); with ``device='gpu'`` it
    also selects GPU ``local_rank % device_count`` and builds the NCCL
    communicator, bootstrapped over MPI. Call it before the first GPU
    allocation. Calling it again returns the same environment (adding the
    NCCL communicator when a GPU is asked for the first time, and taking the
    new ``timeout`` when one is given).

    Args:
        device: 'cpu' or 'gpu' (default: the framework's current device).
        timeout: seconds a blocking collective may wait before the job is
            ended with a message (default ``$OAR_DIST_TIMEOUT`` or 600; <= 0: never).
    """
    global _env
    device = backend.normalise_device(device)
    if _env is not None:
        if timeout is not None and _env.world_size > 1:
            _env.cpu_communicator.watchdog.set_timeout(timeout)
        if device == "gpu" and _env.communicator.name == "mpi":
            _env = ParallelEnv(_nccl_communicator(_env.cpu_communicator), _env.cpu_communicator, "gpu")
        return _env
    size = launched_by_mpi()
    if size <= 1 and "mpi4py.MPI" not in sys.modules:
        single = SingleProcess()
        _env = ParallelEnv(single, single, device)
        return _env
    try:
        from mpi4py import MPI
    except ImportError:
        raise DistributedError(f"this process was started by an MPI launcher for {size} processes, but mpi4py "
                               "is not installed: pip install 'oar[dist]'") from None
    world = MPI.COMM_WORLD
    if world.Get_size() == 1:
        single = SingleProcess()
        _env = ParallelEnv(single, single, device)
        return _env
    local_rank = world.Split_type(MPI.COMM_TYPE_SHARED).Get_rank()
    watchdog = Watchdog(_timeout(timeout), world.Get_rank(), world.Get_size())
    cpu = MPICommunicator(world.Dup(), watchdog, local_rank)
    _install_abort_on_error(world, cpu.rank, cpu.world_size)
    communicator = _nccl_communicator(cpu) if device == "gpu" else cpu
    _env = ParallelEnv(communicator, cpu, device)
    return _env


def _nccl_communicator(cpu):
    """Select this rank's GPU and build the NCCL communicator over the MPI one."""
    cupy = backend.array_module("gpu")
    cupy.cuda.Device(cpu.local_rank % cupy.cuda.runtime.getDeviceCount()).use()
    return NCCLCommunicator(cpu, cpu.watchdog)


def _install_abort_on_error(world, rank, world_size):
    """An uncaught exception prints its traceback with the rank, then ends every rank (:func:`_end_together`)."""
    previous = sys.excepthook

    def hook(kind, value, tb):
        if issubclass(kind, KeyboardInterrupt):
            previous(kind, value, tb)
        else:
            text = "".join(traceback.format_exception(kind, value, tb))
            sys.stderr.write("".join(f"[rank {rank}/{world_size}] {line}\n" for line in text.splitlines()))
        _end_together(world, 1)   # then the interpreter exits with status 1

    sys.excepthook = hook


def _current():
    return _env if _env is not None else init_parallel_env()


def get_rank():
    """This process's rank, 0 … world_size - 1 (0 for a single process)."""
    return _current().rank


def get_world_size():
    """The number of processes in the job (1 for a single process)."""
    return _current().world_size


def get_local_rank():
    """This process's rank among the processes on its machine."""
    return _current().local_rank


def get_communicator():
    """The communicator the collectives use (initialising the environment when needed)."""
    return _current().communicator


def is_initialized():
    """True once :func:`init_parallel_env` has run in this process."""
    return _env is not None


def abort(code=1, grace=ABORT_GRACE):
    """End every rank of the job with exit status ``code`` (a plain exit for a single process).

    When every rank calls it within ``grace`` seconds (a mistake each rank
    sees, such as a config error), the ranks end together with a plain exit,
    so the launcher forwards every rank's message before the job ends; a rank
    left alone past ``grace`` ends the whole job through ``MPI_Abort``.
    """
    if _env is not None and _env.world_size > 1:
        from mpi4py import MPI
        _end_together(MPI.COMM_WORLD, code, grace)
    else:
        sys.stdout.flush()
        sys.stderr.flush()
    raise SystemExit(code)


def _end_together(world, code, grace=ABORT_GRACE):
    """Flush this rank's output and wait up to ``grace`` seconds for every rank of ``world`` to get here (then
    return, so each ends with a plain exit and the launcher forwards every message); past ``grace``, end the
    whole job through ``MPI_Abort(code)``. ``world`` is COMM_WORLD, which carries none of the run's
    collectives (they use a Dup)."""
    sys.stdout.flush()
    sys.stderr.flush()
    everyone = world.Ibarrier()
    deadline = time.monotonic() + grace
    while not everyone.Test():
        if time.monotonic() > deadline:
            world.Abort(code)
        time.sleep(0.005)


def rank_seed(seed, rank):
    """The seed of rank ``rank``'s random stream in a run seeded with ``seed`` (rank 0 keeps ``seed``).

    Other ranks get a seed derived from ``(seed, rank)``, so dropout masks and
    other framework randomness differ between ranks but are reproducible.
    """
    if rank == 0:
        return int(seed)
    return int(numpy.random.SeedSequence([int(seed), int(rank)]).generate_state(1)[0])
