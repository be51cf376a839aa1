"""Layer base: registration by attribute, names, state dicts, modes, devices, containers."""
import collections

import numpy
import pytest

import framework
from framework import nn
from framework.nn import initializer as I
from framework.nn.layer import StateDictError


class Block(nn.Layer):
    """Two Linear layers, a buffer that is saved and one that is not."""

    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(3, 4)
        self.fc2 = nn.Linear(4, 2, bias_attr=False)
        self.register_buffer("steps", framework.to_tensor(numpy.zeros(1, "float32")))
        self.register_buffer("cache", framework.to_tensor(numpy.zeros(2, "float32")), persistable=False)

    def forward(self, x):
        return self.fc2(self.fc1(x))


class Net(nn.Layer):
    def __init__(self):
        super().__init__()
        self.scale = self.create_parameter([2], default_initializer=I.Constant(1.0))
        self.blocks = nn.LayerList([Block(), Block()])
        self.head = nn.Sequential(nn.Linear(2, 2), nn.Linear(2, 1))

    def forward(self, x):
        for block in self.blocks:
            x = block(x) if x.shape[-1] == 3 else x
        return self.head(x * self.scale)


# as in Paddle and PyTorch: each layer's own parameters and buffers, then its sublayers
NET_KEYS = ["scale",
            "blocks.0.steps", "blocks.0.fc1.weight", "blocks.0.fc1.bias", "blocks.0.fc2.weight",
            "blocks.1.steps", "blocks.1.fc1.weight", "blocks.1.fc1.bias", "blocks.1.fc2.weight",
            "head.0.weight", "head.0.bias", "head.1.weight", "head.1.bias"]


def x34():
    return framework.to_tensor(numpy.arange(12, dtype="float32").reshape(4, 3) / 10)


def test_names_are_attribute_paths():
    net = Net()
    assert list(net.state_dict()) == NET_KEYS
    assert [n for n, _ in net.named_parameters()] == [k for k in NET_KEYS if not k.endswith("steps")]
    assert [n for n, _ in net.named_buffers()] == ["blocks.0.steps", "blocks.0.cache",
                                                   "blocks.1.steps", "blocks.1.cache"]
    assert [n for n, _ in net.named_sublayers()] == ["blocks", "blocks.0", "blocks.0.fc1", "blocks.0.fc2",
                                                     "blocks.1", "blocks.1.fc1", "blocks.1.fc2",
                                                     "head", "head.0", "head.1"]
    assert [n for n, _ in net.named_children()] == ["blocks", "head"]
    assert len(net.parameters()) == 11 and len(net.buffers()) == 4
    assert net.parameters(include_sublayers=False) == [net.scale]


def test_nested_sequential_naming():
    model = nn.Sequential(nn.Linear(2, 3), nn.Sequential(nn.Linear(3, 3), nn.Linear(3, 1)))
    assert list(model.state_dict()) == ["0.weight", "0.bias", "1.0.weight", "1.0.bias", "1.1.weight", "1.1.bias"]


def test_shared_parameter_counts_once():
    model = nn.Sequential(nn.Linear(2, 2), nn.Linear(2, 2))
    model[1].weight = model[0].weight
    assert len(model.parameters()) == 3
    assert list(model.state_dict()) == ["0.weight", "0.bias", "1.weight", "1.bias"]


def test_reassigning_keeps_order_and_none_removes():
    layer = nn.Linear(2, 3)
    layer.weight = nn.Parameter(numpy.ones((2, 3), "float32"))
    assert [n for n, _ in layer.named_parameters()] == ["weight", "bias"]
    layer.bias = None
    assert [n for n, _ in layer.named_parameters()] == ["weight"] and layer.bias is None
    with pytest.raises(TypeError, match="bias"):
        layer.bias = framework.to_tensor([1.0, 2.0, 3.0])
    del layer.weight
    assert layer.parameters() == []
    with pytest.raises(AttributeError, match="weight"):
        layer.weight


def test_assigning_before_init_is_a_clear_error():
    class Broken(nn.Layer):
        def __init__(self):
            self.fc = nn.Linear(2, 2)

    with pytest.raises(AttributeError, match=r"super\(\).__init__\(\)"):
        Broken()


def test_create_parameter_and_param_attr():
    layer = nn.Layer()
    assert layer.create_parameter([3], attr=False) is None
    p = layer.create_parameter([2, 3], dtype="float64",
                               attr=nn.ParamAttr(name="emb", initializer=I.Constant(2.0),
                                                 learning_rate=0.1, trainable=False))
    assert isinstance(p, nn.Parameter) and p.name == "emb" and p.dtype == numpy.float64
    assert p.learning_rate == 0.1 and not p.trainable and not p.requires_grad
    numpy.testing.assert_array_equal(p.numpy(), numpy.full((2, 3), 2.0))
    p.trainable = True
    assert p.requires_grad and not p.stop_gradient
    bias = layer.create_parameter([4], is_bias=True)
    numpy.testing.assert_array_equal(bias.numpy(), numpy.zeros(4, "float32"))
    assert layer.create_parameter([4], attr=I.Constant(3.0)).numpy()[0] == 3.0
    with pytest.raises(TypeError, match="ParamAttr"):
        layer.create_parameter([4], attr=3)


def test_parameter_names_are_unique():
    a, b = nn.Linear(2, 2), nn.Linear(2, 2)
    names = [p.name for p in a.parameters() + b.parameters()]
    assert len(set(names)) == 4 and a.weight.name.endswith(".w_0") and a.bias.name.endswith(".b_0")


def test_state_dict_round_trip_from_tensors_and_arrays():
    framework.seed(1)
    source = Net()
    framework.seed(2)
    target = Net()
    x = x34()
    assert not numpy.allclose(source(x).numpy(), target(x).numpy())
    assert target.set_state_dict(source.state_dict()) == ([], [])
    numpy.testing.assert_array_equal(source(x).numpy(), target(x).numpy())
    framework.seed(3)
    again = Net()
    again.load_dict({k: v.numpy() for k, v in source.state_dict().items()})
    numpy.testing.assert_array_equal(source(x).numpy(), again(x).numpy())


def test_loaded_values_are_cast_and_copied():
    layer = nn.Linear(2, 2)
    weight = numpy.arange(4, dtype="float64").reshape(2, 2)
    parameter = layer.weight
    layer.set_state_dict({"weight": weight, "bias": [1, 2]})
    assert layer.weight is parameter and parameter.dtype == numpy.float32
    numpy.testing.assert_array_equal(layer.bias.numpy(), numpy.array([1, 2], "float32"))
    weight[0, 0] = 99.0
    assert layer.weight.numpy()[0, 0] == 0.0


def test_wrong_keys_and_shapes_are_one_error_naming_everything():
    layer = nn.Sequential(nn.Linear(3, 4), nn.Linear(4, 2))
    before = layer[0].weight.numpy().copy()
    state = {k: v.numpy() for k, v in layer.state_dict().items()}
    del state["1.bias"]
    state["0.weight"] = numpy.zeros((4, 3), "float32")
    state["2.weight"] = numpy.zeros((5,), "float32")
    with pytest.raises(StateDictError) as info:
        layer.set_state_dict(state)
    message = str(info.value)
    assert "'1.bias'" in message and "(2,)" in message
    assert "'2.weight'" in message and "(5,)" in message
    assert "'0.weight'" in message and "(4, 3)" in message and "(3, 4)" in message
    assert "3 problem(s)" in message
    numpy.testing.assert_array_equal(layer[0].weight.numpy(), before)  # nothing was loaded


def test_non_strict_reports_keys_but_still_rejects_shapes():
    layer = nn.Linear(3, 4)
    missing, unexpected = layer.set_state_dict({"weight": numpy.ones((3, 4)), "extra": numpy.ones(1)},
                                               strict=False)
    assert missing == ["bias"] and unexpected == ["extra"]
    assert layer.weight.numpy().sum() == 12
    with pytest.raises(StateDictError, match=r"'weight'.*\(4, 3\).*\(3, 4\)"):
        layer.set_state_dict({"weight": numpy.ones((4, 3))}, strict=False)


def test_persistable_buffers_only_are_saved():
    block = Block()
    assert "steps" in block.state_dict() and "cache" not in block.state_dict()
    assert [n for n, _ in block.named_buffers()] == ["steps", "cache"]
    with pytest.raises(TypeError, match="steps"):
        block.steps = numpy.zeros(1)
    block.steps = framework.to_tensor([5.0])
    assert block.state_dict()["steps"].numpy()[0] == 5.0


def test_train_eval_reach_every_sublayer():
    net = Net()
    assert all(layer.training for layer in net.sublayers(include_self=True))
    assert net.eval() is net
    assert not any(layer.training for layer in net.sublayers(include_self=True))
    net.train()
    assert all(layer.training for layer in net.sublayers(include_self=True))


def test_clear_gradients_and_apply():
    net = nn.Sequential(nn.Linear(3, 2), nn.Linear(2, 1))
    net(x34()).sum().backward()
    assert all(p.grad is not None for p in net.parameters())
    net.clear_gradients()
    assert all(p.grad is None for p in net.parameters())
    visited = []
    net.apply(lambda layer: visited.append(type(layer).__name__))
    assert visited == ["Linear", "Linear", "Sequential"]


def test_to_casts_and_moves_in_place():
    net = Net()
    parameter = net.scale
    assert net.to("cpu") is net and net.scale is parameter
    net.to(dtype="float64")
    assert all(t.dtype == numpy.float64 for t in net.parameters() + net.buffers())
    assert net(x34().astype("float64")).dtype == numpy.float64
    assert nn.Linear(1, 1).to(dtype="float64").weight.dtype == numpy.float64
    assert net.blocks[0].create_parameter([1]).dtype == numpy.float64


def test_repr_shows_the_tree():
    text = repr(nn.Sequential(nn.Linear(2, 3), nn.Sequential(nn.Linear(3, 1))))
    assert text.splitlines()[0] == "Sequential("
    assert "(0): Linear(in_features=2, out_features=3, bias=True)" in text
    assert "  (1): Sequential(\n    (0): Linear(in_features=3, out_features=1, bias=True)\n  )" in text


def test_sequential_construction_and_indexing():
    a, b, c = nn.Linear(2, 3), nn.Linear(3, 3), nn.Linear(3, 1)
    seq = nn.Sequential(a, b, c)
    assert len(seq) == 3 and list(seq) == [a, b, c]
    assert seq[0] is a and seq[-1] is c
    assert list(seq[1:]) == [b, c] and isinstance(seq[1:], nn.Sequential)
    with pytest.raises(IndexError, match="3 layers"):
        seq[3]
    named = nn.Sequential(collections.OrderedDict([("encoder", a), ("decoder", b)]))
    assert list(named.state_dict())[:2] == ["encoder.weight", "encoder.bias"] and named["decoder"] is b
    assert [n for n, _ in nn.Sequential(("x", a), ("y", b)).named_children()] == ["x", "y"]
    out = seq(x34()[:, :2])
    assert out.shape == (4, 1)


def test_layer_list():
    layers = nn.LayerList([nn.Linear(1, 1)])
    layers.append(nn.Linear(2, 2)).extend([nn.Linear(3, 3)])
    layers.insert(0, nn.Linear(4, 4))
    assert len(layers) == 4 and [layer.in_features for layer in layers] == [4, 1, 2, 3]
    assert [n for n, _ in layers.named_children()] == ["0", "1", "2", "3"]
    assert layers[-1].in_features == 3 and [l.in_features for l in layers[1:3]] == [1, 2]
    layers[1] = nn.Linear(5, 5)
    assert [l.in_features for l in layers] == [4, 5, 2, 3]
    del layers[0]
    assert [l.in_features for l in layers] == [5, 2, 3]
    assert list(layers.state_dict())[:2] == ["0.weight", "0.bias"]
    with pytest.raises(IndexError):
        layers[3]


def test_layer_dict():
    layers = nn.LayerDict({"a": nn.Linear(1, 1)})
    layers["b"] = nn.Linear(2, 2)
    layers.update([("c", nn.Linear(3, 3))])
    assert list(layers) == ["a", "b", "c"] and "b" in layers and len(layers) == 3
    assert list(layers.state_dict())[:2] == ["a.weight", "a.bias"]
    assert layers.pop("a").in_features == 1 and list(layers.keys()) == ["b", "c"]
    del layers["b"]
    assert [l.in_features for l in layers.values()] == [3]
