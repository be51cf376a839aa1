"""Every collective and DataParallel's gradient rules on real ranks: ``python collectives.py OUT_DIR``.

Each rank writes ``OUT_DIR/rank{r}.json`` with what it observed; the test
compares those values with what they must be.
"""
import json
import os
import sys

import numpy

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", ".."))

import framework  # noqa: E402
import framework.distributed as dist  # noqa: E402
from framework import nn  # noqa: E402
from framework.engine.metrics import Accuracy  # noqa: E402


def collectives(rank):
    seen = {}
    for op in dist.REDUCE_OPS:
        t = framework.to_tensor(numpy.arange(4.0) + rank + 1)
        seen[op] = dist.all_reduce(t, op).tolist()
    ints = numpy.array([rank + 1, 10], dtype=numpy.int64)
    seen["sum_int64"] = dist.all_reduce(ints).tolist()
    seen["broadcast"] = dist.broadcast(framework.to_tensor(numpy.full(3, float(rank))), src=1).tolist()
    seen["all_gather"] = [t.tolist() for t in dist.all_gather([], framework.to_tensor(numpy.array([rank, 10 * rank])))]
    try:
        dist.all_gather([], framework.to_tensor(numpy.zeros(rank + 1)))
    except dist.DistributedError as err:
        seen["all_gather_mismatch"] = str(err)
    seen["objects"] = dist.all_gather_object({"rank": rank})
    seen["broadcast_object"] = dist.broadcast_object(f"from {rank}", src=1)
    dist.barrier()
    return seen


def metrics(rank):
    accuracy = Accuracy()
    accuracy.update({"pred": numpy.array([1, 1, 0])}, {"label": numpy.array([1, rank, 0])})  # rank 0: 2 of 3
    dist.reduce_metrics([accuracy])
    return {"correct": accuracy.correct, "total": accuracy.total, "acc": accuracy.compute()["acc"]}


class TwoHeads(nn.Layer):
    """``head`` is used by rank 1 only; ``spare`` by no rank."""

    def __init__(self):
        super().__init__()
        self.body, self.head, self.spare = nn.Linear(3, 2), nn.Linear(2, 1), nn.Linear(2, 1)

    def forward(self, x):
        h = self.body(x)
        return self.head(h).sum() if dist.get_rank() == 1 else h.sum()


def gradients(rank):
    framework.seed(rank)
    model = dist.DataParallel(TwoHeads())
    x = framework.to_tensor(numpy.full((2, 3), rank + 1.0, dtype="float32"))
    model(x).backward()
    seen = {name: None if p.grad is None else p.grad.tolist() for name, p in model.named_parameters()}
    seen["weights"] = {name: p.tolist() for name, p in model.named_parameters()}
    model.clear_gradients()
    with model.no_sync():
        model(x).backward()
    seen["no_sync_body_bias"] = model.body.bias.grad.tolist()
    model(x).backward()
    seen["accumulated_body_bias"] = model.body.bias.grad.tolist()
    return seen


if __name__ == "__main__":
    env = dist.init_parallel_env()
    result = {"world_size": env.world_size, "backend": env.backend, "collectives": collectives(env.rank),
              "metrics": metrics(env.rank), "gradients": gradients(env.rank)}
    with open(os.path.join(sys.argv[1], f"rank{env.rank}.json"), "w") as f:
        json.dump(result, f)
