"""Compiled batch norm with batch statistics (a training step's): two passes over the activations each way.

- :func:`batch_statistics`: per channel the mean and the biased variance over images and positions, in
  float64 accumulators (the sum, then the squared deviations from the mean: two reads, no temporary).
- :func:`normalize_channels`: y = (x - mean) * scale + shift (one write); scale = weight / sqrt(var + eps) and
  shift = bias, so x itself is what backward keeps (no centred copy).
- :func:`gradient_sums`: per channel the sums of gy and of gy * (x - mean), in float64 (one read of both).
- :func:`input_grad_channels`: gx = gy * scale - (x - mean) * source_factor - shift (one write), the
  training input gradient with its two projections folded into per-channel factors.

The sums are reassociated (vectorised; ``FASTMATH_SAFE``, so no assumption about inf or NaN): results equal
NumPy's kernel (:mod:`framework.kernels.batch_norm`) to rounding, not bit for bit. Channels [first, stop) per
call, so the threads of :mod:`framework.threadpool` split the channels.

Shapes: x, y, gy, gx (N, C, L), C-contiguous, one float dtype; the per-channel arrays (C,) of that dtype.
"""
from .compiler import FASTMATH_SAFE, kernel

__all__ = ["batch_statistics", "normalize_channels", "gradient_sums", "input_grad_channels"]


@kernel(fastmath=FASTMATH_SAFE)
def batch_statistics(x, first, stop, mean, var):
    """Channels [first, stop) of mean[c] and var[c] (biased) over axes 0 and 2 of x (N, C, L)."""
    images, length = x.shape[0], x.shape[2]
    count = images * length
    for c in range(first, stop):
        total = 0.0
        for n in range(images):
            for i in range(length):
                total += x[n, c, i]
        centre = total / count
        squares = 0.0
        for n in range(images):
            for i in range(length):
                deviation = x[n, c, i] - centre
                squares += deviation * deviation
        mean[c] = centre
        var[c] = squares / count


@kernel(fastmath=FASTMATH_SAFE)
def normalize_channels(x, mean, scale, shift, first, stop, y):
    """Channels [first, stop) of y = (x - mean) * scale + shift."""
    for n in range(x.shape[0]):
        for c in range(first, stop):
            centre, factor, offset = mean[c], scale[c], shift[c]
            for i in range(x.shape[2]):
                y[n, c, i] = (x[n, c, i] - centre) * factor + offset


@kernel(fastmath=FASTMATH_SAFE)
def gradient_sums(gy, x, mean, first, stop, sum_g, sum_g_centred):
    """Channels [first, stop) of sum_g[c] = sum of gy and sum_g_centred[c] = sum of gy * (x - mean)."""
    for c in range(first, stop):
        centre = mean[c]
        total, product = 0.0, 0.0
        for n in range(gy.shape[0]):
            for i in range(gy.shape[2]):
                g = gy[n, c, i]
                total += g
                product += g * (x[n, c, i] - centre)
        sum_g[c] = total
        sum_g_centred[c] = product


@kernel(fastmath=FASTMATH_SAFE)
def input_grad_channels(gy, x, mean, scale, source_factor, shift, first, stop, gx):
    """Channels [first, stop) of gx = gy * scale - (x - mean) * source_factor - shift."""
    for n in range(gy.shape[0]):
        for c in range(first, stop):
            centre, factor, projection, offset = mean[c], scale[c], source_factor[c], shift[c]
            for i in range(gy.shape[2]):
                gx[n, c, i] = gy[n, c, i] * factor - (x[n, c, i] - centre) * projection - offset
