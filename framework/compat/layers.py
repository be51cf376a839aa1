"""``fluid.layers``: the 2019 names of a few tensor ops, mapped onto ours."""
from .. import ops

__all__ = ["sums", "reduce_sum", "reduce_mean", "reduce_max", "reduce_min", "elementwise_add",
           "elementwise_mul", "elementwise_sub", "elementwise_div", "matmul", "reshape", "concat",
           "relu", "sigmoid", "tanh", "softmax"]


def sums(inputs):
    """Elementwise sum of a list of same-shape Tensors. Shapes: [(*s)] * k -> (*s)."""
    if not inputs:
        raise ValueError("sums: needs at least one input")
    total = inputs[0]
    for x in inputs[1:]:
        total = ops.add(total, x)
    return total


def reduce_sum(input, dim=None, keep_dim=False):
    """Sum over ``dim`` (None: all elements)."""
    return ops.sum(input, dim, keep_dim)


def reduce_mean(input, dim=None, keep_dim=False):
    """Mean over ``dim`` (None: all elements)."""
    return ops.mean(input, dim, keep_dim)


def reduce_max(input, dim=None, keep_dim=False):
    """Max over ``dim`` (None: all elements)."""
    return ops.max(input, dim, keep_dim)


def reduce_min(input, dim=None, keep_dim=False):
    """Min over ``dim`` (None: all elements)."""
    return ops.min(input, dim, keep_dim)


def elementwise_add(x, y):
    """x + y with broadcasting."""
    return ops.add(x, y)


def elementwise_sub(x, y):
    """x - y with broadcasting."""
    return ops.subtract(x, y)


def elementwise_mul(x, y):
    """x * y with broadcasting."""
    return ops.multiply(x, y)


def elementwise_div(x, y):
    """x / y with broadcasting."""
    return ops.divide(x, y)


def matmul(x, y, transpose_x=False, transpose_y=False):
    """Matrix product with optional transposes of the last two axes."""
    return ops.matmul(x, y, transpose_x, transpose_y)


def reshape(x, shape):
    """``x`` with a new shape (-1 infers one dimension)."""
    return ops.reshape(x, shape)


def concat(input, axis=0):
    """Concatenate a list of Tensors along ``axis``."""
    return ops.concat(input, axis)


def relu(x):
    return ops.relu(x)


def sigmoid(x):
    return ops.sigmoid(x)


def tanh(x):
    return ops.tanh(x)


def softmax(input, axis=-1):
    return ops.softmax(input, axis)
