"""Which samples each rank evaluates: disjoint shards, no sample twice, none left out."""
import math

from ..io.sampler import Sampler

__all__ = ["ShardedBatchSampler"]


class ShardedBatchSampler(Sampler):
    """Rank ``rank``'s batches of an evaluation pass: indices ``rank, rank + world_size, …`` in order.

    Unlike :class:`~framework.io.DistributedBatchSampler` (for training, where
    every rank must run the same number of steps) nothing is padded, so the
    shards together hold every sample exactly once and merged metrics count
    each sample once; ranks may get one batch more or less than others.
    ``source``: a number of samples or a sized dataset.
    """

    def __init__(self, source, batch_size, rank=0, world_size=1):
        self.n = source if isinstance(source, int) else len(source)
        if not 0 <= rank < world_size:
            raise ValueError(f"ShardedBatchSampler: rank {rank} is outside world_size {world_size}")
        if batch_size < 1:
            raise ValueError(f"ShardedBatchSampler: batch_size must be a positive integer, got {batch_size!r}")
        self.batch_size, self.rank, self.world_size = int(batch_size), int(rank), int(world_size)

    def __iter__(self):
        indices = list(range(self.rank, self.n, self.world_size))
        return iter([indices[i:i + self.batch_size] for i in range(0, len(indices), self.batch_size)])

    def __len__(self):
        return math.ceil(len(range(self.rank, self.n, self.world_size)) / self.batch_size)
