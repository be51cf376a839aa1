"""A request is data: a real ``oar serve`` over HTTP answers bad file instances naming only what the client sent
(its field, its own path string), never the server's paths; a client that goes away mid-body is a metric and no
traceback; a route asked with the wrong method is 405 with ``Allow``."""
import base64
import os
import socket
import tempfile
import time

import numpy
import pytest

from .conftest import ServerProcess, httpx
from .test_server import metric

GARBAGE = b"\x00\x9fnot a video\xff" * 40


@pytest.fixture(scope="module")
def allowed(tmp_path_factory):
    """The folder ``--allow_path`` names: an empty folder, a text file, a garbage and a truncated video, a
    folder of garbage JPEG frames, a folder holding an empty folder, and a link pointing out of it."""
    from video.data.encode import write_video
    root = tmp_path_factory.mktemp("allowed")
    (root / "empty").mkdir()
    (root / "notes.txt").write_text("not a video\n")
    (root / "junk.mp4").write_bytes(GARBAGE)
    frames = numpy.random.default_rng(0).integers(0, 256, (12, 48, 48, 3), dtype=numpy.uint8)
    write_video(str(root / "clip.mp4"), frames, fps=8)
    data = (root / "clip.mp4").read_bytes()
    (root / "cut.mp4").write_bytes(data[:len(data) // 2])
    (root / "frames").mkdir()
    for i in range(4):
        (root / "frames" / f"img_{i:03d}.jpg").write_bytes(GARBAGE)
    (root / "nested" / "deeper").mkdir(parents=True)
    outside = tmp_path_factory.mktemp("outside")
    (outside / "secret.mp4").write_bytes(data)
    os.symlink(outside / "secret.mp4", root / "link.mp4")
    return root


@pytest.fixture(scope="module")
def server(allowed):
    served = ServerProcess("tsm_synth", "senta_bow", "--allow_path", str(allowed), "--max_delay_ms", "1")
    yield served
    code, _, err = served.stop()
    assert code == 0, err
    assert "Traceback" not in err and "ClientDisconnect" not in err, err


def _predict(server, name, instances):
    return httpx.post(f"{server.url}/v1/models/{name}:predict", json={"instances": instances}, timeout=60)


def _server_paths(allowed):
    return [str(allowed), os.path.realpath(allowed), "oar-serve-", os.path.dirname(os.path.realpath(allowed))]


@pytest.mark.parametrize("given, status", [("empty", 400), ("notes.txt", 400), ("junk.mp4", 400), ("cut.mp4", 400),
                                           ("frames", 400), ("nested/deeper", 400), ("./nested/../empty", 400),
                                           ("missing.mp4", 400), ("link.mp4", 403), ("../x.mp4", 403)])
def test_a_path_instance_is_answered_with_its_own_path_string_only(server, allowed, given, status):
    answer = _predict(server, "tsm_synth", [{"path": given}])
    assert answer.status_code == status, answer.text
    detail = answer.json()["detail"]
    assert detail.startswith("instances[0]") and given in detail, detail
    for path in _server_paths(allowed):
        assert path not in detail, detail


def test_the_second_instance_is_named_by_its_index(server, allowed):
    answer = _predict(server, "tsm_synth", [{"path": "clip.mp4"}, {"path": "notes.txt"}])
    assert answer.status_code == 400 and answer.json()["detail"].startswith("instances[1]"), answer.text


@pytest.mark.parametrize("data", [GARBAGE, b"\x00\x00\x00\x18ftypmp42" + b"\x00" * 64])
def test_a_b64_file_is_named_by_its_field(server, allowed, data):
    answer = _predict(server, "tsm_synth", [{"b64": base64.b64encode(data).decode()}])
    assert answer.status_code == 400, answer.text
    detail = answer.json()["detail"]
    assert "instances[0].b64" in detail and "oar-serve-" not in detail and tempfile.gettempdir() not in detail, detail


@pytest.mark.parametrize("method, route, allow", [
    ("GET", "/v1/models/senta_bow:predict", "POST"), ("PUT", "/v1/models/tsm_synth:predict", "POST"),
    ("GET", "/predict/senta_bow", "POST"), ("POST", "/v1/models/senta_bow", "GET"), ("POST", "/healthz", "GET"),
    ("DELETE", "/metrics", "GET")])
def test_a_wrong_method_is_405_with_allow(server, method, route, allow):
    answer = httpx.request(method, server.url + route, timeout=30)
    assert answer.status_code == 405, answer.text
    assert allow in answer.headers["allow"].split(", ")
    assert answer.json()["error"] == "method not allowed" and method in answer.json()["detail"]


def test_a_client_gone_mid_body_is_counted_without_a_traceback(server):
    for _ in range(2):
        with socket.create_connection(("127.0.0.1", server.port)) as raw:
            raw.sendall(b"POST /v1/models/senta_bow:predict HTTP/1.1\r\nHost: x\r\nContent-Type: application/json"
                        b"\r\nContent-Length: 4096\r\n\r\n{\"instances\": [\"\xe5\xa5\xbd")
            time.sleep(0.2)
    deadline = time.monotonic() + 10
    while metric(httpx.get(server.url + "/metrics").text, "oar_serving_client_disconnects_total",
                 model="senta_bow") < 2 and time.monotonic() < deadline:
        time.sleep(0.1)
    text = httpx.get(server.url + "/metrics").text
    assert metric(text, "oar_serving_client_disconnects_total", model="senta_bow") == 2
    assert metric(text, "oar_serving_requests_total", model="senta_bow", code="500") == 0
    assert _predict(server, "senta_bow", ["好"]).status_code == 200          # the server serves on
