"""Compiled row scatter-add (an embedding's weight gradient): out[index[i], first:stop] += rows[i, first:stop].

One pass over the rows; the columns [first, stop) per call, so the threads of :mod:`framework.threadpool` split
the columns and never write the same element. Sums accumulate in ``out``'s dtype, in index order.

Shapes: index (M,) int64 in [0, V) (the lookup has checked them), rows (M, E), out (V, E) of rows' dtype;
C-contiguous.
"""
from .compiler import kernel

__all__ = ["scatter_add_columns"]


@kernel()
def scatter_add_columns(index, rows, first, stop, out):
    """Columns [first, stop) of out[index[i]] += rows[i] for every i; see the module docstring."""
    for i in range(index.shape[0]):
        source = rows[i, first:stop]
        target = out[index[i], first:stop]
        for j in range(stop - first):
            target[j] += source[j]
