"""Specs for framework/ops/conv.py: the reference is a direct nested-loop convolution."""
import itertools

import numpy

from framework.nn import functional as F
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


def _spec(nd, x_shape, w_shape, bias=True, ref_pads=None, **options):
    """A conv spec; ``ref_pads`` gives the reference its padding when ``options`` use a string."""
    op = CONV[nd]
    ref_options = {key: value for key, value in options.items() if key != "padding"}
    ref_options["pads"] = options.get("padding", 0) if ref_pads is None else ref_pads
    if bias:
        return OpSpec(f"conv{nd}d", lambda x, w, b: op(x, w, b, **options), _make(x_shape, w_shape),
                      lambda x, w, b: conv_reference(x, w, b, **ref_options), atol=1e-4)
    return OpSpec(f"conv{nd}d", lambda x, w: op(x, w, **options), _make(x_shape, w_shape, bias=False),
                  lambda x, w: conv_reference(x, w, **ref_options), atol=1e-4)


SPECS = [
    _spec(1, (2, 3, 9), (4, 3, 3)),
    _spec(1, (2, 4, 11), (6, 2, 3), stride=2, padding=2, dilation=2, groups=2),
    _spec(1, (1, 2, 6), (3, 2, 4), bias=False, padding="same", ref_pads=((1, 2),)),
    _spec(2, (2, 3, 6, 5), (4, 3, 3, 3), padding=1),
    _spec(2, (2, 4, 7, 6), (6, 2, 3, 2), stride=(2, 1), padding=(1, 2), dilation=(1, 2), groups=2),
    _spec(2, (1, 4, 5, 5), (4, 1, 3, 3), bias=False, stride=2, padding=1, groups=4),  # depthwise
    _spec(2, (2, 3, 7, 6), (2, 3, 2, 3), bias=False, stride=2, padding="same", ref_pads=((0, 1), (0, 1))),
    _spec(2, (2, 3, 5, 4), (4, 3, 1, 1), padding="valid", ref_pads=0),
    _spec(3, (2, 2, 4, 5, 4), (3, 2, 2, 3, 2), padding=1),
    _spec(3, (1, 4, 5, 4, 6), (4, 2, 3, 2, 2), stride=(1, 2, 2), padding=(1, 0, 1), dilation=(2, 1, 2),
          groups=2),
]
