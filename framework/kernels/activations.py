"""In-place activations shared by the NumPy versions of the recurrent kernels."""
import numpy

__all__ = ["sigmoid_inplace"]


def sigmoid_inplace(a):
    """a <- logistic sigmoid(a), in its tanh form (no overflow for large |a|). Any shape."""
    a *= 0.5
    numpy.tanh(a, out=a)
    a *= 0.5
    a += 0.5
