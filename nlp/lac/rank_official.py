"""The official rank model (``LAC/rank_model/`` of ``LAC==2.1.2``): its parameters, fetched and read.

The folder holds the 14 parameters of the rank network in PaddlePaddle's
persisted format (``model/``, read by :mod:`framework.paddle_format`) and a
copy of LAC's tables (``conf/``, the same as ``lac_model``'s, which the
rank model reads through LAC). Its ``word_emb`` is the rank network's own
embedding, not LAC's.
"""
import os

import numpy

from framework import fetch as fw_fetch
from framework.paddle_format import load_paddle_params
from nlp.data.sources import LAC

from .rank_model import RANK_NAMES, RankNet

__all__ = ["RANK_MODEL_DIR", "rank_model_dir", "read_rank_model"]

RANK_MODEL_DIR = "LAC/rank_model/"                  # in LAC: the official word-importance model folder


def rank_model_dir():
    """The ``rank_model`` folder, fetched from the pinned ``LAC`` distribution into the cache on first use."""
    return os.path.join(fw_fetch.fetch(LAC, [RANK_MODEL_DIR]), RANK_MODEL_DIR.rstrip("/"))


def read_rank_model(model_dir=None):
    """The :class:`~nlp.lac.rank_model.RankNet` (float32, eval mode) of the official ``rank_model`` folder
    (default: fetched). A missing parameter file is a PaddleFormatError naming it."""
    model_dir = model_dir or rank_model_dir()
    params = load_paddle_params(os.path.join(model_dir, "model"), names=list(RANK_NAMES))
    model = RankNet.from_state_dict({ours: numpy.asarray(params[theirs], dtype=numpy.float32)
                                     for theirs, ours in RANK_NAMES.items()})
    model.eval()
    return model
