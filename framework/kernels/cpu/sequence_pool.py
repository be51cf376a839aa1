"""Compiled sequence pooling: the max, its position and the mean over each sequence's valid positions, and the
input's gradient from the pools' gradients, for the sequences [first, stop) per call (the threads of
:mod:`framework.threadpool` split the sequences and never write the same element).

The mean sums in the input's dtype, in position order; a sequence of length 0 pools to 0 and gets a zero
gradient; the max's gradient goes to its first position among equals.

Shapes: x (N, L, D), lengths (N,) int64 in [0, L], top / mean (N, D) of x's dtype, where (N, D) int64; the
gradient gx (N, L, D); C-contiguous.
"""
from .compiler import kernel

__all__ = ["pool_rows", "pool_rows_backward"]


@kernel(fastmath=False)
def pool_rows(x, lengths, first, stop, top, where, mean):
    """top, where and mean of the sequences [first, stop) of x; see the module docstring."""
    width = x.shape[2]
    for n in range(first, stop):
        length = lengths[n]
        for j in range(width):
            top[n, j] = 0
            where[n, j] = 0
            mean[n, j] = 0
        if length == 0:
            continue
        for j in range(width):
            top[n, j] = x[n, 0, j]
            mean[n, j] = x[n, 0, j]
        for t in range(1, length):
            row = x[n, t]
            for j in range(width):
                value = row[j]
                mean[n, j] += value
                if value > top[n, j]:
                    top[n, j] = value
                    where[n, j] = t
        for j in range(width):
            mean[n, j] /= length


@kernel(fastmath=False)
def pool_rows_backward(grad_top, where, grad_mean, lengths, first, stop, gx):
    """gx of the sequences [first, stop) from the gradients of top and mean; see the module docstring."""
    steps, width = gx.shape[1], gx.shape[2]
    for n in range(first, stop):
        length = lengths[n]
        for t in range(steps):
            row = gx[n, t]
            if t < length:
                for j in range(width):
                    row[j] = grad_mean[n, j] / length
            else:
                for j in range(width):
                    row[j] = 0
        if length == 0:
            continue
        for j in range(width):
            gx[n, where[n, j], j] += grad_top[n, j]
