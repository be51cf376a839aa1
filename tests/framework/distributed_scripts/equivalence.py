"""Train small models for a few steps on a global batch split over the ranks; save every rank's weights.

Run as ``python equivalence.py OUT_DIR`` (one process, the whole batch) or
``mpiexec -n N python equivalence.py OUT_DIR`` (each rank takes every N-th
sample of each global batch, as DistributedBatchSampler does). Writes
``OUT_DIR/{model}_rank{r}_of{N}.npz`` with the final state dict.
"""
import os
import sys

import numpy

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", ".."))

import framework  # noqa: E402
import framework.distributed as dist  # noqa: E402
import framework.nn.functional as F  # noqa: E402
from framework import nn  # noqa: E402

STEPS, GLOBAL_BATCH = 6, 16


class ConvBN(nn.Layer):
    """Conv -> BatchNorm (synchronised across ranks) -> ReLU -> mean pool -> Linear. (N, 3, 6, 6) -> (N, 4)."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2D(3, 8, 3, padding=1, bias_attr=False)  # BN cancels a bias
        self.bn = nn.BatchNorm2D(8)
        self.fc = nn.Linear(8, 4)

    def forward(self, x):
        h = F.relu(self.bn(self.conv(x)))
        return self.fc(h.mean(axis=(2, 3)))


def build(name):
    framework.seed(1 + dist.get_rank())  # different on each rank: DataParallel must broadcast rank 0's
    if name == "mlp":
        return nn.Sequential(nn.Linear(5, 16), nn.Tanh(), nn.Linear(16, 16), nn.Tanh(), nn.Linear(16, 4))
    return dist.convert_sync_batchnorm(ConvBN())


def data(name):
    rng = numpy.random.default_rng(7)
    shape = (STEPS * GLOBAL_BATCH, 5) if name == "mlp" else (STEPS * GLOBAL_BATCH, 3, 6, 6)
    return rng.normal(size=shape).astype("float32"), rng.integers(0, 4, STEPS * GLOBAL_BATCH)


def train(name, out_dir):
    rank, world = dist.get_rank(), dist.get_world_size()
    model = dist.DataParallel(build(name), bucket_size_mb=0.001)  # several small buckets
    optimizer = framework.optimizer.Adam(learning_rate=0.01, parameters=model.parameters())
    x, y = data(name)
    for step in range(STEPS):
        start = step * GLOBAL_BATCH
        shard = slice(start + rank, start + GLOBAL_BATCH, world)
        loss = F.cross_entropy(model(framework.to_tensor(x[shard])), framework.to_tensor(y[shard]))
        optimizer.clear_grad()
        loss.backward()
        optimizer.step()
    model.eval()
    framework.save(model.state_dict(), os.path.join(out_dir, f"{name}_rank{rank}_of{world}.npz"))


if __name__ == "__main__":
    dist.init_parallel_env()
    for model_name in ("mlp", "convbn"):
        train(model_name, sys.argv[1])
