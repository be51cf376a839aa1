"""Compressed weights on disk: a weights-only checkpoint plus the recipe that rebuilds the model's layout.

``{"model": state, "slim": JSON text}``: the state dict of the compressed model
(pruned layers at their new sizes, int8 weights as ``<name>_int8`` + ``<name>_scale``
buffers) and the recipe (``{"int8": int8 recipe, "pruned": plan, …}``). Loading
builds nothing new: :func:`load_compressed` takes the model the original config
builds, gives it the recipe's int8 layout (:func:`framework.slim.int8.prepare`)
and the state's shapes (:func:`framework.slim.prune.resize_to`), then loads the
state with the usual checks. Files are ``.npz`` read with ``allow_pickle=False``.
"""
import json
import os

import numpy

from .. import backend
from ..engine.checkpoint import load_checkpoint, restore_model
from ..fetch import sha256_of
from ..serialization import save
from ..tensor import Tensor
from .errors import SlimError
from .int8 import prepare
from .prune import resize_to

__all__ = ["save_compressed", "load_compressed", "read_recipe"]


def save_compressed(path, model, recipe, half=False):
    """Write ``model``'s state and ``recipe`` to ``path``; float arrays in float16 with ``half`` (int8 weights
    and their scales are kept as they are). Returns the file's sha256."""
    state = {}
    for name, value in model.state_dict().items():
        array = numpy.asarray(backend.to_device(value.data if isinstance(value, Tensor) else value, "cpu"))
        if half and array.dtype.kind == "f" and not name.endswith("_scale"):
            array = array.astype(numpy.float16)
        state[name] = array
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    save({"model": state, "slim": json.dumps(recipe, sort_keys=True)}, path)
    return sha256_of(path)


def read_recipe(path):
    """``(state dict, recipe)`` of a compressed weights file; a file without a recipe is a SlimError."""
    state = load_checkpoint(path)
    if "slim" not in state:
        raise SlimError(f"{path} holds no compression recipe (not written by oar compress)")
    return state["model"], json.loads(str(state["slim"]))


def load_compressed(model, path, config=None):
    """Load the compressed weights file ``path`` into ``model`` (built from the original config), reshaping
    and converting it first; returns the recipe."""
    state, recipe = read_recipe(path)
    if recipe.get("int8"):
        prepare(model, recipe["int8"])
    resize_to(model, state)
    restore_model(model, {"model": state}, path, config)
    return recipe

