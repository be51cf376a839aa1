"""Collate functions: a list of N samples -> one batch of NumPy arrays.

:func:`default_collate` stacks samples of equal shapes. :class:`SequenceCollator`
also pads variable-length sequences: for each padded key ``k`` the batch holds
``k`` (N, L_max, ...) and ``k + "_lengths"`` (N,) int64, the true lengths.
"""
import numbers

import numpy
from ..errors import UserError

__all__ = ["default_collate", "SequenceCollator", "pad_sequences", "CollateError"]


class CollateError(UserError, ValueError):
    """Samples that cannot be put into one batch; the message names the key and shapes."""


def default_collate(samples):
    """Batch a list of N samples.

    Per field: arrays, NumPy scalars and numeric lists are stacked to (N, ...)
    arrays (NumPy values keep their dtype; Python ints become int64, floats
    float32, bools bool); strings, bytes, None and lists of anything else (words,
    dicts) stay a Python list of N; dicts are batched key by key and tuples field
    by field (same structure out).
    """
    if not samples:
        raise CollateError("default_collate: cannot batch an empty list of samples")
    return _collate(list(samples), "sample")


def _collate(values, path):
    first = values[0]
    if isinstance(first, dict):
        return {key: _collate(_field(values, key, path), f"{path}[{key!r}]") for key in first}
    if isinstance(first, tuple):
        fields = [_collate(_field(values, i, path), f"{path}[{i}]") for i in range(len(first))]
        return type(first)(*fields) if hasattr(first, "_fields") else tuple(fields)
    if isinstance(first, (str, bytes)) or first is None or any(
            isinstance(v, list) and not _is_numeric(v) for v in values):
        return list(values)
    return _stack(values, path)


def _is_numeric(nested):
    """True when the first leaf of a nested list is a number or an array (an empty list counts)."""
    while isinstance(nested, list) and nested:
        nested = nested[0]
    return isinstance(nested, (numbers.Number, numpy.ndarray, list))


def _field(values, key, path):
    try:
        return [v[key] for v in values]
    except (KeyError, IndexError, TypeError):
        raise CollateError(f"default_collate: {path}: samples do not all have {key!r}") from None


def _stack(values, path):
    if all(isinstance(v, bool) for v in values):
        return numpy.asarray(values, dtype=numpy.bool_)
    if all(isinstance(v, numbers.Integral) and not isinstance(v, numpy.generic) for v in values):
        return numpy.asarray(values, dtype=numpy.int64)
    if all(isinstance(v, numbers.Real) and not isinstance(v, numpy.generic) for v in values):
        return numpy.asarray(values, dtype=numpy.float32)
    arrays = [_as_array(v, path) for v in values]
    shapes = {a.shape for a in arrays}
    if len(shapes) > 1:
        listed = ", ".join(str(s) for s in sorted(shapes, key=len)[:4])
        raise CollateError(f"default_collate: {path}: cannot stack samples of different shapes ({listed}); "
                           f"pad them with SequenceCollator")
    return numpy.stack(arrays)


def _as_array(value, path):
    try:
        array = numpy.asarray(value)
    except ValueError:
        raise CollateError(f"default_collate: {path}: ragged nested lists cannot become one array; "
                           f"pad them with SequenceCollator") from None
    if array.dtype.kind not in "biufc":
        raise CollateError(f"default_collate: {path}: cannot batch values of type {type(value).__name__}")
    if isinstance(value, list) and array.dtype == numpy.float64:
        array = array.astype(numpy.float32)
    return array


def pad_sequences(sequences, pad_value=0, dtype=None):
    """Pad N sequences along their first axis to the longest.

    ``sequences``: N arrays or lists of shapes (L_i, ...) with equal trailing
    dimensions. Returns ``(padded, lengths)``: padded (N, L_max, ...) (dtype of
    the data as in :func:`default_collate`, or ``dtype``), lengths (N,) int64.
    """
    if not sequences:
        raise CollateError("pad_sequences: needs at least one sequence")
    arrays = [numpy.asarray(s, dtype=dtype) if dtype else _as_array(s, "pad_sequences") for s in sequences]
    if any(a.ndim == 0 for a in arrays):
        raise CollateError("pad_sequences: every sequence needs at least one dimension, got a scalar")
    trailing = {a.shape[1:] for a in arrays}
    if len(trailing) > 1:
        raise CollateError(f"pad_sequences: sequences must agree beyond their first axis, "
                           f"got trailing shapes {sorted(trailing)}")
    lengths = numpy.asarray([a.shape[0] for a in arrays], dtype=numpy.int64)
    out_dtype = dtype or numpy.result_type(*([a for a in arrays if a.size] or arrays))
    padded = numpy.full((len(arrays), int(lengths.max(initial=0))) + trailing.pop(), pad_value, dtype=out_dtype)
    for i, a in enumerate(arrays):
        padded[i, :a.shape[0]] = a
    return padded, lengths


class SequenceCollator:
    """Collate dict samples, padding the variable-length ``pad_keys`` to the longest in the batch.

    For each ``k`` in ``pad_keys`` the batch holds ``k``: (N, L_max, ...) padded
    with ``pad_value`` (one value, or a dict key -> value), and ``k +
    lengths_suffix`` (default ``"k_lengths"``): (N,) int64 true lengths. The other
    keys go through :func:`default_collate`. Picklable, so it works with
    process workers.
    """

    def __init__(self, pad_keys, pad_value=0, lengths_suffix="_lengths"):
        self.pad_keys = [pad_keys] if isinstance(pad_keys, str) else list(pad_keys)
        self.pad_value = pad_value
        self.lengths_suffix = lengths_suffix

    def __call__(self, samples):
        """Batch N dict samples into a dict of arrays (see the class docstring for the keys)."""
        if not samples or not isinstance(samples[0], dict):
            raise CollateError("SequenceCollator: needs a non-empty list of dict samples")
        batch = default_collate([{k: v for k, v in s.items() if k not in self.pad_keys} for s in samples])
        for key in self.pad_keys:
            values = _field(samples, key, "sample")
            try:
                batch[key], batch[key + self.lengths_suffix] = pad_sequences(values, self._pad_value(key))
            except CollateError as exc:
                raise CollateError(f"SequenceCollator: key {key!r}: {exc}") from None
        return batch

    def _pad_value(self, key):
        return self.pad_value.get(key, 0) if isinstance(self.pad_value, dict) else self.pad_value
