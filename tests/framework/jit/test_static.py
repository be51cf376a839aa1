"""framework.jit.to_static: eval calls replay traced programs (one per signature), training stays eager, a layer
that cannot be traced falls back to eager with the reason kept."""
import numpy

import framework
from framework import Tensor, jit, nn, no_grad


class Net(nn.Layer):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 3)

    def forward(self, x):
        return framework.tanh(self.fc(x))


class DecoratedNet(Net):
    @jit.to_static
    def forward(self, x):
        return framework.tanh(self.fc(x))


class Untraceable(Net):
    def forward(self, x):
        return self.fc(x) * Tensor((x.data[:, :3] > 0).astype(numpy.float32))


def _x(n, width=4):
    return Tensor(numpy.random.default_rng(n).standard_normal((n, width)).astype(numpy.float32))


def test_eval_calls_replay_one_program_per_signature_and_training_stays_eager():
    net = Net()
    static = jit.to_static(net)
    static.eval()
    with no_grad():
        expected = [net(_x(n)).data for n in (1, 3, 5)]
    outputs = [static(_x(n)) for n in (1, 3, 5)]
    assert len(static.programs) == 1 and all(isinstance(o, Tensor) for o in outputs)
    for out, ref in zip(outputs, expected):
        numpy.testing.assert_array_equal(out.data, ref)
    static.train()
    loss = static(_x(2)).sum()
    loss.backward()
    assert net.fc.weight.grad is not None
    static.set_state_dict(net.state_dict())
    assert not static.programs                       # new weights: programs are traced again


def test_the_decorator_traces_each_instance_and_keeps_its_parameters():
    net = DecoratedNet()
    net.eval()
    with no_grad():
        expected = framework.tanh(net.fc(_x(3))).data
    numpy.testing.assert_array_equal(net(_x(3)).data, expected)
    assert len(net.forward.programs) == 1 and "fc.weight" in net.forward.programs.popitem()[1].value_names.values()


def test_an_untraceable_layer_falls_back_to_eager_with_the_reason():
    net = Untraceable()
    static = jit.to_static(net)
    static.eval()
    with no_grad():
        expected = net(_x(4)).data
    numpy.testing.assert_array_equal(static(_x(4)).data, expected)
    assert not static.programs and "computed outside the ops" in next(iter(static.fallbacks.values()))
