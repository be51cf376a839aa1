"""Tensor methods route to the ops with their arguments; bad input raises one
OpError naming the op and the shapes."""
import numpy
import pytest

import framework as fw


@pytest.fixture
def x():
    return fw.to_tensor(numpy.arange(24, dtype=numpy.float64).reshape(2, 3, 4) % 7, requires_grad=True)


def test_sum_with_axis_and_keepdim(x):
    out = x.sum(axis=1, keepdim=True)
    assert out.shape == (2, 1, 4)
    numpy.testing.assert_allclose(out.numpy(), x.numpy().sum(axis=1, keepdims=True))
    out.sum().backward()
    numpy.testing.assert_allclose(x.grad.numpy(), numpy.ones((2, 3, 4)))


def test_reshape_takes_varargs_and_a_list(x):
    assert x.reshape(2, -1).shape == (2, 12)
    assert x.reshape([2, -1]).shape == (2, 12)
    assert x.reshape((4, 6)).shape == (4, 6)
    numpy.testing.assert_array_equal(x.reshape(2, -1).numpy(), x.numpy().reshape(2, 12))


def test_T_reverses_axes(x):
    assert x.T.shape == (4, 3, 2)
    numpy.testing.assert_array_equal(x.T.numpy(), x.numpy().transpose(2, 1, 0))
    m = fw.to_tensor(numpy.arange(6.0).reshape(2, 3))
    numpy.testing.assert_array_equal(m.T.numpy(), m.numpy().T)


def test_indexing_routes_to_getitem(x):
    numpy.testing.assert_array_equal(x[1, :, ::-1].numpy(), x.numpy()[1, :, ::-1])
    numpy.testing.assert_array_equal(x[..., [0, 0]].numpy(), x.numpy()[..., [0, 0]])
    x[..., [0, 0]].sum().backward()
    expected = numpy.zeros((2, 3, 4))
    expected[..., 0] = 2.0
    numpy.testing.assert_array_equal(x.grad.numpy(), expected)


def test_max_splits_the_gradient_among_ties():
    t = fw.to_tensor([[1.0, 5.0, 5.0], [5.0, 2.0, 0.0]], dtype="float64", requires_grad=True)
    out = t.max()
    assert out.shape == () and out.item() == 5.0
    out.backward()
    numpy.testing.assert_allclose(t.grad.numpy(), [[0, 1 / 3, 1 / 3], [1 / 3, 0, 0]])


def test_argmax_axis(x):
    idx = x.argmax(axis=0)
    assert idx.dtype == numpy.int64 and idx.shape == (3, 4)
    numpy.testing.assert_array_equal(idx.numpy(), x.numpy().argmax(axis=0))
    assert x.argmin().item() == int(x.numpy().argmin())


def test_other_methods_route(x):
    assert x.mean(axis=-1).shape == (2, 3)
    assert x.var(axis=(0, 2), keepdim=True).shape == (1, 3, 1)
    assert x.logsumexp(axis=2).shape == (2, 3)
    assert x.transpose(1, 0, 2).shape == (3, 2, 4)
    assert x.flatten(1).shape == (2, 12)
    assert x.unsqueeze(0).squeeze(0).shape == (2, 3, 4)
    assert x.expand(5, 2, 3, 4).shape == (5, 2, 3, 4)
    assert x.tile([1, 2, 1]).shape == (2, 6, 4)
    assert [p.shape for p in x.split([1, 3], axis=2)] == [(2, 3, 1), (2, 3, 3)]
    numpy.testing.assert_array_equal(x.flip(-1).numpy(), x.numpy()[..., ::-1])
    assert (x[0] @ x[1].T).shape == (3, 3)
    numpy.testing.assert_allclose(x.tanh().numpy(), numpy.tanh(x.numpy()))


def test_bad_reshape_names_the_op_and_shapes(x):
    with pytest.raises(fw.OpError, match=r"reshape: .*\(2, 3, 4\).*\(5, -1\)"):
        x.reshape(5, -1)


def test_bad_concat_names_the_op_and_shapes():
    a, b = fw.to_tensor(numpy.zeros((2, 3))), fw.to_tensor(numpy.zeros((3, 4)))
    with pytest.raises(fw.OpError, match=r"concat: .*\(2, 3\).*\(3, 4\)"):
        fw.concat([a, b], axis=1)


def test_bad_matmul_and_linear_name_the_op_and_shapes():
    a, b = fw.to_tensor(numpy.zeros((2, 3))), fw.to_tensor(numpy.zeros((4, 5)))
    with pytest.raises(fw.OpError, match=r"matmul: .*\(2, 3\).*\(4, 5\)"):
        fw.matmul(a, b)
    with pytest.raises(fw.OpError, match=r"linear: .*\(2, 3\).*\(4, 5\)"):
        fw.linear(a, b)


def test_bad_index_and_axis_name_the_op():
    t = fw.to_tensor(numpy.zeros((2, 3)))
    with pytest.raises(fw.OpError, match=r"gather: .*\[-3, 3\).*\(2, 3\)"):
        fw.gather(t, fw.to_tensor([0, 3]), axis=1)
    with pytest.raises(fw.OpError, match=r"sum: axis 2 is out of range"):
        t.sum(axis=2)
    with pytest.raises(fw.OpError, match=r"relu: .*int64 of shape \(3,\)"):
        fw.nn.functional.relu(fw.to_tensor(numpy.arange(3)))
