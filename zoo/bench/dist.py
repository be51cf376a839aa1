"""Data-parallel benchmarks on CPU (``oar bench dist``): all-reduce bandwidth, and training step time on 1 vs 2
processes.

``run_all`` starts the measurements as MPI jobs (``mpiexec -n P python -m
zoo.bench.dist WORKER``) and returns their results:

- ``allreduce``: for several message sizes, the time of one in-place float32
  all-reduce over 2 processes, its algorithm bandwidth (bytes / time) and bus
  bandwidth (algorithm bandwidth x 2(P-1)/P, the NCCL-tests convention: the
  traffic each rank's link carries);
- ``step``: one training step (forward, backward, gradient averaging, Adam) of
  an MLP on a fixed global batch, on 1 process (with ``cores`` BLAS threads,
  and with one) and on 2 processes with half the batch and ``cores / 2``
  threads each: with DataParallel's reduction in 4 MiB buckets that start
  during backward, and with a single bucket that can only start once
  backward is done.

Timings are the median of several repeats after a warm-up, the slowest rank
counting. Nothing here is asserted.
"""
import argparse
import json
import os
import subprocess
import sys

import numpy

from framework.timing import median_time

__all__ = ["run_all", "bench_allreduce", "bench_step"]

_SIZES = (4 * 2 ** 10, 64 * 2 ** 10, 2 ** 20, 16 * 2 ** 20, 64 * 2 ** 20)
_QUICK_SIZES = (4 * 2 ** 10, 2 ** 20)


def _timed(fn, repeat, warmup=2):
    """Median seconds of ``fn()`` over ``repeat`` runs, the slowest rank's, after ``warmup`` runs."""
    import framework.distributed as dist
    return max(dist.all_gather_object(median_time(fn, repeat, warmup, before_each=dist.barrier)))


def bench_allreduce(quick=False):
    """Per message size: seconds, algorithm and bus bandwidth (GB/s) of one float32 all-reduce."""
    import framework.distributed as dist
    world = dist.get_world_size()
    rows = []
    for nbytes in (_QUICK_SIZES if quick else _SIZES):
        buffer = numpy.ones(nbytes // 4, dtype=numpy.float32)
        repeat = 3 if quick else max(5, min(200, (64 * 2 ** 20) // nbytes))
        seconds = _timed(lambda: dist.all_reduce(buffer), repeat)
        algbw = nbytes / seconds / 1e9
        rows.append({"bytes": nbytes, "seconds": seconds, "algbw_GBps": algbw,
                     "busbw_GBps": algbw * 2 * (world - 1) / world})
    return {"processes": world, "sizes": rows}


def bench_step(global_batch, hidden, layers, bucket_size_mb, quick=False):
    """Seconds per training step of an MLP (``layers`` x ``hidden``) on ``global_batch`` samples."""
    import framework
    import framework.distributed as dist
    import framework.nn.functional as F
    from framework import nn
    world, rank = dist.get_world_size(), dist.get_rank()
    framework.seed(0)
    blocks = []
    for i in range(layers):
        blocks += [nn.Linear(hidden, hidden), nn.ReLU()]
    model = nn.Sequential(*blocks, nn.Linear(hidden, 10))
    parameters = sum(p.size for p in model.parameters())
    if world > 1:
        model = dist.DataParallel(model, bucket_size_mb=bucket_size_mb)
    optimizer = framework.optimizer.Adam(learning_rate=1e-4, parameters=model.parameters())
    rng = numpy.random.default_rng(rank)
    x = framework.to_tensor(rng.normal(size=(global_batch // world, hidden)).astype(numpy.float32))
    y = framework.to_tensor(rng.integers(0, 10, global_batch // world))

    def step():
        loss = F.cross_entropy(model(x), y)
        optimizer.clear_grad()
        loss.backward()
        optimizer.step()

    seconds = _timed(step, 3 if quick else 10)
    return {"processes": world, "global_batch": global_batch, "parameters": int(parameters),
            "bucket_size_mb": bucket_size_mb if world > 1 else None, "seconds": seconds,
            "samples_per_s": global_batch / seconds}


def _worker(argv):
    parser = argparse.ArgumentParser()
    parser.add_argument("what", choices=["allreduce", "step"])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--bucket_size_mb", type=float, default=25.0)
    args = parser.parse_args(argv)
    import framework.distributed as dist
    dist.init_parallel_env()
    if args.what == "allreduce":
        result = bench_allreduce(args.quick)
    else:
        shape = dict(global_batch=64, hidden=256, layers=2) if args.quick else dict(global_batch=512, hidden=1024,
                                                                                    layers=3)
        result = bench_step(bucket_size_mb=args.bucket_size_mb, quick=args.quick, **shape)
    if dist.get_rank() == 0:
        print(json.dumps(result))


def _run_job(nproc, worker_args, threads=None):
    """Run this module's worker as ``nproc`` MPI processes (``threads`` BLAS threads each,
    default ``cores // nproc``); its JSON result."""
    from framework.distributed.launcher import THREAD_VARIABLES, mpiexec_command
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    threads = str(threads or max(1, (os.cpu_count() or 1) // nproc))
    env = {**os.environ, **{name: threads for name in THREAD_VARIABLES},
           "PYTHONPATH": os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH")) if p)}
    command = mpiexec_command(nproc, [sys.executable, "-m", "zoo.bench.dist", *worker_args])
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=1800)
    if done.returncode != 0:
        raise RuntimeError(f"benchmark job {' '.join(worker_args)} on {nproc} processes failed:\n{done.stderr}")
    return {**json.loads(done.stdout.strip().splitlines()[-1]), "blas_threads_per_process": int(threads)}


def run_all(quick=False):
    """All-reduce bandwidth on 2 processes and step times on 1 and 2; a dict for ``oar bench dist``."""
    import importlib.util
    from framework.distributed.launcher import find_mpiexec
    if importlib.util.find_spec("mpi4py") is None or find_mpiexec() is None:
        return {"skipped": "needs mpi4py and mpiexec: pip install 'oar[dist]'"}
    flags = ["--quick"] if quick else []
    steps = {"1_process": _run_job(1, ["step", *flags]),
             "1_process_1_thread": _run_job(1, ["step", *flags], threads=1),
             "2_processes_4MiB_buckets": _run_job(2, ["step", "--bucket_size_mb", "4", *flags]),
             "2_processes_one_bucket": _run_job(2, ["step", "--bucket_size_mb", "1024", *flags])}
    for row in steps.values():
        row["speedup_vs_1_process"] = steps["1_process"]["seconds"] / row["seconds"]
    return {"allreduce": _run_job(2, ["allreduce", *flags]), "step": steps}


if __name__ == "__main__":
    _worker(sys.argv[1:])
