"""Datasets: map-style (``dataset[i]``, ``len(dataset)``) and iterable (a stream of samples).

A sample is preferably a dict (``{"tokens": ..., "label": ...}``); tuples work
too. Datasets may define ``set_epoch(epoch)``: the DataLoader calls it at the
start of every epoch.
"""
import abc

import numpy

__all__ = ["Dataset", "IterableDataset", "TensorDataset", "ListDataset", "is_iterable_dataset"]


class Dataset(abc.ABC):
    """A map-style dataset: ``dataset[i]`` is sample ``i`` for ``0 <= i < len(dataset)``."""

    @abc.abstractmethod
    def __getitem__(self, index):
        """Sample ``index``."""

    @abc.abstractmethod
    def __len__(self):
        """The number of samples."""


class IterableDataset(abc.ABC):
    """A stream of samples; every ``iter(dataset)`` starts the stream again (one epoch).

    Define ``__len__`` too when the number of samples is known, so that
    ``len(loader)`` works.
    """

    @abc.abstractmethod
    def __iter__(self):
        """Yield the samples of one epoch in order."""


def is_iterable_dataset(dataset):
    """True for an IterableDataset, or any object that can be iterated but not indexed."""
    return isinstance(dataset, IterableDataset) or (
        not hasattr(dataset, "__getitem__") and hasattr(dataset, "__iter__"))


class TensorDataset(Dataset):
    """Samples are rows of arrays that share their first dimension N.

    ``TensorDataset(x, y)`` gives tuples ``(x[i], y[i])``; ``TensorDataset(x=x,
    y=y)`` gives dicts ``{"x": x[i], "y": y[i]}``. Arrays: (N, ...) each.
    """

    def __init__(self, *arrays, **named_arrays):
        if bool(arrays) == bool(named_arrays):
            raise TypeError("TensorDataset takes arrays either all positional or all by name, at least one")
        self._names = list(named_arrays) or None
        self._arrays = [numpy.asarray(a) for a in (arrays or named_arrays.values())]
        lengths = {a.shape[0] if a.ndim else None for a in self._arrays}
        if len(lengths) != 1 or None in lengths:
            shapes = ", ".join(str(a.shape) for a in self._arrays)
            raise ValueError(f"TensorDataset: arrays must share their first dimension, got shapes {shapes}")

    def __getitem__(self, index):
        rows = [a[index] for a in self._arrays]
        return dict(zip(self._names, rows)) if self._names else tuple(rows)

    def __len__(self):
        return self._arrays[0].shape[0]


class ListDataset(Dataset):
    """A list of samples, each passed through ``transform`` (if given) when read."""

    def __init__(self, samples, transform=None):
        self.samples = list(samples)
        self.transform = transform

    def __getitem__(self, index):
        sample = self.samples[index]
        return self.transform(sample) if self.transform is not None else sample

    def __len__(self):
        return len(self.samples)
