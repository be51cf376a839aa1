"""Specs for framework/ops/conv.py: the reference is a direct nested-loop convolution."""
import itertools

import numpy
import pytest

from framework import OpError, Tensor
from framework.kernels.im2col import col2im, col2im_matmul, im2col
from framework.nn import functional as F
from framework.testing import assert_allclose
from ..opspec import OpSpec

CONV = {1: F.conv1d, 2: F.conv2d, 3: F.conv3d}


def conv_reference(x, w, b=None, stride=1, pads=0, dilation=1, groups=1):
    """y[n, o, pos] = b[o] + sum_{c, k} w[o, c, k] * x_padded[n, group(o) * C_g + c, pos * stride + k * dilation].

    ``pads`` is an int, or per spatial dimension an int or a (before, after) pair.
    """
    nd = x.ndim - 2
    stride = (stride,) * nd if isinstance(stride, int) else stride
    dilation = (dilation,) * nd if isinstance(dilation, int) else dilation
    pads = (pads,) * nd if isinstance(pads, int) else pads
    pads = tuple((p, p) if isinstance(p, int) else p for p in pads)
    xpad = numpy.pad(x, ((0, 0), (0, 0)) + tuple(pads))
    out_channels, per_group = w.shape[:2]
    kernel = w.shape[2:]
    out = [(xpad.shape[2 + i] - dilation[i] * (kernel[i] - 1) - 1) // stride[i] + 1 for i in range(nd)]
    y = numpy.zeros((x.shape[0], out_channels, *out))
    outs_per_group = out_channels // groups
    for o in range(out_channels):
        first = (o // outs_per_group) * per_group
        for pos in itertools.product(*map(range, out)):
            total = numpy.zeros(x.shape[0]) if b is None else numpy.full(x.shape[0], b[o])
            for c in range(per_group):
                for k in itertools.product(*map(range, kernel)):
                    at = tuple(p * s + kk * d for p, s, kk, d in zip(pos, stride, k, dilation))
                    total = total + w[(o, c) + k] * xpad[(slice(None), first + c) + at]
            y[(slice(None), o) + pos] = total
    return y


def _make(x_shape, w_shape, bias=True):
    def make(rng):
        arrays = [rng.uniform(-1, 1, x_shape), rng.uniform(-1, 1, w_shape)]
        return arrays + [rng.uniform(-1, 1, w_shape[0])] if bias else arrays
    return make


def _spec(nd, x_shape, w_shape, bias=True, ref_pads=None, check=None, **options):
    """A conv spec; ``ref_pads`` gives the reference its padding when ``options`` use a string."""
    op = CONV[nd]
    ref_options = {key: value for key, value in options.items() if key != "padding"}
    ref_options["pads"] = options.get("padding", 0) if ref_pads is None else ref_pads
    if bias:
        return OpSpec(f"conv{nd}d", lambda x, w, b: op(x, w, b, **options), _make(x_shape, w_shape),
                      lambda x, w, b: conv_reference(x, w, b, **ref_options), atol=1e-4, check=check)
    return OpSpec(f"conv{nd}d", lambda x, w: op(x, w, **options), _make(x_shape, w_shape, bias=False),
                  lambda x, w: conv_reference(x, w, **ref_options), atol=1e-4)


def _col2im_is_the_adjoint_of_im2col(outs, arrays):
    """<im2col(x), c> == <x, col2im(c)>, and col2im_matmul(w_t, g) == col2im(w_t @ g), on a strided, dilated,
    asymmetrically padded 2-d geometry."""
    rng = numpy.random.default_rng(3)
    geometry = dict(kernel=(2, 3), stride=(2, 1), padding=((1, 2), (0, 1)), dilation=(1, 2), out=(4, 3))
    x = rng.standard_normal((2, 4, 6, 6))
    cols = rng.standard_normal((4 * 6, 2 * 12))
    assert numpy.isclose((im2col(x, **geometry) * cols).sum(), (x * col2im(cols, x.shape, **geometry)).sum())
    w_t, g = rng.standard_normal((2, 12, 3)), rng.standard_normal((2, 3, 24))
    assert_allclose(col2im_matmul(w_t, g, x.shape, **geometry),
                    col2im(numpy.matmul(w_t, g).reshape(24, 24), x.shape, **geometry), rtol=1e-10, atol=1e-12)


def _pointwise_matches_the_column_path(outs, arrays):
    """The per-image GEMM path of 1x1 convolutions gives the im2col path's output and gradients."""
    from framework.kernels import conv
    assert 24 * 22 >= conv.POINTWISE_MIN_POSITIONS

    def run():
        x, w, b = (Tensor(a.astype(numpy.float64), requires_grad=True) for a in arrays)
        y = F.conv2d(x, w, b)
        (y * y).sum().backward()
        return [y.numpy(), x.grad.numpy(), w.grad.numpy(), b.grad.numpy()]

    fast = run()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(conv, "POINTWISE_MIN_POSITIONS", 10 ** 9)
        columns = run()
    for a, b in zip(fast, columns):
        assert_allclose(a, b, rtol=1e-10, atol=1e-12)


def _rejects_bad_input(outs, arrays):
    """Wrong ndim, channels, dtype, bias, padding or a too small input: one OpError naming the op."""
    x, w = Tensor(numpy.zeros((2, 4, 5, 5), numpy.float32)), Tensor(numpy.zeros((6, 2, 3, 3), numpy.float32))
    bad_calls = [lambda: F.conv2d(Tensor(numpy.zeros((2, 4, 5), numpy.float32)), w),
                 lambda: F.conv2d(x, w),  # 4 channels, weight expects 2 with groups=1
                 lambda: F.conv2d(x, Tensor(numpy.zeros((6, 4, 3, 3))), groups=1),
                 lambda: F.conv2d(x, w, Tensor(numpy.zeros(5, numpy.float32)), groups=2),
                 lambda: F.conv2d(x, w, padding="full", groups=2),
                 lambda: F.conv2d(x, w, stride=(1, 2, 3), groups=2),
                 lambda: F.conv2d(x, Tensor(numpy.zeros((6, 2, 7, 7), numpy.float32)), groups=2)]
    for call in bad_calls:
        with pytest.raises(OpError, match="conv2d"):
            call()

SPECS = [
    _spec(1, (2, 3, 9), (4, 3, 3)),
    _spec(1, (2, 4, 11), (6, 2, 3), stride=2, padding=2, dilation=2, groups=2),
    _spec(1, (1, 2, 6), (3, 2, 4), bias=False, padding="same", ref_pads=((1, 2),)),
    _spec(2, (2, 3, 6, 5), (4, 3, 3, 3), padding=1, check=_rejects_bad_input),
    # stride 1, dilated, grouped, padded unevenly: the input gradient as one correlation of gy
    _spec(2, (2, 4, 7, 8), (6, 2, 4, 2), bias=False, padding="same", ref_pads=((1, 2), (1, 1)), dilation=(1, 2),
          groups=2),
    # stride 1 but padded past the kernel's reach: the per-offset input gradient
    _spec(1, (2, 3, 5), (2, 3, 2), padding=2),
    _spec(2, (2, 4, 7, 6), (6, 2, 3, 2), stride=(2, 1), padding=(1, 2), dilation=(1, 2), groups=2,
          check=_col2im_is_the_adjoint_of_im2col),
    _spec(2, (1, 4, 5, 5), (4, 1, 3, 3), bias=False, stride=2, padding=1, groups=4),  # depthwise
    _spec(2, (2, 3, 7, 6), (3, 1, 3, 2), stride=(1, 2), padding=(2, 1), dilation=(2, 1), groups=3),  # depthwise
    _spec(2, (2, 3, 7, 6), (2, 3, 2, 3), bias=False, stride=2, padding="same", ref_pads=((0, 1), (0, 1))),
    _spec(2, (2, 3, 5, 4), (4, 3, 1, 1), padding="valid", ref_pads=0),
    # 1x1 with >= POINTWISE_MIN_POSITIONS outputs per image: the per-image GEMM path
    _spec(2, (2, 3, 24, 22), (4, 3, 1, 1), check=_pointwise_matches_the_column_path),
    _spec(1, (2, 3, 520), (2, 3, 1), bias=False),
    _spec(3, (1, 2, 8, 8, 8), (3, 2, 1, 1, 1)),
    _spec(3, (2, 2, 4, 5, 4), (3, 2, 2, 3, 2), padding=1),
    _spec(3, (1, 4, 5, 4, 6), (4, 2, 3, 2, 2), stride=(1, 2, 2), padding=(1, 0, 1), dilation=(2, 1, 2),
          groups=2),
]
