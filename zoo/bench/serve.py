"""``oar bench serve``: ``oar serve lac_pku`` on loopback under load, beside the in-process ``predict`` rate.

- ``in_process``: ``zoo.load("lac_pku").predict`` in this process on the same
  People's Daily test sentences: batch 1 (one call per sentence: sentences/s and
  the p50 of one call) and batch 64; the best of ``repeat`` passes.
- ``http``: the installed ``oar serve lac_pku`` as a separate process (default
  batching settings), driven by an asyncio + aiohttp client at concurrency 1, 8
  and 32: that many clients, each sending its next request (one sentence) as
  soon as its previous one is answered, for a fixed duration. Requests/s,
  sentences/s, p50/p90/p99 latency and errors (any status but 200).
- ``overload``: a server started with ``--max_queue 1 --max_batch_size 1``,
  kept full by 16 clients sending long requests (eight sentences joined), each
  pausing 0.1 s after a 503 as a client honouring ``Retry-After`` would: how
  many were refused and how long a refusal took (p50/p99).
- ``workers2``: ``oar serve lac_pku --workers 2`` (two processes, each with its
  own model, one BLAS thread each) at concurrency 32: the same figures (p99
  target <= 100 ms on two cores).
- ``ratios``: HTTP sentences/s at concurrency 32 over the in-process batch-1
  rate (target >= 1.5) and over the in-process batch-64 rate (one worker:
  target >= 0.9), and the milliseconds HTTP adds to the p50 of one call at
  concurrency 1 (target <= 1).

The client shares the machine with the server, as a real local client would.
"""
import asyncio
import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import time

import numpy

from framework.timing import best_times

from .lac import peoples_daily_test_texts

__all__ = ["run_all", "serving_process", "drive"]

CONCURRENCY = (1, 8, 32)


def _percentiles(seconds):
    if not seconds:
        return {"p50_ms": None, "p90_ms": None, "p99_ms": None}
    values = numpy.percentile(numpy.asarray(seconds) * 1000, [50, 90, 99])
    return {f"p{q}_ms": round(float(v), 2) for q, v in zip((50, 90, 99), values)}


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def serving_process(*args, ready_timeout=300):
    """``oar serve *args`` on a free loopback port, ready (``/readyz`` 200); yields its base URL, then stops it
    with SIGTERM."""
    import httpx
    oar = shutil.which("oar", path=os.path.dirname(sys.executable)) or shutil.which("oar")
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    process = subprocess.Popen([oar, "serve", *args, "--port", str(port)], stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + ready_timeout
        while True:
            if process.poll() is not None:
                raise RuntimeError(f"oar serve exited with {process.returncode}: {process.stderr.read()}")
            with contextlib.suppress(httpx.TransportError):
                if httpx.get(url + "/readyz", timeout=2).status_code == 200:
                    break
            if time.monotonic() > deadline:
                raise RuntimeError("oar serve did not get ready in time")
            time.sleep(0.2)
        yield url
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
        process.communicate(timeout=120)


async def _drive(url, model, texts, concurrency, seconds, backoff_s=0.0):
    """aiohttp's client (a core dependency through ``fsspec[http]``): about 0.2 ms of CPU a request, where
    httpx's asyncio client took 4 ms and so bounded the load it could make at ~240 requests/s on one core."""
    import aiohttp
    latencies, statuses = [], []
    stop_at = time.perf_counter() + seconds
    route = f"{url}/v1/models/{model}:predict"

    async def client(http, offset):
        i = offset
        while time.perf_counter() < stop_at:
            started = time.perf_counter()
            try:
                async with http.post(route, json={"instances": [texts[i % len(texts)]]}) as answer:
                    await answer.read()
                    statuses.append(answer.status)
            except (aiohttp.ClientError, asyncio.TimeoutError):
                statuses.append(None)
            latencies.append((time.perf_counter() - started, statuses[-1]))
            i += concurrency
            if statuses[-1] == 503 and backoff_s:
                await asyncio.sleep(backoff_s)

    connector = aiohttp.TCPConnector(limit=concurrency)
    async with aiohttp.ClientSession(connector=connector, timeout=aiohttp.ClientTimeout(total=60)) as http:
        started = time.perf_counter()
        await asyncio.gather(*(client(http, k) for k in range(concurrency)))
        elapsed = time.perf_counter() - started
    return elapsed, latencies


def drive(url, model, texts, concurrency, seconds):
    """Load ``model`` at ``url`` with ``concurrency`` clients for ``seconds``, one text per request:
    ``{"concurrency", "requests", "requests_per_s", "sentences_per_s", "p50_ms", "p90_ms", "p99_ms", "errors"}``
    (latency over the answered-200 requests)."""
    elapsed, latencies = asyncio.run(_drive(url, model, texts, concurrency, seconds))
    good = [s for s, status in latencies if status == 200]
    return {"concurrency": concurrency, "requests": len(latencies),
            "requests_per_s": round(len(latencies) / elapsed, 1), "sentences_per_s": round(len(good) / elapsed, 1),
            **_percentiles(good), "errors": len(latencies) - len(good)}


def _overload(texts, seconds):
    long_texts = ["".join(texts[i:i + 8]) for i in range(0, len(texts), 8)]
    with serving_process("lac_pku", "--max_queue", "1", "--max_batch_size", "1") as url:
        _, latencies = asyncio.run(_drive(url, "lac_pku", long_texts, 16, seconds, backoff_s=0.1))
    refused = [s for s, status in latencies if status == 503]
    return {"requests": len(latencies), "refused_503": len(refused),
            "answered_200": sum(status == 200 for _, status in latencies),
            **{f"refusal_{k}": v for k, v in _percentiles(refused).items() if k != "p90_ms"}}


def _in_process(texts, repeat):
    import zoo
    task = zoo.load("lac_pku")
    task.predict(texts[:64])                                    # warm-up
    batch1 = None
    for _ in range(repeat):                                     # the fastest of ``repeat`` passes, one call each
        calls = []
        for text in texts:
            started = time.perf_counter()
            task.predict([text])
            calls.append(time.perf_counter() - started)
        batch1 = calls if batch1 is None or sum(calls) < sum(batch1) else batch1
    batch64 = best_times(lambda: [task.predict(texts[i:i + 64]) for i in range(0, len(texts), 64)],
                         repeat=repeat, warmup=0)[0]
    return {"sentences": len(texts), "batch1_sentences_per_s": round(len(texts) / sum(batch1), 1),
            "batch1_p50_ms": round(float(numpy.median(batch1)) * 1000, 2),
            "batch64_sentences_per_s": round(len(texts) / batch64, 1)}


def run_all(quick=False):
    """The figures above (``quick``: 2 s per concurrency instead of 20, 200 sentences, one in-process pass)."""
    texts = peoples_daily_test_texts(200 if quick else 1000)
    seconds = 2 if quick else 20
    in_process = _in_process(texts, repeat=1 if quick else 2)
    with serving_process("lac_pku") as url:
        http = [drive(url, "lac_pku", texts, c, seconds) for c in CONCURRENCY]
    with serving_process("lac_pku", "--workers", "2") as url:
        workers2 = drive(url, "lac_pku", texts, 32, seconds)
    by_c = {row["concurrency"]: row for row in http}
    return {"model": "lac_pku", "seconds_per_level": seconds, "in_process": in_process, "http": http,
            "workers2": workers2, "overload": _overload(texts, seconds / 2),
            "ratios": {"c32_over_batch1": round(by_c[32]["sentences_per_s"] / in_process["batch1_sentences_per_s"], 3),
                       "c32_over_batch64": round(by_c[32]["sentences_per_s"] /
                                                 in_process["batch64_sentences_per_s"], 3),
                       "c1_p50_added_ms": round(by_c[1]["p50_ms"] - in_process["batch1_p50_ms"], 2)}}
