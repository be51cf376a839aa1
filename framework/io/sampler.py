"""Samplers: which sample indices, in which order and in which batches, for each epoch.

Every sampler is a pure function of its arguments, its ``seed`` and its
``epoch``: iterating twice at the same epoch gives the same order, and
``set_epoch(e)`` (called by the DataLoader every epoch) reshuffles. Random
orders come from ``numpy.random.default_rng((seed, epoch))``, so they never
depend on the framework's global generator. ``state_dict()`` /
``set_state_dict()`` capture the epoch; the DataLoader keeps the position
within the epoch.

Index samplers (``SequentialSampler``, ``RandomSampler``) yield ints; batch
samplers (``BatchSampler``, ``BucketBatchSampler``, ``DistributedBatchSampler``)
yield lists of ints.
"""
import math

import numpy

__all__ = ["Sampler", "SequentialSampler", "RandomSampler", "BatchSampler", "BucketBatchSampler",
           "DistributedBatchSampler"]


def _size(source):
    """``source`` is a number of samples or a sized dataset; returns the number."""
    n = source if isinstance(source, (int, numpy.integer)) else len(source)
    if n < 0:
        raise ValueError(f"a sampler needs a non-negative number of samples, got {n}")
    return int(n)


def _check_batch_size(batch_size, owner):
    if not isinstance(batch_size, (int, numpy.integer)) or isinstance(batch_size, bool) or batch_size < 1:
        raise ValueError(f"{owner}: batch_size must be a positive integer, got {batch_size!r}")
    return int(batch_size)


def _batches(order, batch_size, drop_last):
    """Cut the index array ``order`` (n,) into lists of ``batch_size`` ints."""
    stop = len(order) - len(order) % batch_size if drop_last else len(order)
    return [order[i:i + batch_size].tolist() for i in range(0, stop, batch_size)]


class Sampler:
    """Base of all samplers: the ``epoch`` they are at, and its state."""

    epoch = 0

    def set_epoch(self, epoch):
        """Use the order of ``epoch`` for the next iterations."""
        self.epoch = int(epoch)

    def state_dict(self):
        """``{"epoch": epoch}``."""
        return {"epoch": self.epoch}

    def set_state_dict(self, state):
        """Restore a state from :meth:`state_dict`."""
        self.set_epoch(state["epoch"])

    def _rng(self):
        return numpy.random.default_rng((self.seed, self.epoch))


class SequentialSampler(Sampler):
    """Indices 0, 1, …, n-1. ``source``: a number of samples or a sized dataset."""

    def __init__(self, source):
        self.n = _size(source)

    def __iter__(self):
        return iter(range(self.n))

    def __len__(self):
        return self.n


class RandomSampler(Sampler):
    """A permutation of 0…n-1 drawn from ``(seed, epoch)``. ``source``: a number or a sized dataset."""

    def __init__(self, source, seed=0):
        self.n = _size(source)
        self.seed = int(seed)

    def __iter__(self):
        return iter(self._rng().permutation(self.n).tolist())

    def __len__(self):
        return self.n


class BatchSampler(Sampler):
    """Groups the indices of ``sampler`` into lists of ``batch_size``; ``drop_last`` drops a short final batch."""

    def __init__(self, sampler, batch_size, drop_last=False):
        self.sampler = sampler
        self.batch_size = _check_batch_size(batch_size, "BatchSampler")
        self.drop_last = bool(drop_last)

    def set_epoch(self, epoch):
        """Set the epoch here and on the wrapped sampler."""
        super().set_epoch(epoch)
        if hasattr(self.sampler, "set_epoch"):
            self.sampler.set_epoch(epoch)

    def __iter__(self):
        return iter(_batches(numpy.fromiter(self.sampler, dtype=numpy.int64), self.batch_size, self.drop_last))

    def __len__(self):
        n = len(self.sampler)
        return n // self.batch_size if self.drop_last else math.ceil(n / self.batch_size)


class BucketBatchSampler(Sampler):
    """Batches of samples of similar length, to keep padding small.

    Samples are sorted by ``lengths`` (ties in random order), cut into buckets
    of ``bucket_size`` consecutive samples (a multiple of ``batch_size``;
    default ``32 * batch_size``, or set ``num_buckets`` instead), shuffled within
    each bucket and cut into batches; the batches of all buckets are then
    shuffled. Every index appears exactly once per epoch (except a final short
    batch when ``drop_last``). With ``shuffle=False`` batches follow increasing
    length. Deterministic for ``(seed, epoch)``.

    Args:
        lengths: (n,) length of each sample.
        batch_size: samples per batch.
        bucket_size: samples per bucket (rounded up to a multiple of batch_size).
        num_buckets: alternatively, the number of buckets.
        shuffle: randomise within buckets and the batch order.
        seed: seed of the random order.
        drop_last: drop the one short batch, if any.
    """

    def __init__(self, lengths, batch_size, bucket_size=None, num_buckets=None, shuffle=True, seed=0,
                 drop_last=False):
        self.lengths = numpy.asarray(lengths, dtype=numpy.int64).reshape(-1)
        self.batch_size = _check_batch_size(batch_size, "BucketBatchSampler")
        if bucket_size is not None and num_buckets is not None:
            raise ValueError("BucketBatchSampler: give bucket_size or num_buckets, not both")
        if num_buckets is not None:
            bucket_size = math.ceil(len(self.lengths) / max(int(num_buckets), 1))
        bucket_size = bucket_size or 32 * self.batch_size
        self.bucket_size = math.ceil(max(int(bucket_size), 1) / self.batch_size) * self.batch_size
        self.shuffle = bool(shuffle)
        self.seed = int(seed)
        self.drop_last = bool(drop_last)

    def __iter__(self):
        if not self.shuffle:
            return iter(_batches(numpy.argsort(self.lengths, kind="stable"), self.batch_size, self.drop_last))
        rng = self._rng()
        shuffled = rng.permutation(len(self.lengths))
        order = shuffled[numpy.argsort(self.lengths[shuffled], kind="stable")]
        for start in range(0, len(order), self.bucket_size):
            rng.shuffle(order[start:start + self.bucket_size])
        batches = _batches(order, self.batch_size, self.drop_last)
        return iter([batches[i] for i in rng.permutation(len(batches))])

    def __len__(self):
        n = len(self.lengths)
        return n // self.batch_size if self.drop_last else math.ceil(n / self.batch_size)


class DistributedBatchSampler(Sampler):
    """The batches of one rank in data-parallel training: each rank gets its own shard.

    The (optionally shuffled, by ``(seed, epoch)``) indices are padded by
    wrapping around to a multiple of ``world_size`` (or, with ``drop_last``, cut
    down to one), and rank ``r`` takes every ``world_size``-th index starting at
    ``r``, as PyTorch and Paddle do; so all ranks run the same number of batches
    and, together, cover every sample. ``drop_last`` also drops a short final
    batch. ``source``: a number of samples or a sized dataset.
    """

    def __init__(self, source, batch_size, rank=0, world_size=1, shuffle=False, seed=0, drop_last=False):
        self.n = _size(source)
        self.batch_size = _check_batch_size(batch_size, "DistributedBatchSampler")
        if not 0 <= int(rank) < int(world_size):
            raise ValueError(f"DistributedBatchSampler: rank {rank} is outside world_size {world_size}")
        self.rank, self.world_size = int(rank), int(world_size)
        self.shuffle = bool(shuffle)
        self.seed = int(seed)
        self.drop_last = bool(drop_last)

    @property
    def num_samples(self):
        """Samples per rank per epoch."""
        if self.drop_last:
            return self.n // self.world_size
        return math.ceil(self.n / self.world_size)

    def __iter__(self):
        order = self._rng().permutation(self.n) if self.shuffle else numpy.arange(self.n)
        total = self.num_samples * self.world_size
        if total > self.n and self.n:
            order = numpy.resize(order, total)
        shard = order[:total][self.rank::self.world_size]
        return iter(_batches(shard, self.batch_size, self.drop_last))

    def __len__(self):
        if self.drop_last:
            return self.num_samples // self.batch_size
        return math.ceil(self.num_samples / self.batch_size)
