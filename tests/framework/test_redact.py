"""No credential is ever shown: ``framework.redact`` on its own, and every way a secret could reach a user's
screen — an ``oar run`` error naming an input URL with a password, ``oar train`` on a config naming one (a real
loopback HTTP server answering 404 and one never answering), a serving log line and a metric label."""
import functools
import http.server
import os
import shutil
import socket
import subprocess
import sys
import threading

import pytest

from framework.redact import MASK, is_secret_name, redact, redact_options, redact_url

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
OAR = shutil.which("oar", path=os.path.dirname(sys.executable)) or shutil.which("oar")
SECRET = "hunter2-zz9"


def test_urls_tokens_and_options_are_redacted():
    assert redact_url(f"https://alice:{SECRET}@host:8080/a/b.tsv?X-Amz-Signature={SECRET}#f") == \
        "https://host:8080/a/b.tsv"
    assert redact_url("local/path.txt") == "local/path.txt"
    assert redact(f"cannot read s3://k:{SECRET}@bucket/x?sig={SECRET} now") == "cannot read s3://bucket/x now"
    assert redact(f"token={SECRET}&aws_secret_access_key={SECRET}") == f"token={MASK}&aws_secret_access_key={MASK}"
    assert redact(f"{{'key': '{SECRET}', 'anon': False}}") == f"{{'key': '{MASK}', 'anon': False}}"
    assert redact(f"Authorization: Bearer {SECRET}").count(SECRET) == 0
    for kept in ["override must look like section.key=value", "missing key: foo", "KeyError: 'x'", "s3://b/k"]:
        assert redact(kept) == kept
    assert redact_options({"key": "a", "secret": "b", "client_kwargs": {"token": "t", "region": "r"}}) == \
        {"key": MASK, "secret": MASK, "client_kwargs": {"token": MASK, "region": "r"}}
    assert is_secret_name("X-Amz-Signature") and is_secret_name("api_key") and not is_secret_name("section.key")


@pytest.fixture()
def served(tmp_path):
    """The base URL of a loopback HTTP server serving an empty folder (every file answers 404)."""
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(tmp_path))
    handler.log_message = lambda *args: None
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://alice:{SECRET}@127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def one_line(proc):
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 1 and len(lines) == 1 and lines[0].startswith("oar: error: "), proc.stderr[-2000:]
    assert SECRET not in proc.stdout + proc.stderr and "alice" not in proc.stderr
    return lines[0]


def test_oar_run_and_train_never_print_a_password(served, tmp_path):
    proc = subprocess.run([OAR, "run", "senta_bow", "--input_file", f"{served}/reviews.txt?token={SECRET}"],
                          capture_output=True, text=True, timeout=120)
    assert one_line(proc) == f"oar: error: input file not found: {served.replace(f'alice:{SECRET}@', '')}/reviews.txt"
    proc = subprocess.run([OAR, "train", "-c", "configs/examples/sentiment_own_data.yaml", "--output_dir",
                           str(tmp_path / "run"), "-o", f"data.train.path={served}/reviews.tsv"],
                          capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert "reviews.tsv" in one_line(proc)


def test_a_server_that_never_answers_is_one_line_in_bounded_time(tmp_path):
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)                  # accepts connections (the kernel does) and never answers
    url = f"http://alice:{SECRET}@127.0.0.1:{listener.getsockname()[1]}/reviews.tsv"
    try:
        proc = subprocess.run([OAR, "train", "-c", "configs/examples/sentiment_own_data.yaml", "--output_dir",
                               str(tmp_path / "run"), "-o", f"data.train.path={url}"], capture_output=True,
                              text=True, cwd=ROOT, timeout=60, env={**os.environ, "OAR_NETWORK_TIMEOUT": "1"})
    finally:
        listener.close()
    assert "no answer within 1 s" in one_line(proc)


def test_serving_log_lines_and_labels_are_redacted():
    script = (f"import logging; from zoo.serving.app import _log_to_stderr, log; _log_to_stderr(); "
              f"log.error('model %s failed to load: %s', 'm', 'cannot read http://u:{SECRET}@h/x?sig={SECRET}'); "
              f"from zoo.serving.metrics import ServingMetrics; m = ServingMetrics(); "
              f"m.answered('http://u:{SECRET}@h/m', 200, 0.1); print(m.render().decode())")
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stderr.strip() == "oar serve: model m failed to load: cannot read http://h/x"
    assert SECRET not in proc.stdout and 'model="http://h/m"' in proc.stdout
