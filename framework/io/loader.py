"""DataLoader: batches of NumPy arrays from a dataset, in an order fixed by the seed and epoch.

The order of samples depends only on ``seed`` and the epoch, never on the
number or kind of workers: workers load whole batches and the loader yields
them in batch order. The loader counts epochs itself (each full pass moves to
the next epoch, reshuffling) and remembers its position within the epoch, so
``state_dict()`` / ``set_state_dict()`` resume a run exactly mid-epoch.
"""
import collections
import contextlib
import itertools
import math

from .collate import default_collate
from .dataset import is_iterable_dataset
from .sampler import BatchSampler, RandomSampler, SequentialSampler
from .worker import WorkerPool, load_batch, raise_failure, stream_failure

__all__ = ["DataLoader"]

_WORKER_TYPES = ("thread", "process")


class DataLoader:
    """Iterate over ``dataset`` in batches collated into NumPy arrays.

    Args:
        dataset: map-style (``dataset[i]``, ``len``) or iterable (a stream, read
            in the main process; workers then only collate).
        batch_size: samples per batch.
        shuffle: a new random order every epoch, drawn from ``(seed, epoch)``.
        drop_last: drop a final batch shorter than ``batch_size``.
        num_workers: 0 loads in the calling thread; more uses a pool of workers.
        worker_type: ``"thread"`` or ``"process"``.
        prefetch: batches in flight per worker.
        collate_fn: list of samples -> batch (default :func:`default_collate`).
        seed: seed of the shuffle and of :func:`framework.io.sample_rng`.
        batch_sampler: yields lists of indices; replaces batch_size, shuffle and
            drop_last (e.g. a BucketBatchSampler or DistributedBatchSampler).
        timeout: seconds to wait for one batch from the workers (0 = no limit).
        start_method: process start method; default ``fork`` where available, else ``spawn``.

    Iterating yields batches; a pass that ends early (``break``) leaves the
    loader at that position, and the next iteration continues from there.
    ``set_epoch(e)`` starts epoch ``e`` from its first batch.
    """

    def __init__(self, dataset, batch_size=1, shuffle=False, drop_last=False, num_workers=0, worker_type="thread",
                 prefetch=2, collate_fn=None, seed=0, batch_sampler=None, timeout=0, start_method=None):
        _check_options(batch_size, num_workers, worker_type, prefetch, timeout)
        self.dataset = dataset
        self.iterable = is_iterable_dataset(dataset)
        if batch_sampler is not None and (batch_size != 1 or shuffle or drop_last):
            raise ValueError("DataLoader: batch_sampler replaces batch_size, shuffle and drop_last; leave them unset")
        if self.iterable and (shuffle or batch_sampler is not None):
            raise ValueError("DataLoader: an iterable dataset is read in stream order; shuffle and "
                             "batch_sampler need a map-style dataset")
        if batch_sampler is None and not self.iterable:
            sampler = RandomSampler(dataset, seed) if shuffle else SequentialSampler(dataset)
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)
        self.batch_sampler = batch_sampler
        self.batch_size, self.drop_last = batch_size, drop_last
        self.num_workers, self.worker_type, self.prefetch = num_workers, worker_type, prefetch
        self.collate_fn = collate_fn or default_collate
        self.seed, self.timeout, self.start_method = int(seed), timeout, start_method
        self.epoch, self._position = 0, 0

    def __len__(self):
        """Batches per epoch (needs a sized dataset)."""
        if not self.iterable:
            return len(self.batch_sampler)
        if not hasattr(self.dataset, "__len__"):
            raise TypeError("len() of a DataLoader needs a dataset with __len__")
        n = len(self.dataset)
        return n // self.batch_size if self.drop_last else math.ceil(n / self.batch_size)

    def set_epoch(self, epoch):
        """Make the next iteration run epoch ``epoch`` from its first batch."""
        self.epoch, self._position = int(epoch), 0

    def state_dict(self):
        """``{"epoch": e, "batches": b}``: ``b`` batches of epoch ``e`` have been yielded.

        Taken after the last batch of an epoch but before the pass ends, it says
        ``b == len(loader)``: resuming there runs an empty pass that closes epoch
        ``e``, just as the uninterrupted loop would have.
        """
        return {"epoch": self.epoch, "batches": self._position}

    def set_state_dict(self, state):
        """Resume at a :meth:`state_dict`: the next batch is the one an uninterrupted run would yield."""
        self.epoch, self._position = int(state["epoch"]), int(state["batches"])

    def __iter__(self):
        epoch, start = self.epoch, self._position
        for part in (self.batch_sampler, self.dataset):
            if hasattr(part, "set_epoch"):
                part.set_epoch(epoch)
        tasks = self._tasks((self.seed, epoch), start)
        batches = self._load_in_main(tasks) if self.num_workers == 0 else self._load_with_workers(tasks)
        with contextlib.closing(batches):
            for batch in batches:
                self._position += 1
                yield batch
        self.epoch, self._position = epoch + 1, 0

    def _tasks(self, key, start):
        """Tasks ``(batch_no, key, positions, items)`` of one epoch from batch ``start`` on."""
        if self.iterable:
            return self._stream_tasks(key, start)
        batches = itertools.islice(enumerate(self.batch_sampler), start, None)
        return ((batch_no, key, [int(i) for i in indices], None) for batch_no, indices in batches)

    def _stream_tasks(self, key, start):
        stream, position = iter(self.dataset), 0
        for batch_no in itertools.count():
            items = self._read_stream(stream, position)
            if not items or (self.drop_last and len(items) < self.batch_size):
                return
            if batch_no >= start:
                yield batch_no, key, list(range(position, position + len(items))), items
            position += len(items)

    def _read_stream(self, stream, position):
        """Up to batch_size items from ``stream``, which is at sample ``position``."""
        items = []
        while len(items) < self.batch_size:
            try:
                items.append(next(stream))
            except StopIteration:
                break
            except Exception as exc:
                raise stream_failure(exc, position + len(items)) from exc
        return items

    def _load_in_main(self, tasks):
        for _, key, positions, items in tasks:
            yield raise_failure(load_batch(self.dataset, self.collate_fn, key, positions, items))

    def _load_with_workers(self, tasks):
        first = next(tasks, None)
        if first is None:
            return
        tasks = itertools.chain([first], tasks)
        pool = WorkerPool(None if self.iterable else self.dataset, self.collate_fn, self.num_workers,
                          self.worker_type, self.timeout, self.start_method)
        try:
            pending = collections.deque()
            while True:
                for task in itertools.islice(tasks, self.prefetch * self.num_workers - len(pending)):
                    pool.submit(task)
                    pending.append((task[0], task[2]))
                if not pending:
                    return
                yield pool.result(*pending.popleft())
        finally:
            pool.close()


def _check_options(batch_size, num_workers, worker_type, prefetch, timeout):
    if not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size < 1:
        raise ValueError(f"DataLoader: batch_size must be a positive integer, got {batch_size!r}")
    if not isinstance(num_workers, int) or num_workers < 0:
        raise ValueError(f"DataLoader: num_workers must be an integer >= 0, got {num_workers!r}")
    if worker_type not in _WORKER_TYPES:
        raise ValueError(f"DataLoader: worker_type must be one of {_WORKER_TYPES}, got {worker_type!r}")
    if not isinstance(prefetch, int) or prefetch < 1:
        raise ValueError(f"DataLoader: prefetch must be an integer >= 1, got {prefetch!r}")
    if timeout < 0:
        raise ValueError(f"DataLoader: timeout must be >= 0 seconds, got {timeout!r}")
