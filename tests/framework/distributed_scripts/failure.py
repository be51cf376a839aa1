"""Data-parallel training in which rank 1 fails at step 3: ``python failure.py raise|hang|exit|abort TIMEOUT``.

``raise``: rank 1 raises an exception; ``exit``: rank 1 exits with status 3
without a word; ``abort``: rank 1 alone calls ``abort(4)`` (after its grace
the whole job ends through MPI_Abort); ``hang``: rank 1 stops taking part
(sleeps), so rank 0 waits in a collective until the watchdog's ``TIMEOUT``
seconds end the job. In every case the job must end, with a message naming
the failing rank or the waiting one, instead of hanging.
"""
import os
import sys
import time

import numpy

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", ".."))

import framework  # noqa: E402
import framework.distributed as dist  # noqa: E402
from framework import nn  # noqa: E402


def main(mode, timeout):
    dist.init_parallel_env(timeout=120)  # ranks may start seconds apart on a busy machine
    model = dist.DataParallel(nn.Linear(4, 2))
    dist.init_parallel_env(timeout=timeout)
    optimizer = framework.optimizer.SGD(learning_rate=0.1, parameters=model.parameters())
    rng = numpy.random.default_rng(dist.get_rank())
    for step in range(1, 6):
        if step == 3 and dist.get_rank() == 1:
            if mode == "raise":
                raise RuntimeError("rank 1 fails on purpose at step 3")
            if mode == "exit":
                os._exit(3)
            if mode == "abort":
                print("rank 1 aborts alone", file=sys.stderr, flush=True)
                dist.abort(4)
            time.sleep(60)
        loss = (model(framework.to_tensor(rng.normal(size=(8, 4)).astype("float32"))) ** 2).mean()
        optimizer.clear_grad()
        loss.backward()
        optimizer.step()
    print(f"rank {dist.get_rank()} finished", flush=True)


if __name__ == "__main__":
    main(sys.argv[1], float(sys.argv[2]))
