"""Temporal shift (TSM): move a fraction of the channels one step along time, zero-padded.

Conventions (PaddlePaddle's ``temporal_shift`` op). ``x`` is (N*T, C, H, W),
the frames of N clips of T segments each, clip-major. With
``c1 = int(C * shift_ratio)`` and ``c2 = int(2 * C * shift_ratio)``, output
frame t of a clip takes

    channels [0, c1)   from frame t - 1   (shifted forward in time; zero at t = 0)
    channels [c1, c2)  from frame t + 1   (shifted backward in time; zero at t = T - 1)
    channels [c2, C)   from frame t       (unchanged)

The gradient is the same shift with the two directions swapped, so one
routine (``direction`` +1 forward, -1 for the gradient) serves both passes.
The NumPy version is three slice copies into one output buffer; the CuPy
version is one ``ElementwiseKernel`` that reads each output element's source.
"""
import functools

import numpy

from .. import backend

__all__ = ["temporal_shift_forward", "temporal_shift_backward", "shift_folds"]


def shift_folds(channels, shift_ratio):
    """(c1, c2): the channel bounds of the forward-shifted and backward-shifted folds."""
    return int(channels * shift_ratio), int(channels * 2 * shift_ratio)


def _copy_shifted(out, src, step):
    """out[:, t] = src[:, t + step] along axis 1 (step -1 or +1), zero where t + step falls outside."""
    if step < 0:
        out[:, 1:] = src[:, :-1]
        out[:, 0] = 0
    else:
        out[:, :-1] = src[:, 1:]
        out[:, -1] = 0


def _shift_numpy(x, num_segments, c1, c2, direction):
    n_t, channels = x.shape[:2]
    clips = x.reshape(n_t // num_segments, num_segments, channels, -1)  # (N, T, C, H*W)
    out = numpy.empty_like(clips)
    _copy_shifted(out[:, :, :c1], clips[:, :, :c1], -direction)
    _copy_shifted(out[:, :, c1:c2], clips[:, :, c1:c2], direction)
    out[:, :, c2:] = clips[:, :, c2:]
    return out.reshape(x.shape)


@functools.lru_cache(maxsize=None)
def _cupy_kernel():
    cupy = backend.array_module("gpu")
    return cupy.ElementwiseKernel(
        "raw T x, int32 segments, int32 channels, int32 spatial, int32 c1, int32 c2, int32 direction",
        "T out",
        """
        const int c = (i / spatial) % channels;
        const int t = (i / (spatial * channels)) % segments;
        const int step = c < c1 ? -direction : (c < c2 ? direction : 0);
        const int source = t + step;
        out = (source < 0 || source >= segments) ? (T)0 : x[i + step * channels * spatial];
        """,
        "oar_temporal_shift")


def _shift(x, num_segments, shift_ratio, direction):
    n_t, channels = x.shape[:2]
    c1, c2 = shift_folds(channels, shift_ratio)
    xp = backend.get_array_module(x)
    if xp is numpy:
        return _shift_numpy(numpy.ascontiguousarray(x), num_segments, c1, c2, direction)
    x = xp.ascontiguousarray(x)
    spatial = int(numpy.prod(x.shape[2:], dtype=numpy.int64))
    out = xp.empty_like(x)
    _cupy_kernel()(x, num_segments, channels, spatial, c1, c2, direction, out)
    return out


def temporal_shift_forward(x, num_segments, shift_ratio):
    """The shifted frames. Shapes: x (N*T, C, *spatial) -> (N*T, C, *spatial), T = num_segments."""
    return _shift(x, num_segments, shift_ratio, 1)


def temporal_shift_backward(grad, num_segments, shift_ratio):
    """Gradient of :func:`temporal_shift_forward` w.r.t. x: the opposite shift. Same shapes."""
    return _shift(grad, num_segments, shift_ratio, -1)
