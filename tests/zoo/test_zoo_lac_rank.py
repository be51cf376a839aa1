"""The ``lac_rank`` card: LAC(mode="rank") on oar through the traced program (the default), eagerly and on ONNX
Runtime (its exported program holds LAC, Viterbi and the rank network), the installed ``oar run lac_rank`` and
``oar serve lac_rank`` in subprocesses, against the engine's output. Skips when the official LAC
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

from .serving.conftest import ServerProcess, httpx

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


@pytest.mark.parametrize("options", [{}, {"static": False}, {"runtime": "onnxruntime"}], ids=str)
def test_zoo_lac_rank_matches_the_engine(golden, options):
    if options.get("runtime"):
        pytest.importorskip("onnxruntime")
    task = _load(**options)
    assert isinstance(task.model, StaticLayer) == options.get("static", True)
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


def test_oar_serve_lac_rank(golden):
    _load()
    rows = [r for r in golden if r["text"]][:4]
    served = ServerProcess("lac_rank")
    try:
        answer = httpx.post(served.url + "/v1/models/lac_rank:predict", json={"instances": [r["text"] for r in rows]},
                            timeout=120).json()
    finally:
        code, _, err = served.stop()
    assert code == 0, err
    assert [(p["words"], p["tags"], p["rank"]) for p in answer["predictions"]] == [
        (r["words"], r["tags"], r["rank"]) for r in rows]
