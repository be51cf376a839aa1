"""Compiled per-channel affine map (an inference program's batch norm) with the ReLU after it, in one pass.

y[n, c, l] = x[n, c, l] * scale[c] + shift[c], then, with ``relu``, max(y, 0) as NumPy's ``maximum`` gives it
(a NaN stays NaN, -0 becomes 0). Compiled without fastmath, so the multiply and the add stay two roundings
(no fused multiply-add): the same bits as :func:`framework.kernels.affine.scale_shift` and ``maximum``.
Channels [first, stop) per call, so the threads of :mod:`framework.threadpool` split the channels.

Shapes: x and y (N, C, L), scale and shift (C,), one float dtype, C-contiguous.
"""
from .compiler import kernel

__all__ = ["channel_affine_channels"]


@kernel(fastmath=False)
def channel_affine_channels(x, scale, shift, relu, first, stop, y):
    """Channels [first, stop) of y = x * scale + shift (then max(y, 0) with ``relu``); see the module docstring."""
    for n in range(x.shape[0]):
        for c in range(first, stop):
            s, b = scale[c], shift[c]
            for i in range(x.shape[2]):
                v = x[n, c, i] * s + b
                if relu and not (v > 0 or v != v):
                    y[n, c, i] = 0
                else:
                    y[n, c, i] = v
