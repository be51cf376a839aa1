"""Checkpoints: the whole training state in one atomically written file.

A checkpoint is ``framework.save`` of a dict with ``model`` (state dict),
``optimizer``, ``scheduler`` (when any), ``rng`` (framework generator state),
``loader`` (sampler position), ``trainer`` (epoch, step, best metric …),
``config`` (the resolved config as JSON text) and ``assets`` (the files the
task read besides the weights, by config key, with their sha256; see
:meth:`framework.engine.Task.save_assets`).

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

__all__ = ["CheckpointError", "OutputDirError", "save_checkpoint", "load_checkpoint", "restore_model",
           "export_weights"]


class CheckpointError(UserError, RuntimeError):
    """A checkpoint is missing, unreadable or belongs to another model."""


class OutputDirError(UserError, OSError):
    """A run's output directory cannot be created or written (it lies under a file, no permission, disk full …)."""


def save_checkpoint(path, model, optimizer=None, scheduler=None, rng=None, loader=None, trainer=None, config=None,
                    assets=None):
    """Write the training state to ``path`` (temp file + rename, so never half a file).

    ``assets``: ``{config key: {"value": file name(s) in the run directory, "sha256": digest(s)}}``.
    """
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
    if assets:
        state["assets"] = assets
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


def restore_model(model, state, path, config=None):
    """Load ``state['model']`` into ``model``; a mismatch is a CheckpointError naming the checkpoint.

    The message is one line: the first parameter at fault with the checkpoint's
    shape and the model's (or the missing / unexpected names), and, when
    ``config`` (the model's config section) is given, the config key that
    probably differs — one whose value is the model's size along the axis
    that disagrees.
    """
    problem = _first_mismatch(model.state_dict(), state["model"], config or {})
    if problem:
        raise CheckpointError(f"checkpoint {path} does not fit this model: {problem}")
    try:
        model.set_state_dict(state["model"])
    except (KeyError, ValueError) as err:
        message = err.args[0] if err.args else str(err)
        raise CheckpointError(f"checkpoint {path} does not fit this model: {message}") from None


def _first_mismatch(own, saved, config):
    """One sentence about the difference between the model's state dict ``own`` and the checkpoint's
    ``saved`` (None when they fit): missing or unexpected names first (another layout), else the first
    parameter whose shape differs, with the likely config key of the model section ``config``."""
    missing = [k for k in own if k not in saved]
    unexpected = [k for k in saved if k not in own]
    if missing or unexpected:
        parts = ([f"the checkpoint lacks {_names(missing)}"] if missing else []) + \
            ([f"it has {_names(unexpected)} that the model does not"] if unexpected else [])
        kind = f" (model.type is {config['type']!r} here)" if isinstance(config.get("type"), str) else ""
        return "; ".join(parts) + f"; it was probably trained with another model type or layout{kind}"
    for key, target in own.items():
        theirs, ours = tuple(numpy.shape(saved[key])), tuple(target.shape)
        if theirs != ours:
            return (f"parameter {key!r} has shape {theirs} in the checkpoint and {ours} in the model"
                    f"{_likely_key(theirs, ours, config)}")
    return None


def _names(keys):
    shown = ", ".join(repr(k) for k in keys[:3])
    return f"{shown} and {len(keys) - 3} more" if len(keys) > 3 else shown


def _likely_key(theirs, ours, config):
    """``"; model.vocab_size (6000 here) probably differs from the one it was trained with (5000)"``, or a
    plainer hint when no key of ``config`` holds the model's size along the differing axis."""
    if len(theirs) != len(ours):
        return ""
    for trained, here in zip(theirs, ours):
        if trained == here:
            continue
        keys = [k for k, v in config.items() if isinstance(v, int) and not isinstance(v, bool) and v == here]
        if keys:
            named = " or ".join(f"model.{k}" for k in keys)
            return f"; {named} ({here} here) probably differs from the value it was trained with ({trained})"
        return f"; a model setting that gives {here} here was {trained} in training"
    return ""


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
