"""The 2019 DyGraph announcement example runs with only its import changed."""
import numpy as np

import framework as fluid


def test_dygraph_announcement_example():
    x = np.ones([2, 2], np.float32)
    with fluid.dygraph.guard():
        inputs = []
        for _ in range(10):
            inputs.append(fluid.dygraph.base.to_variable(x))
        ret = fluid.layers.sums(inputs)
        loss = fluid.layers.reduce_sum(ret)
        loss.backward()
        assert float(loss.numpy()) == 40.0
        np.testing.assert_array_equal(ret.numpy(), np.full((2, 2), 10.0, np.float32))
        np.testing.assert_array_equal(loss.gradient(), np.ones((), np.float32))
        for variable in inputs:
            np.testing.assert_array_equal(variable.gradient(), np.ones((2, 2), np.float32))


def test_guard_restores_device_and_grad_mode():
    with fluid.no_grad():
        with fluid.dygraph.guard():
            assert fluid.is_grad_enabled()
        assert not fluid.is_grad_enabled()
    assert fluid.get_device() == "cpu"
