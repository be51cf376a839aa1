"""Data parallelism on 2 real processes started by mpiexec on this machine's CPU.

Skipped when mpi4py or mpiexec is missing (``pip install 'oar[dist]'`` brings both).
"""
import importlib.util
import json
import os
import re
import subprocess
import sys
import time

import numpy
import pytest

import framework
from framework.distributed import find_mpiexec, mpiexec_command

pytestmark = pytest.mark.skipif(importlib.util.find_spec("mpi4py") is None or find_mpiexec() is None,
                                reason="needs mpi4py and mpiexec (pip install 'oar[dist]')")

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SCRIPTS = os.path.join(os.path.dirname(__file__), "distributed_scripts")
TINY = os.path.join(ROOT, "configs", "_test", "tiny.yaml")
ENV = {**os.environ, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}


def _run(command, nproc=2, timeout=120):
    """Run ``command`` (a list) as ``nproc`` MPI processes (or plainly when nproc is None)."""
    full = command if nproc is None else mpiexec_command(nproc, command)
    return subprocess.run(full, capture_output=True, text=True, cwd=ROOT, env=ENV, timeout=timeout)


def _ok(result):
    assert result.returncode == 0, f"exit {result.returncode}\n{result.stdout}\n{result.stderr}"
    return result


def _train(*args, nproc=2):
    """tools/train.py with ``args`` on ``nproc`` processes; the summary JSON it printed."""
    command = [sys.executable, os.path.join(ROOT, "tools", "train.py"), "-c", TINY, "--quiet", *args]
    result = _ok(_run(command, nproc=nproc))
    return [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]


def test_collectives_and_gradient_rules(tmp_path):
    _ok(_run([sys.executable, os.path.join(SCRIPTS, "collectives.py"), str(tmp_path)]))
    ranks = [json.loads((tmp_path / f"rank{r}.json").read_text()) for r in range(2)]
    for rank, seen in enumerate(ranks):
        assert seen["world_size"] == 2 and seen["backend"] == "mpi"
        c = seen["collectives"]
        # rank r holds [0, 1, 2, 3] + r + 1
        assert c["sum"] == [3.0, 5.0, 7.0, 9.0] and c["max"] == [2.0, 3.0, 4.0, 5.0]
        assert c["min"] == [1.0, 2.0, 3.0, 4.0] and c["prod"] == [2.0, 6.0, 12.0, 20.0]
        assert c["avg"] == [1.5, 2.5, 3.5, 4.5] and c["sum_int64"] == [3, 20]
        assert c["broadcast"] == [1.0, 1.0, 1.0] and c["all_gather"] == [[0, 0], [1, 10]]
        assert "rank 0: (1,) float64, rank 1: (2,) float64" in c["all_gather_mismatch"]
        assert c["objects"] == [{"rank": 0}, {"rank": 1}] and c["broadcast_object"] == "from 1"
        assert seen["metrics"] == {"correct": 5, "total": 6, "acc": 5 / 6}
    grads = [seen["gradients"] for seen in ranks]
    local = "no_sync_body_bias"
    assert {k: v for k, v in grads[0].items() if k != local} == {k: v for k, v in grads[1].items() if k != local}
    # (the same weights, rank 0's, and the same averaged gradients on every rank)
    g = grads[0]
    head = numpy.array(g["weights"]["head.weight"])[:, 0]
    body = numpy.array(g["weights"]["body.weight"])
    # rank 0: loss = sum(body(1)) over 2 rows; rank 1: loss = sum(head(body(2))) over 2 rows; then averaged
    numpy.testing.assert_allclose(g["body.bias"], 1 + head, rtol=1e-6)
    numpy.testing.assert_allclose(g["body.weight"], numpy.tile(1 + 2 * head, (3, 1)), rtol=1e-6)
    numpy.testing.assert_allclose(numpy.array(g["head.weight"])[:, 0], 2 * body.sum(axis=0), rtol=1e-5, atol=1e-6)
    assert g["head.bias"] == [1.0]  # used by rank 1 only: averaged with rank 0's zeros
    assert g["spare.weight"] is None and g["spare.bias"] is None  # used by no rank
    assert grads[0]["no_sync_body_bias"] == [2.0, 2.0]  # local while no_sync
    numpy.testing.assert_allclose(grads[1]["no_sync_body_bias"], 2 * head, rtol=1e-6)
    numpy.testing.assert_allclose(g["accumulated_body_bias"], (4 + 4 * head) / 2, rtol=1e-6)


def test_two_processes_with_half_batches_match_one_process(tmp_path):
    script = [sys.executable, os.path.join(SCRIPTS, "equivalence.py"), str(tmp_path)]
    _ok(_run(script, nproc=None))
    _ok(_run(script))
    for model in ("mlp", "convbn"):  # convbn: SyncBatchNorm on 2 ranks vs BatchNorm on 1
        one = framework.load(str(tmp_path / f"{model}_rank0_of1.npz"))
        ranks = [framework.load(str(tmp_path / f"{model}_rank{r}_of2.npz")) for r in range(2)]
        assert sorted(one) == sorted(ranks[0])
        for key in one:
            numpy.testing.assert_array_equal(ranks[0][key], ranks[1][key], err_msg=f"{model} {key}")
            numpy.testing.assert_allclose(ranks[0][key], one[key], rtol=1e-5, atol=1e-6, err_msg=f"{model} {key}")


def test_tools_train_on_two_processes_matches_one(tmp_path):
    one = _train("--output_dir", str(tmp_path / "one"), "-o", "train.epochs=2", nproc=None)
    two = _train("--output_dir", str(tmp_path / "two"), "-o", "train.epochs=2")
    assert len(two) == 1 and two[0]["step"] == one[0]["step"] == 32  # global batch 32 = 2 x 16
    assert two[0]["best"] == pytest.approx(one[0]["best"], abs=1e-9)
    records = [json.loads(line) for line in (tmp_path / "two" / "metrics.jsonl").read_text().splitlines()]
    assert len(records) == 2  # written once, by rank 0
    weights = [framework.load(str(tmp_path / run / "last.npz"))["model"] for run in ("one", "two")]
    for key in weights[0]:
        numpy.testing.assert_allclose(weights[1][key], weights[0][key], rtol=1e-5, atol=1e-6, err_msg=key)


def test_distributed_resume_is_exact_through_oar_train_nproc(tmp_path):
    base = ["-c", TINY, "--quiet", "-o", "train.epochs=2", "model.dropout=0.3"]
    whole = _train("--output_dir", str(tmp_path / "whole"), "-o", "train.epochs=2", "model.dropout=0.3")
    _train("--output_dir", str(tmp_path / "split"), "-o", "train.epochs=2", "model.dropout=0.3",
           "train.max_steps=21")
    result = subprocess.run([sys.executable, "-m", "zoo.cli", "train", "--nproc", "2", *base, "--output_dir",
                             str(tmp_path / "split"), "--resume"], capture_output=True, text=True, cwd=ROOT, env=ENV,
                            timeout=120)
    _ok(result)
    assert json.loads(result.stdout.strip().splitlines()[-1])["best"] == whole[0]["best"]
    weights = [framework.load(str(tmp_path / run / "last.npz"))["model"] for run in ("whole", "split")]
    for key in weights[0]:
        numpy.testing.assert_array_equal(weights[1][key], weights[0][key], err_msg=key)


@pytest.mark.parametrize("mode, expected", [
    ("raise", r"\[rank 1/2\] RuntimeError: rank 1 fails on purpose at step 3"),
    ("exit", ""),
    ("abort", "rank 1 aborts alone"),
    ("hang", r"rank 0 of 2: all_reduce of 12 float32 has waited \d+ s \(timeout 2 s\)"),
], ids=["raise", "exit", "abort", "hang"])
def test_a_failing_rank_ends_the_job(mode, expected):
    start = time.monotonic()
    result = _run([sys.executable, os.path.join(SCRIPTS, "failure.py"), mode, "2"], timeout=60)
    assert result.returncode != 0 and "finished" not in result.stdout
    assert time.monotonic() - start < 30
    assert re.search(expected, result.stderr), result.stderr


def test_config_errors_end_every_rank(tmp_path):
    result = _run([sys.executable, os.path.join(ROOT, "tools", "train.py"), "-c", TINY, "--output_dir",
                   str(tmp_path), "-o", "train.batch_size=33"])
    assert result.returncode == 1   # a user mistake: one line per rank, the job ends with status 1
    assert "error: [rank 1/2] " + TINY + ", section 'train': batch_size 33 is the global batch; it must divide evenly " \
           "over the 2 processes" in result.stderr
