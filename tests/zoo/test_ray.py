"""Batch inference on Ray Data: one real local Ray cluster (``ray.init(num_cpus=2)`` in a subprocess) for the
module; ``oar run --engine ray`` through the installed console script joins it with ``--address``.

Checks: the shards' rows, put back in order by position, are ``task.predict`` on the same lines (blank lines
``{}``), also for an input read over a loopback HTTP server; ``zoo.ray.Predictor`` in ``map_batches`` with an
actor killed mid-run (SIGKILL from inside, once) loses no line and writes none twice.
"""
import functools
import http.server
import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import threading

import pytest

pytest.importorskip("ray.data")

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
OAR = shutil.which("oar", path=os.path.dirname(sys.executable)) or shutil.which("oar")
MODEL = "lac_pku"


def corpus(n):
    """``n`` lines of plain text from the shipped tagged example, every 13th one blank."""
    with open(os.path.join(ROOT, "examples", "lac_tagged.txt"), encoding="utf-8") as f:
        texts = ["".join(token.rsplit("/", 1)[0] for token in line.split()) for line in f if line.strip()]
    return ["" if i % 13 == 5 else texts[i % len(texts)] + ("" if i < len(texts) else str(i)) for i in range(n)]


@pytest.fixture(scope="module")
def cluster():
    """The environment of a local Ray cluster with 2 CPUs, held by a subprocess for the module: its own
    ``RAY_TMPDIR``, so ``--address auto`` (which also finds the cluster's token) joins this cluster only."""
    folder = tempfile.mkdtemp(prefix="oar-ray-", dir="/tmp")          # short: Ray's socket paths live here
    env = {**os.environ, "RAY_TMPDIR": folder, "RAY_USAGE_STATS_ENABLED": "0"}
    script = ("import ray, sys; ray.init(num_cpus=2, include_dashboard=False, logging_level='ERROR'); "
              "print(ray.get_runtime_context().gcs_address, flush=True); sys.stdin.read()")
    holder = subprocess.Popen([sys.executable, "-c", script], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              text=True, env=env)
    if not holder.stdout.readline().strip():
        holder.kill()
        pytest.fail("the local Ray cluster did not start")
    yield env
    holder.stdin.close()
    holder.wait(timeout=60)
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="module")
def expected():
    """``task.predict`` of the corpus lines in this process (the model's own whitespace rule, as ``--json``)."""
    import zoo
    lines = corpus(300)
    task = zoo.load(MODEL)
    return lines, [task.predict([line])[0] if line.strip() else {} for line in lines]


def rows_of(output):
    from zoo.ray import read_results
    return read_results(output)


def check_rows(rows, lines, results, path_suffix):
    assert [row["position"] for row in rows] == list(range(len(lines)))       # every line once, in order
    assert all(row["path"].endswith(path_suffix) for row in rows)
    for row, line, result in zip(rows, lines, results):
        assert row["input"] == line
        assert {k: v for k, v in row.items() if k not in ("path", "position", "input")} == result


@pytest.fixture()
def served(tmp_path):
    """A loopback HTTP server (``http.server`` in a thread) serving ``tmp_path/www``; yields (folder, base URL)."""
    folder = tmp_path / "www"
    folder.mkdir()
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(folder))
    handler.log_message = lambda *args: None
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield folder, f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_oar_run_engine_ray_matches_predict_in_order(cluster, expected, tmp_path, served):
    lines, results = expected
    folder, base = served
    (folder / "corpus.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    out = tmp_path / "tagged"
    proc = subprocess.run([OAR, "run", MODEL, "--input_file", f"{base}/corpus.txt", "--output", str(out),
                           "--engine", "ray", "--address", "auto", "--replicas", "2", "--batch_size", "16"],
                          capture_output=True, text=True, timeout=300, env=cluster)
    assert proc.returncode == 0, proc.stderr[-3000:]
    summary = json.loads(proc.stdout.strip().splitlines()[-1])
    assert summary["replicas"] == 2 and summary["format"] == "jsonl"
    assert len([name for name in os.listdir(out) if name.endswith(".jsonl")]) >= 2    # several shards
    check_rows(rows_of(str(out)), lines, results, "corpus.txt")


def test_engine_ray_usage_errors_are_one_line(tmp_path):
    proc = subprocess.run([OAR, "run", MODEL, "--input_text", "今天", "--engine", "ray"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == ["oar run: error: --engine ray reads --input_file (a path or URL "
                                                "with one input per line)"]


KILLED_RUN = textwrap.dedent("""
    import json, os, signal, sys
    import ray
    from zoo.ray import Predictor, read_lines

    marker, source, address = sys.argv[1:4]

    class KilledOnce(Predictor):
        calls = 0

        def __call__(self, batch):
            KilledOnce.calls += 1
            if KilledOnce.calls == 2:
                try:
                    fd = os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY)    # only the first actor to get here
                except FileExistsError:
                    pass
                else:
                    os.close(fd)
                    os.kill(os.getpid(), signal.SIGKILL)                          # dies mid-batch
            return super().__call__(batch)

    ray.init(address=address, logging_level="ERROR", log_to_driver=False)
    ds = read_lines(source, block_lines=25, num_cpus=0).map_batches(
        KilledOnce, fn_constructor_kwargs={"name_or_dir": "lac_pku", "batch_size": 16}, batch_size=None,
        compute=ray.data.ActorPoolStrategy(size=2), num_cpus=1)
    rows = [{k: (v.tolist() if hasattr(v, "tolist") else v) for k, v in row.items()} for row in ds.take_all()]
    print(json.dumps(rows, ensure_ascii=False))
""")


def test_predictor_in_map_batches_survives_a_killed_actor(cluster, expected, tmp_path):
    lines, results = expected
    source = tmp_path / "corpus.txt"
    source.write_text("\n".join(lines) + "\n", encoding="utf-8")
    marker = tmp_path / "killed"
    proc = subprocess.run([sys.executable, "-c", KILLED_RUN, str(marker), str(source), "auto"],
                          capture_output=True, text=True, timeout=300, cwd=ROOT, env=cluster)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert marker.exists()                                   # an actor was killed mid-run
    rows = sorted(json.loads(proc.stdout.strip().splitlines()[-1]), key=lambda row: row["position"])
    assert [row["position"] for row in rows] == list(range(len(lines)))       # nothing lost, nothing twice
    for row, line, result in zip(rows, lines, results):
        assert row["input"] == line
        for field, value in result.items():
            assert row[field] == value
        if not result:
            assert row.get("words") is None
