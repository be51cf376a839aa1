"""Activations: relu, leaky_relu, elu, gelu, sigmoid, tanh, softplus, silu/swish,
hardswish, softmax and log_softmax. Elementwise ones keep the input's shape.

``gelu`` (exact form) needs erf, which NumPy lacks; :func:`_erfc` evaluates it
on any array module from a Chebyshev fit made at import from the standard
library's ``math.erfc`` (absolute error below 1e-15 in float64).
"""
import math

import numpy
from numpy.polynomial import chebyshev

from .. import threadpool
from ..tensor import Function, OpError
from .utils import normalize_axes, check_float

__all__ = ["relu", "leaky_relu", "elu", "gelu", "sigmoid", "tanh", "softplus", "silu", "swish",
           "hardswish", "softmax", "log_softmax"]

_ERFC_LIMIT = 10.0  # erfc(10) ~ 2e-45: beyond it erf is exactly +-1 in float64


def _erfc_fit(degree=20):
    """Chebyshev coefficients of f(t) = log(erfc(z) / t) + z**2 with t = 2 / (2 + z), z in [0, 10].

    Numerical Recipes' change of variable: f is smooth in t on [1/6, 1], so a
    degree-20 interpolant reaches full float64 accuracy.
    """
    lo, hi = 2.0 / (2.0 + _ERFC_LIMIT), 1.0

    def f(s):
        t = (hi - lo) / 2 * s + (hi + lo) / 2
        z = 2.0 / t - 2.0
        return numpy.array([math.log(math.erfc(zi) / ti) + zi * zi for zi, ti in zip(z, t)])
    return [float(c) for c in chebyshev.chebinterpolate(f, degree)], (hi + lo) / 2, (hi - lo) / 2


_ERFC_COEFFS, _ERFC_CENTRE, _ERFC_HALF_WIDTH = _erfc_fit()


def _chebval(s, coeffs):
    """Sum of coeffs[k] * T_k(s) by Clenshaw's recurrence (elementwise on an array ``s``)."""
    b1 = b2 = 0.0
    twice = 2 * s
    for c in coeffs[:0:-1]:
        b1, b2 = twice * b1 - b2 + c, b1
    return s * b1 - b2 + coeffs[0]


def _erfc(xp, a):
    """erfc(a) for a >= 0, elementwise on an ``xp`` array (relative error ~1e-14)."""
    a = xp.minimum(a, _ERFC_LIMIT)
    t = 2.0 / (2.0 + a)
    return t * xp.exp(_chebval((t - _ERFC_CENTRE) / _ERFC_HALF_WIDTH, _ERFC_COEFFS) - a * a)


def _normal_cdf(xp, x):
    """Phi(x) = 0.5 * (1 + erf(x / sqrt(2))), accurate in both tails."""
    tail = 0.5 * _erfc(xp, xp.abs(x) * (1 / math.sqrt(2)))
    return xp.where(x < 0, tail, 1 - tail)


class ReLU(Function):
    def forward(self, x):
        self.saved = y = threadpool.elementwise(self.xp.maximum, x, x.dtype.type(0))
        return y

    def backward(self, gy):
        y, xp = self.saved, self.xp
        if xp is not numpy:
            return gy * (y > 0)
        gx = numpy.empty(gy.shape, dtype=gy.dtype)
        flat_gx, flat_gy, flat_y = gx.reshape(-1), gy.reshape(-1), y.reshape(-1)
        threadpool.run_chunks(lambda lo, hi: numpy.multiply(flat_gy[lo:hi], flat_y[lo:hi] > 0, out=flat_gx[lo:hi]),
                            gx.size)
        return gx


class LeakyReLU(Function):
    def forward(self, x):
        self.saved = x
        return self.xp.where(x > 0, x, x * self.slope)

    def backward(self, gy):
        return self.xp.where(self.saved > 0, gy, gy * self.slope)


class ELU(Function):
    def forward(self, x):
        xp = self.xp
        y = xp.where(x > 0, x, self.alpha * xp.expm1(xp.minimum(x, 0)))
        self.saved = x, y
        return y

    def backward(self, gy):
        x, y = self.saved
        return self.xp.where(x > 0, gy, gy * (y + self.alpha))


class GELU(Function):
    _C = math.sqrt(2 / math.pi)
    _K = 0.044715

    def forward(self, x):
        xp = self.xp
        if self.approximate:
            gate = 0.5 * (1 + xp.tanh(self._C * (x + self._K * x * x * x)))
        else:
            gate = _normal_cdf(xp, x)
        self.saved = x, gate
        return x * gate

    def backward(self, gy):
        x, gate = self.saved
        xp = self.xp
        if self.approximate:
            # d/dx 0.5 x (1 + tanh u) = gate + 0.5 x (1 - tanh(u)**2) u', tanh u = 2 gate - 1
            th = 2 * gate - 1
            slope = 0.5 * x * (1 - th * th) * (self._C * (1 + 3 * self._K * x * x))
        else:
            slope = x * xp.exp(-0.5 * x * x) * (1 / math.sqrt(2 * math.pi))
        return gy * (gate + slope)


class Sigmoid(Function):
    def forward(self, x):
        self.saved = y = self.xp.tanh(x * 0.5) * 0.5 + 0.5  # stable for large |x|
        return y

    def backward(self, gy):
        y = self.saved
        return gy * y * (1 - y)


class Tanh(Function):
    def forward(self, x):
        self.saved = y = self.xp.tanh(x)
        return y

    def backward(self, gy):
        y = self.saved
        return gy * (1 - y * y)


class Softplus(Function):
    def forward(self, x):
        z = x * self.beta
        self.saved = x
        return self.xp.where(z > self.threshold, x, self.xp.logaddexp(0, z) / self.beta)

    def backward(self, gy):
        xp = self.xp
        z = self.saved * self.beta
        return gy * xp.where(z > self.threshold, 1, xp.tanh(z * 0.5) * 0.5 + 0.5)


class SiLU(Function):
    def forward(self, x):
        s = self.xp.tanh(x * 0.5) * 0.5 + 0.5
        self.saved = x, s
        return x * s

    def backward(self, gy):
        x, s = self.saved
        return gy * s * (1 + x * (1 - s))


class Hardswish(Function):
    def forward(self, x):
        self.saved = x
        return x * (self.xp.clip(x + 3, 0, 6) / 6)

    def backward(self, gy):
        x = self.saved
        xp = self.xp
        return gy * xp.where(x < -3, 0, xp.where(x > 3, 1, (2 * x + 3) / 6))


class Softmax(Function):
    def forward(self, x):
        e = self.xp.exp(x - x.max(axis=self.axis, keepdims=True))
        self.saved = y = e / e.sum(axis=self.axis, keepdims=True)
        return y

    def backward(self, gy):
        y = self.saved
        return y * (gy - (gy * y).sum(axis=self.axis, keepdims=True))


class LogSoftmax(Function):
    def forward(self, x):
        shifted = x - x.max(axis=self.axis, keepdims=True)
        self.saved = y = shifted - self.xp.log(self.xp.exp(shifted).sum(axis=self.axis, keepdims=True))
        return y

    def backward(self, gy):
        return gy - self.xp.exp(self.saved) * gy.sum(axis=self.axis, keepdims=True)


def _axis(axis, x, op):
    """A single int ``axis`` of ``x`` as a non-negative int; errors name ``op``."""
    if not isinstance(axis, (int, numpy.integer)):
        raise OpError(f"{op}: axis must be an int, got {axis!r} (tensor of shape {x.shape})")
    return normalize_axes(axis, x.data.ndim, op)[0]


def relu(x):
    """max(x, 0) elementwise; the gradient at 0 is 0. Shape: (*) -> (*)."""
    check_float(x, "relu")
    return ReLU.apply(x)


def leaky_relu(x, negative_slope=0.01):
    """x for x > 0, else negative_slope * x. Shape: (*) -> (*)."""
    check_float(x, "leaky_relu")
    return LeakyReLU.apply(x, slope=negative_slope)


def elu(x, alpha=1.0):
    """x for x > 0, else alpha * (exp(x) - 1). Shape: (*) -> (*)."""
    check_float(x, "elu")
    return ELU.apply(x, alpha=alpha)


def gelu(x, approximate=False):
    """Gaussian error linear unit, x * Phi(x) with Phi the standard normal CDF.

    ``approximate=False`` uses the exact erf form 0.5 x (1 + erf(x / sqrt(2)));
    ``approximate=True`` the tanh form 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x**3))).
    Shape: (*) -> (*).
    """
    check_float(x, "gelu")
    return GELU.apply(x, approximate=bool(approximate))


def sigmoid(x):
    """Logistic sigmoid 1 / (1 + exp(-x)), computed stably. Shape: (*) -> (*)."""
    check_float(x, "sigmoid")
    return Sigmoid.apply(x)


def tanh(x):
    """Hyperbolic tangent. Shape: (*) -> (*)."""
    check_float(x, "tanh")
    return Tanh.apply(x)


def softplus(x, beta=1.0, threshold=20.0):
    """log(1 + exp(beta x)) / beta, or x itself where beta x > threshold (as in Paddle).

    Shape: (*) -> (*).
    """
    check_float(x, "softplus")
    return Softplus.apply(x, beta=beta, threshold=threshold)


def silu(x):
    """x * sigmoid(x) (also called swish). Shape: (*) -> (*)."""
    check_float(x, "silu")
    return SiLU.apply(x)


def swish(x):
    """Paddle's name for :func:`silu`, x * sigmoid(x). Shape: (*) -> (*)."""
    return silu(x)


def hardswish(x):
    """x * min(max(x + 3, 0), 6) / 6. Shape: (*) -> (*)."""
    check_float(x, "hardswish")
    return Hardswish.apply(x)


def softmax(x, axis=-1):
    """exp(x) / sum(exp(x)) along ``axis``, computed stably. Shape: (*) -> (*)."""
    check_float(x, "softmax")
    return Softmax.apply(x, axis=_axis(axis, x, "softmax"))


def log_softmax(x, axis=-1):
    """x - logsumexp(x) along ``axis``, computed stably. Shape: (*) -> (*)."""
    check_float(x, "log_softmax")
    return LogSoftmax.apply(x, axis=_axis(axis, x, "log_softmax"))
