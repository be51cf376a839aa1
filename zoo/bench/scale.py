"""Past one process (``oar bench scale``): batch inference on Ray Data and the tar-shard reader.

- ``ray``: lines/s of ``oar run lac_pku --input_file F --json --output O`` (one
  process, the reference) and of ``oar run lac_pku --input_file F --output D
  --engine ray --replicas R`` for R = 1 and 2 on a local Ray cluster that the
  command starts, each the whole command's wall time on the same file of
  People's Daily test-split sentences repeated to ``lines`` lines (100,000;
  ``--quick`` 5,000); and whether the Ray rows, put back in order by position,
  equal the in-process ``--json`` lines one for one.
- ``shards``: samples/s of :class:`framework.io.shards.ShardDataset` with 0, 1
  and 2 reader threads over the same shards (20,000 samples of a 64-float
  array, a text and a label; 500 per shard) read from local files, from a
  loopback HTTP server (``python -m http.server`` in its own process) and from
  ``memory://``; best of three passes, and each source's rate over the local
  files' at the same worker count.
"""
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time

import numpy

__all__ = ["run_all", "bench_ray", "bench_shards"]


def _oar():
    return shutil.which("oar", path=os.path.dirname(sys.executable)) or shutil.which("oar") or "oar"


def _corpus(lines, path):
    from nlp.data.peoples_daily import read_sentences
    texts = ["".join(s.words) for s in read_sentences("test")]
    with open(path, "w", encoding="utf-8") as f:
        for i in range(lines):
            f.write(texts[i % len(texts)] + "\n")


def _timed(command, env):
    started = time.perf_counter()
    proc = subprocess.run(command, capture_output=True, text=True, env=env)
    seconds = time.perf_counter() - started
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed: {proc.stderr[-2000:]}")
    return seconds


def bench_ray(lines=100_000, replicas=(1, 2), model="lac_pku"):
    """Lines/s of the in-process command and of ``--engine ray`` with each replica count; outputs compared."""
    from zoo.ray import read_results
    folder = tempfile.mkdtemp(prefix="oar-scale-")
    env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0", "RAY_TMPDIR": folder}
    try:
        source = os.path.join(folder, "corpus.txt")
        _corpus(lines, source)
        local_out = os.path.join(folder, "local.jsonl")
        seconds = _timed([_oar(), "run", model, "--input_file", source, "--json", "--output", local_out], env)
        rows = [{"in_process": True, "replicas": 0, "seconds": round(seconds, 2), "lines_per_s": round(lines / seconds, 1)}]
        with open(local_out, encoding="utf-8") as f:
            reference = [json.loads(line) for line in f]
        for count in replicas:
            out = os.path.join(folder, f"ray{count}")
            seconds = _timed([_oar(), "run", model, "--input_file", source, "--output", out, "--engine", "ray",
                              "--replicas", str(count)], env)
            got = [{"input": r["input"], **{k: v for k, v in r.items() if k not in ("path", "position", "input")}}
                   for r in read_results(out)]
            rows.append({"in_process": False, "replicas": count, "seconds": round(seconds, 2),
                         "lines_per_s": round(lines / seconds, 1), "identical": got == reference,
                         "speedup": round(rows[0]["seconds"] / seconds, 3)})
        return {"model": model, "lines": lines, "rows": rows}
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _rate(index, workers, repeats=3):
    from framework.io.shards import ShardDataset
    best = None
    for _ in range(repeats):
        dataset = ShardDataset(index=index, num_workers=workers, shuffle_buffer=0)
        started = time.perf_counter()
        count = sum(1 for _ in dataset)
        seconds = time.perf_counter() - started
        best = seconds if best is None else min(best, seconds)
    return count / best


def bench_shards(samples=20_000, per_shard=500, workers=(0, 1, 2)):
    """Samples/s of the shard reader per source and worker count (see the module docstring)."""
    import fsspec
    from framework.io.shards import write_shards
    folder = tempfile.mkdtemp(prefix="oar-shards-")
    server = None
    try:
        rng = numpy.random.default_rng(0)
        write_shards(({"x": rng.standard_normal(64).astype(numpy.float32), "txt": f"样本 {i} " * 8, "label": i % 10}
                      for i in range(samples)), os.path.join(folder, "train-"), max_count=per_shard)
        for name in os.listdir(folder):
            with open(os.path.join(folder, name), "rb") as src, fsspec.open(f"memory://oar-bench/{name}", "wb") as dst:
                dst.write(src.read())
        port = _free_port()
        server = subprocess.Popen([sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1",
                                   "--directory", folder], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for _ in range(100):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                time.sleep(0.1)
        sources = {"local": os.path.join(folder, "train-index.json"),
                   "http": f"http://127.0.0.1:{port}/train-index.json",
                   "memory": "memory://oar-bench/train-index.json"}
        rows = []
        for n in workers:
            local = None
            for source, index in sources.items():
                rate = _rate(index, n)
                local = rate if source == "local" else local
                rows.append({"source": source, "workers": n, "samples_per_s": round(rate, 1),
                             "vs_local": round(rate / local, 3)})
        return {"samples": samples, "per_shard": per_shard, "rows": rows}
    finally:
        if server is not None:
            server.terminate()
            server.wait(timeout=10)
        shutil.rmtree(folder, ignore_errors=True)
        fsspec.filesystem("memory").rm("/oar-bench", recursive=True)


def run_all(quick=False):
    """Both benchmarks; ``quick``: 5,000 lines and 4,000 samples."""
    return {"shards": bench_shards(samples=4_000 if quick else 20_000),
            "ray": bench_ray(lines=5_000 if quick else 100_000)}
