"""The per-op tables (ONNX converters, pruning rules, multiply-add counts, int8 sites) are keyed by op class,
refuse a second registration, and every op class of the framework is exported or says why not."""
import importlib
import pkgutil

import pytest

import framework
from framework.registry import OpTable, RegistryError
from framework.tensor import Function


def _framework_ops():
    """Every Function subclass defined in the framework (its modules imported first); private bases that are
    never applied themselves (``_ReducedLoss``) are left out."""
    for module in pkgutil.walk_packages(framework.__path__, "framework."):
        if module.name.startswith(("framework.onnx", "framework.kernels.cpu")):
            continue                                       # need the export extra / compile on import
        importlib.import_module(module.name)
    found, stack = set(), list(Function.__subclasses__())
    while stack:
        cls = stack.pop()
        stack.extend(cls.__subclasses__())
        if cls.__module__.split(".")[0] == "framework" and not (cls.__name__.startswith("_")
                                                                  and cls.__subclasses__()):
            found.add(cls)
    return found


def test_every_framework_op_has_an_onnx_converter_or_a_reason_in_not_exported():
    pytest.importorskip("onnx")
    from framework.onnx import CONVERTERS
    from framework.onnx.unsupported import NOT_EXPORTED
    ops = _framework_ops()
    neither = sorted(f"{c.__module__}.{c.__name__}" for c in ops if c not in CONVERTERS and c not in NOT_EXPORTED)
    both = sorted(c.__name__ for c in set(CONVERTERS) & set(NOT_EXPORTED))
    assert not neither, f"op classes with no ONNX converter and no NOT_EXPORTED reason: {neither}"
    assert not both, f"op classes both converted and listed as not exported: {both}"
    assert all(isinstance(reason, str) and reason for reason in NOT_EXPORTED.values())
    assert len(ops) > 60 and ops >= set(CONVERTERS) | set(NOT_EXPORTED)


def test_a_not_exported_op_names_its_reason_when_export_meets_it(tmp_path):
    pytest.importorskip("onnx")
    from framework import jit, nn, onnx
    from framework.ops.math import ToDevice

    class Move(nn.Layer):
        def forward(self, x):
            return ToDevice.apply(x, device="cpu") * 2.0

    import numpy
    program = jit.trace(Move(), (numpy.ones((2, 3), numpy.float32),))
    with pytest.raises(onnx.UnsupportedOpError, match=r"no converter for op framework.ops.math.ToDevice at the top "
                                                      r"level \(a copy between devices"):
        onnx.export(program, tmp_path / "m.onnx")


def test_a_second_registration_of_an_op_class_is_refused():
    pytest.importorskip("onnx")
    from framework.onnx.graph import converts
    from framework.ops.activation import ReLU
    with pytest.raises(RegistryError, match=r"ONNX converters: op framework.ops.activation.ReLU is already "
                                            r"registered \(as framework.onnx.converters.unary\)"):
        converts(ReLU)(lambda g, node, inputs: None)
    from framework.slim.graph import CHANNEL_RULES, MAC_COUNTS
    from framework.slim.int8 import SITE_OPS
    from framework.ops.conv import ConvNd
    for table in (CHANNEL_RULES, MAC_COUNTS, SITE_OPS):
        assert isinstance(table, OpTable) and ConvNd in table
        with pytest.raises(RegistryError, match="already registered"):
            table[ConvNd] = None
        with pytest.raises(TypeError):
            del table[ConvNd]


def test_override_swaps_an_entry_for_a_block_only():
    table = OpTable("t", {int: "one"})
    with table.override(int, "two"):
        assert table[int] == "two"
    assert table[int] == "one"
    with pytest.raises(RegistryError, match="no entry to override"):
        with table.override(str, "x"):
            pass


def test_every_recurrent_op_is_an_int8_site():
    """int8 conversion finds recurrent weights through RECURRENT_SITE_OPS: every op of framework.ops.rnn is in
    one of the two site tables."""
    from framework.ops import rnn
    from framework.slim.int8 import RECURRENT_SITE_OPS, SITE_OPS
    ops = {v for v in vars(rnn).values()
           if isinstance(v, type) and issubclass(v, Function) and v.__module__ == rnn.__name__}
    assert ops and ops <= set(SITE_OPS) | set(RECURRENT_SITE_OPS)
