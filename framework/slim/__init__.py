"""Model compression, knowing no domain: filter pruning, post-training int8 quantisation, distillation and
FLOPs counting (the PaddleSlim part of the 2019 release).

- :mod:`~framework.slim.graph`: channel groups and multiply-adds of a traced program;
- :mod:`~framework.slim.flops`: ``count(model, example_inputs)`` -> multiply-adds and parameters;
- :mod:`~framework.slim.prune`: L1-norm ranking, masks and real surgery;
- :mod:`~framework.slim.sensitivity`, :mod:`~framework.slim.plan`: per-layer sensitivity and ratio plans
  meeting a FLOPs target;
- :mod:`~framework.slim.quant`, :mod:`~framework.slim.ops`, :mod:`~framework.slim.int8`: int8 arithmetic,
  calibration, the int8 ops and the conversion of a model;
- :mod:`~framework.slim.distill`: the distillation loss and task;
- :mod:`~framework.slim.finetune`: training a compressed model with the normal Trainer;
- :mod:`~framework.slim.checkpoint`: compressed weights files and how they load.

``oar compress`` (``zoo/compress.py``) drives these from ``configs/slim/*.yaml``.
"""
from .errors import SlimError
from .flops import count, count_parameters, profile
from .graph import ChannelGroup, channel_groups, costs
from .checkpoint import load_compressed, read_recipe, save_compressed
from .distill import DistillationTask, distillation_loss

__all__ = ["SlimError", "count", "count_parameters", "profile", "ChannelGroup", "channel_groups", "costs",
           "load_compressed", "read_recipe", "save_compressed", "DistillationTask", "distillation_loss"]
