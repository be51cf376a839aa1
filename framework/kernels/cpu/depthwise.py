"""Compiled depthwise 2-D convolution (one channel per group): forward, input gradient, weight gradient.

Same layout and results as :mod:`framework.kernels.depthwise` (x (N, C, H, W), w (C, KH, KW), padding
((top, bottom), (left, right))), without the padded copy of the input: each kernel offset (i, j) runs over
the output rows and columns whose window position lies inside the image, so the padding's zeros are never
read. Every output (and every input-gradient) element accumulates its kernel offsets in the reference's
order, (0, 0) first, so the forward pass and the input gradient equal the NumPy kernel's bit for bit
(compiled without fastmath: no fused multiply-adds). The weight gradient sums each channel's products
over images and positions in a float64 accumulator (reassociated, so vectorised; not the reference's
order). Channels [first, stop) per call, so the threads of :mod:`framework.threadpool` split the channels.
"""
import numpy

from .compiler import FASTMATH_SAFE, kernel, uint64, window_span

__all__ = ["depthwise_forward", "depthwise_input_grad", "depthwise_weight_grad"]


@kernel(fastmath=False)
def _window_passes(image, grid, w, sh, sw, dh, dw, top, left, first, stop, scatter):
    """Channels [first, stop) of every kernel offset's pass between ``image`` (N, C, H, W) and ``grid``
    (N, C, OH, OW), offsets in the reference's order: the forward pass into ``grid`` (y), or with
    ``scatter`` the input gradient into ``image`` (gx, from grid = gy); the target zero-filled on entry.
    Column indices are unsigned (no negative-index wrap to test), so the row loops vectorise."""
    n, h, width = image.shape[0], image.shape[2], image.shape[3]
    oh, ow = grid.shape[2], grid.shape[3]
    for c in range(first, stop):
        for b in range(n):
            for i in range(w.shape[1]):
                r0, r1 = window_span(h, oh, i * dh - top, sh)
                for j in range(w.shape[2]):
                    c0, c1 = window_span(width, ow, j * dw - left, sw)
                    weight, shift = w[c, i, j], j * dw - left
                    for r in range(r0, r1):
                        row = r * sh + i * dh - top
                        if scatter:
                            for col in range(c0, c1):
                                image[b, c, row, uint64(col * sw + shift)] += grid[b, c, r, uint64(col)] * weight
                        else:
                            for col in range(c0, c1):
                                grid[b, c, r, uint64(col)] += weight * image[b, c, row, uint64(col * sw + shift)]


@kernel(fastmath=FASTMATH_SAFE)
def _weight_grad(x, gy, kh, kw, sh, sw, dh, dw, top, left, gw, first, stop):
    """gw[first:stop] of :func:`depthwise_weight_grad`."""
    n, h, width = x.shape[0], x.shape[2], x.shape[3]
    oh, ow = gy.shape[2], gy.shape[3]
    totals = numpy.zeros((kh, kw), dtype=numpy.float64)
    for c in range(first, stop):
        totals[:] = 0.0
        for b in range(n):
            for i in range(kh):
                r0, r1 = window_span(h, oh, i * dh - top, sh)
                for j in range(kw):
                    c0, c1 = window_span(width, ow, j * dw - left, sw)
                    total, shift = 0.0, j * dw - left
                    for r in range(r0, r1):
                        row = r * sh + i * dh - top
                        for col in range(c0, c1):
                            total += gy[b, c, r, uint64(col)] * x[b, c, row, uint64(col * sw + shift)]
                    totals[i, j] += total
        for i in range(kh):
            for j in range(kw):
                gw[c, i, j] = totals[i, j]


def _geometry(stride, padding, dilation):
    (sh, sw), (dh, dw), ((top, _), (left, _)) = stride, dilation, padding
    return int(sh), int(sw), int(dh), int(dw), int(top), int(left)


def depthwise_forward(x, w, stride, padding, dilation, out, run):
    """y (N, C, OH, OW) of x (N, C, H, W) and w (C, KH, KW); ``run(fn, C)`` calls fn(first, stop) over the
    channels (the caller's thread split)."""
    x, w = numpy.ascontiguousarray(x), numpy.ascontiguousarray(w)
    y = numpy.zeros((x.shape[0], x.shape[1]) + tuple(out), dtype=x.dtype)
    geometry = _geometry(stride, padding, dilation)
    run(lambda first, stop: _window_passes(x, y, w, *geometry, first, stop, False), x.shape[1])
    return y


def depthwise_input_grad(gy, w, x_shape, stride, padding, dilation, run):
    """gx (N, C, H, W) for the output gradient gy (N, C, OH, OW)."""
    gy, w = numpy.ascontiguousarray(gy), numpy.ascontiguousarray(w)
    gx = numpy.zeros(x_shape, dtype=gy.dtype)
    geometry = _geometry(stride, padding, dilation)
    run(lambda first, stop: _window_passes(gx, gy, w, *geometry, first, stop, True), gx.shape[1])
    return gx


def depthwise_weight_grad(x, gy, kernel_size, stride, padding, dilation, run):
    """gw (C, KH, KW) for the output gradient gy (N, C, OH, OW)."""
    x, gy = numpy.ascontiguousarray(x), numpy.ascontiguousarray(gy)
    gw = numpy.empty((x.shape[1],) + tuple(kernel_size), dtype=x.dtype)
    geometry = _geometry(stride, padding, dilation)
    run(lambda first, stop: _weight_grad(x, gy, *kernel_size, *geometry, gw, first, stop), x.shape[1])
    return gw
