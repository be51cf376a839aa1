"""Data-parallel training over MPI (mpi4py) and, between GPUs, NCCL (CuPy).

Start N copies of a script with an MPI launcher (``mpirun -n 2 python
tools/train.py -c CONFIG``, or ``oar train --nproc 2 -c CONFIG``); each calls
:func:`init_parallel_env`, wraps its model in :class:`DataParallel` and reads
its own shard of the data. Without a launcher everything here works as a
single process: rank 0 of a world of one, every collective a no-op.

- environment: ``init_parallel_env``, ``get_rank``, ``get_world_size``, ``get_local_rank``;
- collectives on Tensors: ``all_reduce``, ``broadcast``, ``all_gather``, ``barrier``
  (and ``all_gather_object``, ``broadcast_object`` for Python objects);
- ``DataParallel`` (bucketed gradient averaging overlapping backward),
  ``SyncBatchNorm`` / ``convert_sync_batchnorm``;
- ``reduce_metrics`` for sharded evaluation, ``ShardedBatchSampler``;
- ``launch`` to run a command under ``mpiexec``.
"""
from .comm import DistributedError, REDUCE_OPS
from .env import (ParallelEnv, init_parallel_env, get_rank, get_world_size, get_local_rank, get_communicator,
                  is_initialized, launched_by_mpi, abort, rank_seed, timeout_setting)
from .collective import ReduceOp, all_reduce, broadcast, all_gather, barrier, all_gather_object, broadcast_object
from .parallel import DataParallel
from .sync_batch_norm import SyncBatchNorm, convert_sync_batchnorm
from .metrics import reduce_metrics, merge_states, check_reducible
from .sampler import ShardedBatchSampler
from .launcher import launch, find_mpiexec, mpiexec_command

__all__ = ["DistributedError", "REDUCE_OPS", "ParallelEnv", "init_parallel_env", "get_rank", "get_world_size",
           "get_local_rank", "get_communicator", "is_initialized", "launched_by_mpi", "abort", "rank_seed",
           "timeout_setting", "ReduceOp", "all_reduce", "broadcast", "all_gather", "barrier", "all_gather_object",
           "broadcast_object",
           "DataParallel", "SyncBatchNorm", "convert_sync_batchnorm", "reduce_metrics", "merge_states",
           "check_reducible", "ShardedBatchSampler", "launch", "find_mpiexec", "mpiexec_command"]
