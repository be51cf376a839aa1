"""backward() runs each op only after every op that consumes its outputs, whatever the operand order."""
import numpy

import framework


def test_residual_chain_with_the_shortcut_as_first_operand():
    # y = h + h * h with h non-leaf: h's creator must wait for the multiply's gradient too
    x = framework.to_tensor(numpy.array([0.5, -1.0, 2.0]), requires_grad=True)
    h1 = x * 2.0
    h2 = h1 + h1 * h1
    y = h2 + h2 * h2
    y.sum().backward()
    xv = x.numpy()
    a = 2 * xv
    b = a + a * a
    expected = (1 + 2 * b) * (1 + 2 * a) * 2
    numpy.testing.assert_allclose(x.grad.numpy(), expected, rtol=1e-12)


def test_diamond_with_both_operand_orders():
    x = framework.to_tensor(numpy.array([1.5, 3.0]), requires_grad=True)
    h = x.exp()
    y = (h + h * 3.0) + (h * 2.0 + h)  # h first in one sum, second in the other
    y.sum().backward()
    numpy.testing.assert_allclose(x.grad.numpy(), 7.0 * numpy.exp(x.numpy()), rtol=1e-12)
