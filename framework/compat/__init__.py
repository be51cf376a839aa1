"""Seed-era (PaddlePaddle 1.x / 2019 DyGraph) spellings on top of the framework.

``import framework as fluid`` gives ``fluid.dygraph.guard()``,
``fluid.dygraph.base.to_variable``, ``fluid.dygraph.to_variable`` and
``fluid.layers.sums / reduce_sum / reduce_mean / matmul / fc-free ops``, so the
DyGraph examples of that time run with only their import changed.
"""
from . import dygraph, layers

__all__ = ["dygraph", "layers"]
