"""Reading weights files and loading them into a vision model (NumPy only).

A weights file is a flat ``name -> array`` mapping written by ``framework.save``
(``.npz`` or ``.safetensors``): what ``tools/convert_weights.py`` makes from a
PyTorch state dict, or ``framework.save(model.state_dict(), path)``. An oar
training checkpoint works too (its ``model`` entry is used). Names and shapes
are torchvision's; PyTorch's BatchNorm ``num_batches_tracked`` counters are
ignored.
"""
import os

import framework

from .common import TORCH_BN_COUNTER
from framework.errors import MissingFileError, UserError

__all__ = ["WeightsError", "read_weights", "load_pretrained"]

_SHOWN = 8  # problems listed per kind in an error message


class WeightsError(UserError, ValueError):
    """A weights file cannot be read or does not fit the model; the message names the file and keys."""


def read_weights(path):
    """The flat ``{name: ndarray}`` state of the weights file (or checkpoint) at ``path``."""
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise MissingFileError(f"weights file not found: {path}")
    try:
        state = framework.load(path)
    except Exception as err:  # serialization names what is wrong with the file
        raise WeightsError(f"cannot read weights file {path}: {err}") from None
    if isinstance(state, dict) and isinstance(state.get("model"), dict):
        state = state["model"]
    if not isinstance(state, dict) or not state:
        raise WeightsError(f"{path} holds no weights (expected a mapping of names to arrays)")
    not_arrays = [k for k, v in state.items() if not hasattr(v, "shape")]
    if not_arrays:
        raise WeightsError(f"{path}: entries {not_arrays[:_SHOWN]} are not arrays; expected a flat state dict")
    return state


def _listing(kind, keys, describe):
    more = f" … and {len(keys) - _SHOWN} more" if len(keys) > _SHOWN else ""
    return f"{len(keys)} {kind}: " + ", ".join(describe(k) for k in keys[:_SHOWN]) + more


def load_pretrained(model, weights, skip_head=False, source=None):
    """Load ``weights`` (a path, or a ``{name: array}`` dict) into ``model`` in place.

    Every key and shape is checked before anything changes: a missing key, an
    unexpected key or a shape mismatch raises one :class:`WeightsError` that
    lists them. With ``skip_head``, the classifier (``model.head_name``, e.g.
    ``fc.*``) is neither loaded nor required: the model keeps its fresh head
    (finetuning on new classes). ``source`` names a dict's origin in errors.

    Returns:
        ``{"loaded": [names], "skipped": [names]}`` (skipped: the file's head entries).
    """
    where = os.fspath(weights) if isinstance(weights, (str, os.PathLike)) else source or "the given state dict"
    state = read_weights(weights) if isinstance(weights, (str, os.PathLike)) else dict(weights)
    state = {k: v for k, v in state.items() if k.rsplit(".", 1)[-1] != TORCH_BN_COUNTER}
    own = model.state_dict()
    head = model.head_name + "."
    skipped = [k for k in state if k.startswith(head)] if skip_head else []
    state = {k: v for k, v in state.items() if k not in skipped}
    expected = [k for k in own if not (skip_head and k.startswith(head))]
    missing = [k for k in expected if k not in state]
    unexpected = [k for k in state if k not in own]
    mismatched = [k for k in expected if k in state and tuple(state[k].shape) != tuple(own[k].shape)]
    problems = []
    if missing:
        problems.append(_listing("missing", missing, lambda k: f"{k} {tuple(own[k].shape)}"))
    if unexpected:
        problems.append(_listing("unexpected", unexpected, lambda k: f"{k} {tuple(state[k].shape)}"))
    if mismatched:
        problems.append(_listing("with another shape", mismatched,
                                 lambda k: f"{k} file {tuple(state[k].shape)} vs model {tuple(own[k].shape)}"))
    if problems:
        raise WeightsError(f"{where} does not fit {type(model).__name__}: " + "; ".join(problems))
    model.set_state_dict(state, strict=not skip_head)
    return {"loaded": list(state), "skipped": skipped}
