"""Multiply-adds and parameters of any model, counted on its traced program.

``count(model, example_inputs)`` traces the model once (:func:`framework.jit.trace`)
and adds up the multiply-adds of every convolution, linear map, matmul and
GRU/LSTM recurrence at the traced shapes (:func:`framework.slim.graph.node_macs`;
elementwise work, pooling and normalisation are not counted, as in
PaddleSlim's and the papers' figures, where ResNet-50 at 224 x 224 is 4.1 G).
Parameters are the model's parameters plus its int8 weights (a quantised
layer keeps its weights as buffers).
"""
from .. import jit
from .graph import costs

__all__ = ["count", "profile", "count_parameters"]


def count_parameters(model):
    """Number of weights of ``model``: its parameters' elements plus those of its int8 weight buffers."""
    quantised = sum(b.size for name, b in model.named_buffers() if name.endswith("_int8"))
    return int(sum(p.size for p in model.parameters()) + quantised)


def profile(program, model=None):
    """``{"macs": int, "params": int or None, "layers": [{"layer", "op", "macs"}]}`` of a traced ``program``
    (``params`` from ``model`` when given; the multiply-adds are for the traced batch)."""
    layers = [{"layer": c.scope, "op": c.op, "macs": c.macs} for c in costs(program)]
    return {"macs": sum(row["macs"] for row in layers),
            "params": count_parameters(model) if model is not None else None, "layers": layers}


def count(model, example_inputs, dynamic_axes=None):
    """:func:`profile` of ``model`` traced (in eval mode) on ``example_inputs``: a tuple of arrays, a batch
    of one for per-example figures; ``dynamic_axes`` as :func:`framework.jit.trace`."""
    return profile(jit.trace(model, example_inputs, dynamic_axes=dynamic_axes, passes=jit.EXACT_PASSES), model)
