"""A card trained by ``oar reproduce`` on several processes (``reproduce.nproc``): the card field, and
:func:`zoo.reproduce.train_checkpoint` running a real two-process MPI training of the tiny config.

The training is skipped when mpi4py or mpiexec is missing (``pip install 'oar[dist]'`` brings both).
"""
import importlib.util
import json
import os

import pytest

from framework.config import load_config
from framework.distributed import find_mpiexec
from zoo.card import CardError, Recipe
from zoo.catalog import ROOT, card
from zoo.reproduce import train_checkpoint
from zoo.reproduce.options import ReproduceOptions


def test_a_recipe_carries_its_process_count_and_writes_it_only_when_above_one():
    recipe = Recipe.from_mapping({"procedure": "detection", "nproc": 2}, "card x")
    assert recipe.nproc == 2 and recipe.to_mapping() == {"procedure": "detection", "nproc": 2}
    assert Recipe.from_mapping({"procedure": "video"}, "card x").to_mapping() == {"procedure": "video"}
    for bad in (0, -1, True, "2", 1.5):
        with pytest.raises(CardError, match="card x"):
            Recipe.from_mapping({"procedure": "detection", "nproc": bad}, "card x")
    assert card("ssd_mobilenet_v1_shapes").reproduce.nproc == 2


@pytest.mark.skipif(importlib.util.find_spec("mpi4py") is None or find_mpiexec() is None,
                    reason="needs mpi4py and mpiexec (pip install 'oar[dist]')")
def test_train_checkpoint_on_two_processes_trains_like_oar_train_nproc(tmp_path, monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    cfg = load_config(os.path.join(ROOT, "configs", "_test", "tiny.yaml"), ["train.epochs=2"])
    options = ReproduceOptions("toy", output_root=str(tmp_path), quiet=True)
    best, summary, minutes = train_checkpoint(cfg, "toy", options, nproc=2)
    assert best == str(tmp_path / "toy" / "best.npz") and os.path.isfile(best)
    assert summary is None and minutes > 0
    assert load_config(str(tmp_path / "toy.yaml"))["train"]["epochs"] == 2      # the config it launched
    with open(tmp_path / "toy" / "metrics.jsonl", encoding="utf-8") as f:
        records = [json.loads(line) for line in f]
    assert records[-1]["epoch"] == 2 and "acc" in records[-1]
