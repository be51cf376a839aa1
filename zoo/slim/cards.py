"""The zoo's compressed models: loaders for their cards, and a compressed run folder loaded as a task.

A compressed card names ``base_config`` (the config of the model it was made
from) with its ``overrides``, and ``weights`` (a compressed weights file and its
sha256). :func:`load_card` builds the task from the base config and loads the
weights into it (:func:`framework.slim.load_compressed`: pruned layers resized,
int8 layers converted), so ``zoo.load`` gives the compressed model on the oar
static path or ONNX Runtime like any card. The four ``loader`` functions below
are the ones the cards name.
"""
import os

from framework.config import load_config
from framework.engine import runner
from framework.slim import load_compressed

from ..api import _card_overrides, _checked_weights, _resolve_repo_files, register_everything
from ..catalog import ROOT, card

__all__ = ["load_card", "load_compressed_task", "tsm_synth_pruned", "tsm_synth_int8", "senta_bilstm_int8",
           "senta_bow_distilled"]


def load_compressed_task(cfg, weights):
    """The task of ``cfg`` (the model's original config) with the compressed ``weights`` loaded, in eval mode."""
    register_everything()
    _resolve_repo_files(cfg.get("task") or {})
    task = runner.build_task(cfg)
    load_compressed(task.model, weights, cfg.get("model"))
    task.model.eval()
    return task


def load_card(name):
    """The eager task of the compressed card ``name`` (its weights checked against the card's sha256)."""
    entry = card(name)
    cfg = load_config(os.path.join(ROOT, entry["base_config"]), _card_overrides(entry))
    return load_compressed_task(cfg, _checked_weights(entry))


def tsm_synth_pruned():
    """The ``tsm_synth_pruned`` card's task."""
    return load_card("tsm_synth_pruned")


def tsm_synth_int8():
    """The ``tsm_synth_int8`` card's task."""
    return load_card("tsm_synth_int8")


def senta_bilstm_int8():
    """The ``senta_bilstm_int8`` card's task."""
    return load_card("senta_bilstm_int8")


def senta_bow_distilled():
    """The ``senta_bow_distilled`` card's task."""
    return load_card("senta_bow_distilled")
