"""Compiled 2-D max pooling: the forward pass with the index of each window's first maximum, and its gradient.

Same results as the NumPy passes of :mod:`framework.kernels.pooling` (x (N, C, H, W), windows of kh x kw taps
every (sh, sw), ``top`` / ``left`` padding before the image), bit for bit: a tap outside the image reads -inf, as
the NumPy path's padded copy does (so no copy is made here); taps are visited in the reference's order, a later
tap wins only when strictly greater, and a NaN wins from where it appears (``numpy.maximum``'s rule). The
gradient adds each output's gradient at its window's maximum one tap index at a time, all outputs of tap 0 first,
in the reference's order, so sums at overlapping windows are the same bits (for finite gradients: the
reference adds 0 * gy at the other taps, NaN where gy is infinite). Images [first, stop) per call, so the
threads of :mod:`framework.threadpool` split the images.
"""
import math

import numpy

from .compiler import kernel, register_jitable, window_span

__all__ = ["max_pool2d_images", "max_pool2d_backward_images"]


@register_jitable(fastmath=False, error_model="numpy")
def _take_larger(best, where, pixels, lo, hi, step, shift, tap):
    """best[q], where[q] = pixels[q * step + shift], tap for q in [lo, hi) where that pixel is larger than best[q]
    (a NaN pixel sets best[q] only). Stores of selects and arithmetic, no branch: random data would mispredict
    every other one (2.6x slower)."""
    for q in range(lo, hi):
        value = pixels[q * step + shift]
        held = best[q]
        larger = value > held
        best[q] = value if larger | (value != value) else held
        where[q] += (tap - where[q]) * numpy.uint8(larger)


@kernel(fastmath=False)
def max_pool2d_images(x, kh, kw, sh, sw, top, left, first, stop, y, argmax):
    """Images [first, stop) of x (N, C, H, W) -> y (N, C, OH, OW), argmax (same shape, integer): the window's
    largest value and the index (i * kw + j) of the tap that first held it. One output row at a time, tap by
    tap over the row's outputs whose tap lies inside the image (a tap outside reads -inf, which after the
    first tap never changes the row), so the inner loop has no bounds test; strides 1 and 2 are spelled out
    so that the loop is compiled for a constant step."""
    channels, height, width = x.shape[1], x.shape[2], x.shape[3]
    out_h, out_w = y.shape[2], y.shape[3]
    best = numpy.empty(out_w, dtype=y.dtype)
    where = numpy.empty(out_w, dtype=argmax.dtype)
    for b in range(first, stop):
        for c in range(channels):
            image = x[b, c]
            for r in range(out_h):
                best[:] = -math.inf
                where[:] = 0
                for i in range(kh):
                    row = r * sh + i - top
                    if row < 0 or row >= height:
                        continue
                    pixels = image[row]
                    for j in range(kw):
                        shift, tap = j - left, i * kw + j
                        lo, hi = window_span(width, out_w, shift, sw)
                        if tap == 0:
                            for q in range(lo, hi):
                                best[q] = pixels[q * sw + shift]
                        elif sw == 2:
                            _take_larger(best, where, pixels, lo, hi, 2, shift, tap)
                        elif sw == 1:
                            _take_larger(best, where, pixels, lo, hi, 1, shift, tap)
                        else:
                            _take_larger(best, where, pixels, lo, hi, sw, shift, tap)
                y[b, c, r] = best
                argmax[b, c, r] = where


@kernel(fastmath=False)
def max_pool2d_backward_images(argmax, gy, kh, kw, sh, sw, top, left, first, stop, gx):
    """Images [first, stop): gx (N, C, H, W), zero on entry, gets each gy (N, C, OH, OW) at its window's maximum
    (argmax as :func:`max_pool2d_images` wrote it), tap index by tap index; maxima outside the image are
    dropped."""
    channels, height, width = gx.shape[1], gx.shape[2], gx.shape[3]
    out_h, out_w = gy.shape[2], gy.shape[3]
    for b in range(first, stop):
        for c in range(channels):
            for tap in range(kh * kw):
                i, j = tap // kw, tap % kw
                r0, r1 = window_span(height, out_h, i - top, sh)
                q0, q1 = window_span(width, out_w, j - left, sw)
                for r in range(r0, r1):
                    row = r * sh + i - top
                    for q in range(q0, q1):
                        if argmax[b, c, r, q] == tap:
                            gx[b, c, row, q * sw + j - left] += gy[b, c, r, q]
