"""Back-pressure, timeouts, SIGTERM draining, worker processes and start-up errors of ``oar serve``."""
import asyncio
import subprocess
import time

from .conftest import OAR, ROOT, ServerProcess, httpx

LONG = "人民日报今天发表社论，号召全国人民团结起来。" * 60     # about 1,300 characters: a slow request


async def _burst(url, count, instances):
    async with httpx.AsyncClient(base_url=url, timeout=60) as client:
        return await asyncio.gather(*(client.post("/v1/models/lac_pku:predict", json={"instances": instances})
                                      for _ in range(count)))


def test_full_queue_answers_503_and_slow_requests_504():
    server = ServerProcess("lac_pku", "--max_queue", "1", "--max_batch_size", "1", "--timeout_s", "0.05")
    try:
        answers = asyncio.run(_burst(server.url, 12, [LONG] * 4))
        codes = [a.status_code for a in answers]
        assert set(codes) <= {200, 503, 504} and 503 in codes and 504 in codes, codes
        full = next(a for a in answers if a.status_code == 503)
        assert full.headers["retry-after"] == "1" and full.json()["error"] == "overloaded"
        late = next(a for a in answers if a.status_code == 504)
        assert late.json()["error"] == "timeout" and "0.05" in late.json()["detail"]
        assert httpx.get(server.url + "/healthz").status_code == 200   # still serving
    finally:
        code, _, err = server.stop()
    assert code == 0 and "Traceback" not in err, err


def test_sigterm_finishes_queued_requests_then_exits_0():
    server = ServerProcess("lac_pku", "--max_batch_size", "2")

    async def drive():
        requests = asyncio.ensure_future(_burst(server.url, 6, [LONG]))
        await asyncio.sleep(0.3)                  # every request sent, the first batches running
        server.process.terminate()
        return await requests

    answers = asyncio.run(drive())
    assert [a.status_code for a in answers] == [200] * 6
    assert all("".join(a.json()["predictions"][0]["words"]) == LONG for a in answers)
    code, _, err = server.stop()
    assert code == 0 and "Traceback" not in err, err
    try:
        httpx.get(server.url + "/healthz", timeout=2)
        raise AssertionError("the server still answers after SIGTERM")
    except httpx.TransportError:
        pass


def test_worker_processes_serve_and_add_up_their_metrics():
    server = ServerProcess("senta_bow", "--workers", "2")
    try:
        for _ in range(3):        # /readyz answers for the process that takes it; wait for both
            time.sleep(0.5)
            assert httpx.get(server.url + "/readyz").status_code in (200, 503)
        answers = [httpx.post(server.url + "/v1/models/senta_bow:predict", json={"instances": ["很好"]}, timeout=60)
                   for _ in range(8)]
        assert all(a.status_code in (200, 503) for a in answers) and any(a.status_code == 200 for a in answers)
        assert 'oar_serving_requests_total{code="200",model="senta_bow"}' in httpx.get(server.url + "/metrics").text
    finally:
        code, _, err = server.stop()
    assert code == 0, err


def test_unknown_model_and_bad_settings_fail_before_listening():
    result = subprocess.run([OAR, "serve", "lac_pkuu"], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert result.returncode == 1 and "lac_pkuu" in result.stderr and "Traceback" not in result.stderr
    result = subprocess.run([OAR, "serve", "lac_pku", "--max_batch_size", "0"], capture_output=True, text=True,
                            cwd=ROOT, timeout=120)
    assert result.returncode == 2 and "--max_batch_size" in result.stderr and "Traceback" not in result.stderr
