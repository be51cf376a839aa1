"""The ``lac_rank`` card: LAC(mode="rank") on oar through the traced program (the default) and eagerly, and the
installed ``oar run lac_rank`` in a subprocess, against the engine's output. Skips when the official LAC
models can be neither fetched nor found in the cache."""
import json
import os
import shutil
import subprocess
import sys

import pytest

import zoo
from framework.fetch import FetchError
from framework.jit import StaticLayer

OAR = shutil.which("oar", path=os.path.dirname(sys.executable)) or shutil.which("oar")
GOLDEN = os.path.join(os.path.dirname(__file__), os.pardir, "nlp", "lac", "data", "lac_official_rank_golden.jsonl")


@pytest.fixture(scope="module")
def golden():
    with open(GOLDEN, encoding="utf-8") as f:
        rows = [json.loads(line) for line in f]
    return [r for r in rows if len(r["text"]) < 1000]


def _load(**options):
    try:
        return zoo.load("lac_rank", **options)
    except FetchError as err:
        pytest.skip(f"the official LAC models cannot be fetched here and are not cached ({str(err).split('. ')[0]})")


@pytest.mark.parametrize("static", [True, False])
def test_zoo_lac_rank_matches_the_engine(golden, static):
    task = _load(static=static)
    assert isinstance(task.model, StaticLayer) == static
    results = task.predict([r["text"] for r in golden])
    assert [(r["words"], r["tags"], r["rank"]) for r in results] == [(r["words"], r["tags"], r["rank"])
                                                                     for r in golden]


def test_oar_run_lac_rank_json(golden):
    _load()
    rows = [r for r in golden if r["text"].strip()][:3]
    result = subprocess.run([OAR, "run", "lac_rank", "--json", "--input_file", "-"], capture_output=True,
                            text=True, input="".join(r["text"] + "\n" for r in rows), timeout=300)
    assert result.returncode == 0, result.stderr
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    assert [(line["words"], line["tags"], line["rank"]) for line in lines] == [(r["words"], r["tags"], r["rank"])
                                                                               for r in rows]
