"""Parameter initializers (Paddle 2 names): Constant, Normal, TruncatedNormal,
Uniform, XavierUniform/XavierNormal, KaimingUniform/KaimingNormal, Assign.

An initializer is called as ``init(shape, dtype, xp)`` and returns a new array
of that shape and dtype made by the array module ``xp`` (numpy or cupy). Random
draws come from :func:`framework.random.rng_for`, so ``framework.seed(n)`` makes
a model's initial weights reproducible. Draws are made in float64 and then cast,
so a float32 and a float64 model seeded alike start from the same values.

Fans follow Paddle's convention, which suits both weight layouts used here:

* 2-D weight ``(in_features, out_features)`` (``Linear``, whose weight is
  stored as in Paddle, *not* transposed as in PyTorch):
  ``fan_in = shape[0]``, ``fan_out = shape[1]``.
* conv weight ``(out_channels, in_channels / groups, *kernel)``:
  ``fan_in = shape[1] * prod(kernel)``, ``fan_out = shape[0] * prod(kernel)``.
* 1-D ``(n,)``: ``fan_in = fan_out = n``; 0-D: both 1.
"""
import math

import numpy

from ..random import rng_for

__all__ = ["Initializer", "Constant", "Normal", "TruncatedNormal", "Uniform", "XavierUniform",
           "XavierNormal", "KaimingUniform", "KaimingNormal", "Assign",
           "calculate_fan_in_fan_out", "calculate_gain"]


def calculate_fan_in_fan_out(shape):
    """``(fan_in, fan_out)`` of a weight of ``shape`` (see the module docstring for the layouts)."""
    shape = tuple(int(n) for n in shape)
    if len(shape) == 0:
        return 1, 1
    if len(shape) == 1:
        return shape[0], shape[0]
    if len(shape) == 2:
        return shape[0], shape[1]
    receptive_field = int(numpy.prod(shape[2:]))
    return shape[1] * receptive_field, shape[0] * receptive_field


def calculate_gain(nonlinearity, param=None):
    """The recommended gain for ``nonlinearity`` (as in Paddle/PyTorch).

    'linear', 'conv1d/2d/3d', 'sigmoid' -> 1; 'tanh' -> 5/3; 'relu' -> sqrt(2);
    'leaky_relu' -> sqrt(2 / (1 + slope**2)) with slope ``param`` (default 0.01);
    'selu' -> 3/4.
    """
    name = str(nonlinearity).lower()
    if name in ("linear", "conv1d", "conv2d", "conv3d", "conv1d_transpose", "conv2d_transpose",
                "conv3d_transpose", "sigmoid"):
        return 1.0
    if name == "tanh":
        return 5.0 / 3.0
    if name == "relu":
        return math.sqrt(2.0)
    if name == "leaky_relu":
        slope = 0.01 if param is None else float(param)
        return math.sqrt(2.0 / (1.0 + slope ** 2))
    if name == "selu":
        return 3.0 / 4.0
    raise ValueError(f"calculate_gain: unknown nonlinearity {nonlinearity!r}")


class Initializer:
    """Base class: ``init(shape, dtype, xp) -> array`` of ``shape`` and ``dtype`` on ``xp``."""

    def __call__(self, shape, dtype, xp):
        shape = tuple(int(n) for n in shape)
        return self.draw(shape, xp).astype(dtype, copy=False)

    def draw(self, shape, xp):
        """The values as an array of ``shape`` (any dtype; the caller casts)."""
        raise NotImplementedError

    def __repr__(self):
        fields = ", ".join(f"{k}={v!r}" for k, v in vars(self).items())
        return f"{type(self).__name__}({fields})"


class Constant(Initializer):
    """Every element equals ``value``."""

    def __init__(self, value=0.0):
        self.value = value

    def draw(self, shape, xp):
        return xp.full(shape, self.value)


class Assign(Initializer):
    """Copies ``value`` (array, list or Tensor), which must have the requested shape."""

    def __init__(self, value):
        self.value = value.numpy() if hasattr(value, "numpy") else numpy.asarray(value)

    def draw(self, shape, xp):
        if tuple(self.value.shape) != shape:
            raise ValueError(f"Assign: value of shape {tuple(self.value.shape)} cannot initialise "
                             f"a parameter of shape {shape}")
        return xp.array(self.value)

    def __repr__(self):
        return f"Assign(shape={tuple(self.value.shape)})"


class Uniform(Initializer):
    """Uniform on ``[low, high)``."""

    def __init__(self, low=-1.0, high=1.0):
        if high < low:
            raise ValueError(f"Uniform: high ({high}) must not be below low ({low})")
        self.low, self.high = float(low), float(high)

    def draw(self, shape, xp):
        return self.low + (self.high - self.low) * rng_for(xp).random(shape)


class Normal(Initializer):
    """Gaussian with mean ``mean`` and standard deviation ``std``."""

    def __init__(self, mean=0.0, std=1.0):
        if std < 0:
            raise ValueError(f"Normal: std must be >= 0, got {std}")
        self.mean, self.std = float(mean), float(std)

    def draw(self, shape, xp):
        return self.mean + self.std * rng_for(xp).standard_normal(shape)


class TruncatedNormal(Normal):
    """Gaussian ``(mean, std)`` truncated to ``[mean - 2 std, mean + 2 std]`` (Paddle 2's rule).

    Values outside are redrawn until none is left, so the result is an exact
    sample of the truncated distribution (whose std is about 0.88 ``std``).
    """

    def draw(self, shape, xp):
        rng = rng_for(xp)
        z = rng.standard_normal(shape)
        outside = xp.abs(z) > 2.0
        while bool(outside.any()):
            z[outside] = rng.standard_normal(int(outside.sum()))
            outside = xp.abs(z) > 2.0
        return self.mean + self.std * z


class _FanBased(Initializer):
    """Shared by Xavier and Kaiming: a scale from the fans, then a uniform or normal draw."""

    uniform = True

    def draw(self, shape, xp):
        scale = self.std(shape)
        if self.uniform:  # U(-a, a) has std a / sqrt(3)
            limit = math.sqrt(3.0) * scale
            return Uniform(-limit, limit).draw(shape, xp)
        return Normal(0.0, scale).draw(shape, xp)

    def std(self, shape):
        """The standard deviation of the draw for a weight of ``shape``."""
        raise NotImplementedError


class XavierUniform(_FanBased):
    """Glorot uniform: U(-a, a), ``a = gain * sqrt(6 / (fan_in + fan_out))``.

    ``fan_in``/``fan_out`` override the fans computed from the shape.
    """

    def __init__(self, fan_in=None, fan_out=None, gain=1.0):
        self.fan_in, self.fan_out, self.gain = fan_in, fan_out, float(gain)

    def std(self, shape):
        fan_in, fan_out = calculate_fan_in_fan_out(shape)
        fan_in = fan_in if self.fan_in is None else self.fan_in
        fan_out = fan_out if self.fan_out is None else self.fan_out
        return self.gain * math.sqrt(2.0 / float(fan_in + fan_out))


class XavierNormal(XavierUniform):
    """Glorot normal: N(0, std), ``std = gain * sqrt(2 / (fan_in + fan_out))``."""

    uniform = False


class KaimingUniform(_FanBased):
    """He uniform: U(-a, a), ``a = gain * sqrt(3 / fan_in)``, gain from ``nonlinearity``.

    ``fan_in`` overrides the fan computed from the shape; ``negative_slope`` is
    the leaky-ReLU slope used when ``nonlinearity='leaky_relu'``.
    """

    def __init__(self, fan_in=None, negative_slope=0.0, nonlinearity="relu"):
        self.fan_in, self.negative_slope, self.nonlinearity = fan_in, float(negative_slope), nonlinearity

    def std(self, shape):
        fan_in = calculate_fan_in_fan_out(shape)[0] if self.fan_in is None else self.fan_in
        return calculate_gain(self.nonlinearity, self.negative_slope) / math.sqrt(float(fan_in))


class KaimingNormal(KaimingUniform):
    """He normal: N(0, std), ``std = gain / sqrt(fan_in)``."""

    uniform = False
