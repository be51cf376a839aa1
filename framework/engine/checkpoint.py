"""Checkpoints: the whole training state in one atomically written file.

A checkpoint is ``framework.save`` of a dict with ``model`` (state dict),
``optimizer``, ``scheduler`` (when any), ``rng`` (framework generator state),
``loader`` (sampler position), ``trainer`` (epoch, step, best metric …) and
``config`` (the resolved config as JSON text).

A write killed midway leaves the previous checkpoint intact and only a
temporary ``.last.npz.<random>.tmp`` beside it; the Trainer removes such stale
temporaries when a run starts (:func:`framework.serialization.remove_stale_temporaries`,
which never touches one that a live process is writing).
"""
import json
import os

import numpy

from ..fetch import sha256_of
from ..serialization import save, load
from ..errors import UserError

__all__ = ["CheckpointError", "save_checkpoint", "load_checkpoint", "restore_model", "export_weights"]


class CheckpointError(UserError, RuntimeError):
    """A checkpoint is missing, unreadable or belongs to another model."""


def save_checkpoint(path, model, optimizer=None, scheduler=None, rng=None, loader=None, trainer=None, config=None):
    """Write the training state to ``path`` (temp file + rename, so never half a file)."""
    state = {"model": model.state_dict()}
    if optimizer is not None:
        state["optimizer"] = optimizer.state_dict()
    if scheduler is not None:
        state["scheduler"] = scheduler.state_dict()
    if rng is not None:
        state["rng"] = rng
    if loader is not None:
        state["loader"] = loader
    if trainer is not None:
        state["trainer"] = trainer
    if config is not None:
        state["config"] = json.dumps(config, sort_keys=True, default=str)
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    save(state, path)
    return path


def load_checkpoint(path):
    """Read a checkpoint written by :func:`save_checkpoint` (no code is ever executed)."""
    if not os.path.isfile(path):
        raise CheckpointError(f"checkpoint not found: {path}")
    try:
        state = load(path)
    except Exception as err:  # serialization names what is wrong with the file
        raise CheckpointError(f"cannot read checkpoint {path}: {err}") from None
    if not isinstance(state, dict) or "model" not in state:
        raise CheckpointError(f"{path} is not an oar checkpoint (no 'model' entry)")
    return state


def restore_model(model, state, path):
    """Load ``state['model']`` into ``model``; a mismatch names the checkpoint and the keys."""
    try:
        model.set_state_dict(state["model"])
    except (KeyError, ValueError) as err:
        message = err.args[0] if err.args else str(err)
        raise CheckpointError(f"checkpoint {path} does not fit this model: {message}") from None


def export_weights(checkpoint, path, keep_float32=()):
    """Write the model state of the checkpoint file ``checkpoint`` to ``path`` as shipped weights: a
    weights-only checkpoint ``{"model": state}`` with float arrays in float16 (except the names in
    ``keep_float32``, e.g. a decision threshold), loadable wherever a checkpoint is. Returns its sha256."""
    state = load_checkpoint(checkpoint)["model"]
    half = {k: v.astype(numpy.float16) if v.dtype.kind == "f" and k not in keep_float32 else v
            for k, v in state.items()}
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    save({"model": half}, path)
    return sha256_of(path)
