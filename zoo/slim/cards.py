"""The zoo's compressed models: a compressed card loaded as a task, and a compressed run folder loaded as one.

A compressed card names ``loader: compressed`` (one of the zoo's fixed loaders,
:data:`zoo.api.LOADERS`), ``base_config`` (the config of the model it was made
from) with its ``overrides``, and ``weights`` (a compressed weights file and its
sha256). That loader builds the task from the base config and loads the weights
into it (:func:`framework.slim.load_compressed`: pruned layers resized, int8
layers converted), so ``zoo.load`` gives the compressed model on the oar static
path or ONNX Runtime like any card.
"""
from ..api import LOADERS, load_compressed_task
from ..catalog import card

__all__ = ["load_card", "load_compressed_task"]


def load_card(name):
    """The eager task of the compressed card ``name`` (its weights checked against the card's sha256)."""
    return LOADERS["compressed"](card(name))
