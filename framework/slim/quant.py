"""Int8 arithmetic: symmetric per-channel weights, per-tensor activations, and their calibration.

- :func:`quantize_weight` maps a float weight to int8 with one scale per channel
  of ``axis`` (``scale = max|w| / 127`` over the channel, ``q = round(w / scale)``),
  so ``|w - dequantize_weight(q, scale, axis)| <= scale / 2`` elementwise;
- :func:`fake_quantize` rounds an activation to the int8 grid of one per-tensor
  scale (``clip(round(x / s), -128, 127) * s``, ties to even as ONNX's
  ``QuantizeLinear``): error at most ``s / 2`` inside ``[-128 s, 127 s]``;
- calibration observers see the activations of a few hundred training samples and
  choose the scale: :class:`AbsMax` (the largest magnitude), :class:`Percentile`
  (a high percentile of the magnitudes) and :class:`KL` (TensorRT's entropy
  calibration: the clipping threshold whose 128-level histogram is closest in
  KL divergence to the 2048-bin one). The two histogram observers need two
  passes: the first finds the range (:meth:`observe_range`), the second fills the
  histogram (:meth:`observe`). Exact zeros (half of every post-ReLU tensor) are not
  counted: int8 holds them exactly, and in the histogram they pull KL's threshold down.
"""
import numpy

from .errors import SlimError

__all__ = ["QMAX", "quantize_weight", "dequantize_weight", "fake_quantize", "AbsMax", "Percentile", "KL",
           "OBSERVERS", "observer"]

QMAX = 127


def _channel_shape(ndim, axis):
    shape = [1] * ndim
    shape[axis] = -1
    return shape


def quantize_weight(w, axis):
    """``(q int8 of w's shape, scale float32 (C,))`` for ``w`` with its channels along ``axis``."""
    w = numpy.asarray(w, dtype=numpy.float32)
    axis = axis % w.ndim
    amax = numpy.abs(numpy.moveaxis(w, axis, 0).reshape(w.shape[axis], -1)).max(axis=1)
    scale = numpy.where(amax > 0, amax / QMAX, 1.0).astype(numpy.float32)
    q = numpy.rint(w / scale.reshape(_channel_shape(w.ndim, axis)))
    return numpy.clip(q, -QMAX, QMAX).astype(numpy.int8), scale


def dequantize_weight(q, scale, axis, xp=numpy):
    """float32 ``q * scale`` with ``scale`` (C,) broadcast along ``axis`` of ``q``."""
    return q.astype(xp.float32) * scale.reshape(_channel_shape(q.ndim, axis % q.ndim))


def fake_quantize(x, scale, xp=numpy):
    """``x`` rounded to the int8 grid of the per-tensor ``scale`` (same shape and dtype)."""
    return (xp.clip(xp.rint(x / scale), -QMAX - 1, QMAX) * scale).astype(x.dtype, copy=False)


class AbsMax:
    """Scale from the largest activation magnitude seen (one pass)."""
    passes = 1

    def __init__(self):
        self.amax = 0.0

    def observe(self, x):
        self.amax = max(self.amax, float(numpy.abs(x).max()) if x.size else 0.0)

    def scale(self):
        return max(self.amax, 1e-8) / QMAX


class _Histogram:
    """A 2048-bin histogram of magnitudes over [0, max seen in the first pass]."""
    passes, bins = 2, 2048

    def __init__(self):
        self.amax, self.counts = 0.0, numpy.zeros(self.bins, dtype=numpy.float64)

    def observe_range(self, x):
        self.amax = max(self.amax, float(numpy.abs(x).max()) if x.size else 0.0)

    def observe(self, x):
        magnitudes = numpy.abs(x)
        if self.amax > 0:                                   # exact zeros (after a ReLU) stay exact: not counted
            self.counts += numpy.histogram(magnitudes[magnitudes > 0], bins=self.bins, range=(0.0, self.amax))[0]

    @property
    def width(self):
        return self.amax / self.bins


class Percentile(_Histogram):
    """Scale from the ``percentile`` of the magnitudes (default 99.99)."""

    def __init__(self, percentile=99.99):
        super().__init__()
        self.percentile = float(percentile)

    def scale(self):
        total = self.counts.sum()
        if total == 0:
            return max(self.amax, 1e-8) / QMAX
        index = int(numpy.searchsorted(numpy.cumsum(self.counts), total * self.percentile / 100.0))
        return max((index + 1) * self.width, 1e-8) / QMAX


class KL(_Histogram):
    """Scale from the clipping threshold of least KL divergence (TensorRT's entropy calibration)."""
    levels = 128

    def scale(self):
        counts = self.counts
        if counts.sum() == 0:
            return max(self.amax, 1e-8) / QMAX
        best, best_i = numpy.inf, self.bins
        for i in range(self.levels, self.bins + 1, 16):
            p = counts[:i].copy()
            p[-1] += counts[i:].sum()                        # the clipped tail lands in the last bin
            chunks = numpy.array_split(counts[:i], self.levels)
            q = numpy.concatenate([numpy.where(c > 0, c.sum() / max((c > 0).sum(), 1), 0.0) for c in chunks])
            divergence = _kl(p, q)
            if divergence < best:
                best, best_i = divergence, i
        return max(best_i * self.width, 1e-8) / QMAX


def _kl(p, q):
    """KL(p || q) of two histograms (normalised here); bins where p > 0 and q = 0 get a small q."""
    p, q = p / p.sum(), q / max(q.sum(), 1e-300)
    nz = p > 0
    return float(numpy.sum(p[nz] * numpy.log(p[nz] / numpy.maximum(q[nz], 1e-12))))


OBSERVERS = {"abs_max": AbsMax, "kl": KL, "percentile": Percentile}


def observer(method, setting="quant.activation"):
    """A fresh observer for ``method`` (``abs_max``, ``kl`` or ``percentile``); another name is a SlimError."""
    if method not in OBSERVERS:
        raise SlimError(f"{setting}: unknown calibration method {method!r} (known: {', '.join(OBSERVERS)})")
    return OBSERVERS[method]()
