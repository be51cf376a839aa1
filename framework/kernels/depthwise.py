"""Depthwise 2-D convolution on NumPy (groups == in channels == out channels, MobileNet's 3x3 layers).

The generic path unfolds the input into columns and runs one GEMM per group; with one input and one output
channel per group every GEMM is a (1 x k) by (k x N*positions) product, which NumPy's batched ``matmul``
runs far below the machine's speed. Here each kernel offset is one multiply-add pass over the output,
y += w[:, i, j] * x_padded[shifted window], chunked over channels on the threads
(:mod:`framework.threadpool`), and the gradients are the same passes the other way: the input gradient adds
gy * w[:, i, j] back into the shifted window, the weight gradient sums gy * window per channel. Each
channel's sums run in a fixed order, so results do not depend on the thread count.

Unless ``OAR_KERNELS=numpy`` (or Numba is missing) the compiled kernels of
:mod:`framework.kernels.cpu.depthwise` run instead: the same passes without the padded copy, forward and input
gradient equal to these bit for bit.

Shapes: x (N, C, H, W), w (C, KH, KW) -> y (N, C, OH, OW).
"""
import numpy

from .. import threadpool
from . import cpu
from .im2col import pad

__all__ = ["depthwise_forward", "depthwise_backward"]


def _window(x_padded, i, j, stride, dilation, out):
    """The view of ``x_padded`` (N, C, Hp, Wp) that kernel offset (i, j) reads: (N, C, OH, OW)."""
    (sh, sw), (dh, dw), (oh, ow) = stride, dilation, out
    top, left = i * dh, j * dw
    return x_padded[:, :, top:top + (oh - 1) * sh + 1:sh, left:left + (ow - 1) * sw + 1:sw]


def _channel_split(x):
    """``run(fn, C)``: fn(first, stop) over the channels of x (N, C, H, W), chunked over the threads."""
    return lambda fn, channels: threadpool.run_chunks(fn, channels, x[:, 0].size)


def depthwise_forward(x, w, stride, padding, dilation, out):
    """y[n, c] = sum_{i, j} w[c, i, j] * x_padded[n, c, o * stride + (i, j) * dilation].

    Shapes: x (N, C, H, W), w (C, KH, KW), padding ((top, bottom), (left, right)) -> (N, C, OH, OW)."""
    if cpu.enabled():
        from .cpu import depthwise as compiled
        return compiled.depthwise_forward(x, w, stride, padding, dilation, out, _channel_split(x))
    x_padded = pad(x, padding, 0)
    n, c = x.shape[:2]
    y = numpy.empty((n, c) + tuple(out), dtype=x.dtype)

    def chunk(lo, hi):
        part = y[:, lo:hi]
        temp = numpy.empty_like(part)
        for index, (i, j) in enumerate(numpy.ndindex(*w.shape[1:])):
            window = _window(x_padded[:, lo:hi], i, j, stride, dilation, out)
            weight = w[lo:hi, i, j][None, :, None, None]
            if index == 0:
                numpy.multiply(window, weight, out=part)
            else:
                numpy.multiply(window, weight, out=temp)
                part += temp

    threadpool.run_chunks(chunk, c, y[:, 0].size)
    return y


def depthwise_backward(x, w, gy, stride, padding, dilation, out, need_x=True, need_w=True):
    """(gx (N, C, H, W) or None, gw (C, KH, KW) or None) of :func:`depthwise_forward` for the output
    gradient gy (N, C, OH, OW)."""
    if cpu.enabled():
        from .cpu import depthwise as compiled
        split = _channel_split(x)
        gx = compiled.depthwise_input_grad(gy, w, x.shape, stride, padding, dilation, split) if need_x else None
        gw = compiled.depthwise_weight_grad(x, gy, w.shape[1:], stride, padding, dilation, split) if need_w else None
        return gx, gw
    x_padded = pad(x, padding, 0)
    n, c, h, width = x.shape
    (top, _), (left, _) = padding
    gx_padded = numpy.zeros_like(x_padded) if need_x else None
    gw = numpy.empty(w.shape, dtype=w.dtype) if need_w else None

    def chunk(lo, hi):
        g = gy[:, lo:hi]
        for i, j in numpy.ndindex(*w.shape[1:]):
            if need_w:
                window = _window(x_padded[:, lo:hi], i, j, stride, dilation, out)
                gw[lo:hi, i, j] = numpy.einsum("nchw,nchw->c", g, window)
            if need_x:
                target = _window(gx_padded[:, lo:hi], i, j, stride, dilation, out)
                target += g * w[lo:hi, i, j][None, :, None, None]

    threadpool.run_chunks(chunk, c, gy[:, 0].size)
    gx = gx_padded[:, :, top:top + h, left:left + width] if need_x else None
    return (numpy.ascontiguousarray(gx) if need_x else None), gw
