"""Elementwise math: broadcasting arithmetic, pow, exp, log, sqrt, abs, clip,
maximum/minimum, where, casts and comparisons.

Every binary op broadcasts as NumPy does; both operands must share a dtype
(Python scalars take the tensor's dtype).
"""
import numpy

from .. import threadpool
from ..tensor import Function, Tensor, OpError
from .utils import as_tensor, unbroadcast

__all__ = ["add", "subtract", "multiply", "divide", "pow", "neg", "exp", "log", "sqrt",
           "abs", "clip", "maximum", "minimum", "where", "cast", "clone",
           "equal", "not_equal", "less_than", "less_equal", "greater_than", "greater_equal",
           "logical_not", "isfinite", "to_device_op"]


def _pair(x, y, op):
    """Both operands as Tensors of one dtype; the error names ``op`` and both dtypes and shapes."""
    if not isinstance(x, Tensor):
        x = as_tensor(x, y)
    elif not isinstance(y, Tensor):
        y = as_tensor(y, x)
    if x.data.dtype != y.data.dtype:
        raise OpError(f"{op}: dtype mismatch, {x.data.dtype} {x.shape} vs {y.data.dtype} {y.shape}; "
                      "cast one with .astype()")
    return x, y


class Add(Function):
    def forward(self, x, y):
        self.shapes = x.shape, y.shape
        return threadpool.elementwise(self.xp.add, x, y)

    def backward(self, gy):
        return unbroadcast(gy, self.shapes[0]), unbroadcast(gy, self.shapes[1])


class Subtract(Function):
    def forward(self, x, y):
        self.shapes = x.shape, y.shape
        return threadpool.elementwise(self.xp.subtract, x, y)

    def backward(self, gy):
        return unbroadcast(gy, self.shapes[0]), unbroadcast(-gy, self.shapes[1])


class Multiply(Function):
    def forward(self, x, y):
        self.saved = x, y
        return threadpool.elementwise(self.xp.multiply, x, y)

    def backward(self, gy):
        x, y = self.saved
        multiply = self.xp.multiply
        gx = unbroadcast(threadpool.elementwise(multiply, gy, y), x.shape) if self.needs_input_grad[0] else None
        gy_ = unbroadcast(threadpool.elementwise(multiply, gy, x), y.shape) if self.needs_input_grad[1] else None
        return gx, gy_


class Divide(Function):
    def forward(self, x, y):
        self.saved = x, y
        return x / y

    def backward(self, gy):
        x, y = self.saved
        gx = unbroadcast(gy / y, x.shape) if self.needs_input_grad[0] else None
        gy_ = unbroadcast(-gy * x / (y * y), y.shape) if self.needs_input_grad[1] else None
        return gx, gy_


class Pow(Function):
    def forward(self, x, y):
        out = x ** y
        self.saved = x, y, out
        return out

    def backward(self, gy):
        x, y, out = self.saved
        xp = self.xp
        gx = unbroadcast(gy * y * x ** (y - 1), x.shape) if self.needs_input_grad[0] else None
        gy_ = None
        if self.needs_input_grad[1]:
            safe_log = xp.log(xp.where(x > 0, x, 1))
            gy_ = unbroadcast(gy * out * safe_log, y.shape)
        return gx, gy_


class PowScalar(Function):
    def forward(self, x):
        self.saved = x
        return x ** self.exponent

    def backward(self, gy):
        x = self.saved
        return gy * (self.exponent * x ** (self.exponent - 1))


class Neg(Function):
    def forward(self, x):
        return -x

    def backward(self, gy):
        return -gy


class Exp(Function):
    def forward(self, x):
        self.saved = y = self.xp.exp(x)
        return y

    def backward(self, gy):
        return gy * self.saved


class Log(Function):
    def forward(self, x):
        self.saved = x
        return self.xp.log(x)

    def backward(self, gy):
        return gy / self.saved


class Sqrt(Function):
    def forward(self, x):
        self.saved = y = self.xp.sqrt(x)
        return y

    def backward(self, gy):
        return gy / (2 * self.saved)


class Abs(Function):
    def forward(self, x):
        self.saved = x
        return self.xp.abs(x)

    def backward(self, gy):
        return gy * self.xp.sign(self.saved)


class Clip(Function):
    def forward(self, x):
        lo = -numpy.inf if self.lo is None else self.lo
        hi = numpy.inf if self.hi is None else self.hi
        self.saved = (x >= lo) & (x <= hi)
        return self.xp.clip(x, lo, hi).astype(x.dtype, copy=False)

    def backward(self, gy):
        return gy * self.saved


class Maximum(Function):
    """Gradient goes to x where x >= y, else to y (ties go to x, as in Paddle)."""

    def forward(self, x, y):
        self.saved = x >= y, x.shape, y.shape
        return self.xp.maximum(x, y)

    def backward(self, gy):
        take_x, sx, sy = self.saved
        return unbroadcast(gy * take_x, sx), unbroadcast(gy * ~take_x, sy)


class Minimum(Function):
    """Gradient goes to x where x <= y, else to y."""

    def forward(self, x, y):
        self.saved = x <= y, x.shape, y.shape
        return self.xp.minimum(x, y)

    def backward(self, gy):
        take_x, sx, sy = self.saved
        return unbroadcast(gy * take_x, sx), unbroadcast(gy * ~take_x, sy)


class Where(Function):
    def forward(self, x, y):
        self.saved = x.shape, y.shape
        return self.xp.where(self.condition, x, y)

    def backward(self, gy):
        sx, sy = self.saved
        zero = gy.dtype.type(0)
        return (unbroadcast(self.xp.where(self.condition, gy, zero), sx),
                unbroadcast(self.xp.where(self.condition, zero, gy), sy))


class Cast(Function):
    def forward(self, x):
        self.source = x.dtype
        return x.astype(self.dtype)

    def backward(self, gy):
        return gy.astype(self.source)


class Identity(Function):
    def forward(self, x):
        return x.copy()

    def backward(self, gy):
        return gy


class ToDevice(Function):
    def forward(self, x):
        from ..backend import to_device, device_of
        self.source = device_of(x)
        return to_device(x, self.device)

    def backward(self, gy):
        from ..backend import to_device
        return to_device(gy, self.source)


def add(x, y):
    """Elementwise x + y with broadcasting. Shapes: x (*a), y (*b) -> broadcast(a, b)."""
    x, y = _pair(x, y, "add")
    return Add.apply(x, y)


def subtract(x, y):
    """Elementwise x - y with broadcasting."""
    x, y = _pair(x, y, "subtract")
    return Subtract.apply(x, y)


def multiply(x, y):
    """Elementwise x * y with broadcasting."""
    x, y = _pair(x, y, "multiply")
    return Multiply.apply(x, y)


def divide(x, y):
    """Elementwise x / y with broadcasting (float tensors)."""
    x, y = _pair(x, y, "divide")
    return Divide.apply(x, y)


def pow(x, y):
    """Elementwise x ** y. ``y`` may be a Python number (fast path) or a Tensor."""
    if isinstance(x, Tensor) and isinstance(y, (int, float)):
        return PowScalar.apply(x, exponent=y)
    x, y = _pair(x, y, "pow")
    return Pow.apply(x, y)


def neg(x):
    """Elementwise -x."""
    return Neg.apply(x)


def exp(x):
    """Elementwise e**x."""
    return Exp.apply(x)


def log(x):
    """Elementwise natural logarithm."""
    return Log.apply(x)


def sqrt(x):
    """Elementwise square root."""
    return Sqrt.apply(x)


def abs(x):
    """Elementwise |x|; the gradient at 0 is 0."""
    return Abs.apply(x)


def clip(x, min=None, max=None):
    """Clamp x into [min, max] (either bound may be None); gradient 1 inside, 0 outside."""
    return Clip.apply(x, lo=min, hi=max)


def maximum(x, y):
    """Elementwise max of x and y with broadcasting."""
    x, y = _pair(x, y, "maximum")
    return Maximum.apply(x, y)


def minimum(x, y):
    """Elementwise min of x and y with broadcasting."""
    x, y = _pair(x, y, "minimum")
    return Minimum.apply(x, y)


def where(condition, x, y):
    """``x`` where ``condition`` is true, else ``y``; all three broadcast together.

    ``condition`` is a bool Tensor or array (never differentiated).
    """
    if isinstance(x, Tensor) or isinstance(y, Tensor):
        like = x if isinstance(x, Tensor) else y
        x, y = _pair(as_tensor(x, like), as_tensor(y, like), "where")
    cond = condition.data if isinstance(condition, Tensor) else condition
    if cond.dtype != numpy.bool_:
        raise OpError(f"where: condition must be bool, got {cond.dtype}")
    return Where.apply(x, y, condition=cond)


def cast(x, dtype):
    """``x`` converted to ``dtype``; the gradient is cast back."""
    dtype = numpy.dtype(dtype)
    if x.data.dtype == dtype:
        return x
    if dtype.kind != "f" and x.requires_grad:
        return Tensor(x.data.astype(dtype))
    return Cast.apply(x, dtype=dtype)


def clone(x):
    """A copy of ``x`` that stays in the graph."""
    return Identity.apply(x)


def to_device_op(x, device):
    """``x`` copied to ``device``; gradients flow back to the source device."""
    return ToDevice.apply(x, device=device)


def _compare(name, ufunc):
    def compare(x, y):
        if not isinstance(x, Tensor):
            x = as_tensor(x, y)
        if not isinstance(y, Tensor):
            y = as_tensor(y, x)
        try:
            return Tensor(ufunc(x.data, y.data))
        except ValueError as err:
            raise OpError(f"{name}: {err} (shapes {x.shape} and {y.shape})") from None
    compare.__name__ = name
    compare.__doc__ = f"Elementwise ``{name}`` as a bool Tensor (not differentiable)."
    return compare


equal = _compare("equal", lambda a, b: a == b)
not_equal = _compare("not_equal", lambda a, b: a != b)
less_than = _compare("less_than", lambda a, b: a < b)
less_equal = _compare("less_equal", lambda a, b: a <= b)
greater_than = _compare("greater_than", lambda a, b: a > b)
greater_equal = _compare("greater_equal", lambda a, b: a >= b)


def logical_not(x):
    """Elementwise not of a bool Tensor."""
    return Tensor(~x.data)


def isfinite(x):
    """Bool Tensor: True where x is neither inf nor NaN."""
    from ..backend import get_array_module
    return Tensor(get_array_module(x.data).isfinite(x.data))
