"""Dataset files by URL through fsspec: a real HTTP server on a loopback port (``http.server`` in a thread) and
``memory://``; a URL that cannot be reached or is not there is one line, credentials never shown."""
import functools
import http.server
import os
import shutil
import socket
import subprocess
import sys
import threading

import fsspec
import fsspec.config
import pytest

from framework.errors import MissingFileError
from framework.io.remote import RemoteFileError, isfile, is_url, open_file, read_bytes, safe_url

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
OAR = shutil.which("oar", path=os.path.dirname(sys.executable)) or shutil.which("oar")


@pytest.fixture()
def served(tmp_path):
    """``(folder, base URL)`` of a loopback HTTP server serving ``folder``, for the test."""
    folder = tmp_path / "www"
    folder.mkdir()
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(folder))
    handler.log_message = lambda *args: None
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield folder, f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def closed_port():
    """A loopback port nothing listens on."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_urls_and_paths_are_told_apart():
    assert is_url("s3://bucket/a.txt") and is_url("memory://x") and is_url("https://h/a")
    assert not is_url("data/a.txt") and not is_url("C:\\data\\a.txt") and not is_url("/abs/a.txt")


def test_safe_url_drops_credentials_and_query():
    assert safe_url("https://alice:s3cret@host:8080/a/b.tsv?X-Amz-Signature=abc#frag") == "https://host:8080/a/b.tsv"
    assert safe_url("local/path.txt") == "local/path.txt"


def test_read_over_http_and_memory(served):
    folder, base = served
    (folder / "a.txt").write_bytes("第一行\n第二行\n".encode("utf-8"))
    assert read_bytes(f"{base}/a.txt") == "第一行\n第二行\n".encode("utf-8")
    with open_file(f"{base}/a.txt", "r") as f:
        assert f.read().splitlines() == ["第一行", "第二行"]
    assert isfile(f"{base}/a.txt")
    with fsspec.open("memory://oar-test/b.txt", "wb") as f:
        f.write(b"x\ny\n")
    assert read_bytes("memory://oar-test/b.txt") == b"x\ny\n"
    assert isfile("memory://oar-test/b.txt") and not isfile("memory://oar-test/none.txt")


def test_dataset_file_keys_take_urls(served):
    from nlp.data.text import read_utf8_lines
    from nlp.senta.data import SentimentFile
    from nlp.simnet.pairs import read_pair_file
    folder, base = served
    (folder / "reviews.tsv").write_text("1\t好评\n0\t太差了\n1\t不错\n", encoding="utf-8")
    assert [s["label"] for s in SentimentFile(f"{base}/reviews.tsv")] == [1, 0, 1]
    (folder / "pairs.tsv").write_text("火车晚点了\t列车延误了\t1\n", encoding="utf-8")
    assert read_pair_file(f"{base}/pairs.tsv")[0].label == 1
    with fsspec.open("memory://oar-test/vocab.txt", "wb") as f:
        f.write("<pad>\n<unk>\n好\n".encode("utf-8"))
    assert read_utf8_lines("memory://oar-test/vocab.txt") == ["<pad>", "<unk>", "好"]


def test_video_list_files_take_urls(served):
    from video.data.datasets import _read_lines
    folder, base = served
    (folder / "train.txt").write_text("clips/a.mp4 0\nclips/b.mp4 1\n", encoding="utf-8")
    assert _read_lines(f"{base}/train.txt", "list file") == ["clips/a.mp4 0", "clips/b.mp4 1"]


def test_missing_and_unreachable_urls_are_one_clear_error(served):
    _, base = served
    with pytest.raises(MissingFileError, match=r"not found: http://127\.0\.0\.1:\d+/none\.tsv$"):
        read_bytes(f"{base}/none.tsv")
    url = f"http://bob:hunter2@127.0.0.1:{closed_port()}/x.tsv?token=abcdef"
    with pytest.raises(RemoteFileError) as info:
        read_bytes(url)
    message = str(info.value)
    assert message.startswith("cannot reach file http://127.0.0.1:") and "\n" not in message
    assert "hunter2" not in message and "abcdef" not in message and "bob" not in message
    with pytest.raises(MissingFileError):
        read_bytes("memory://oar-test/absent.txt")


@pytest.fixture()
def s3_server(monkeypatch):
    """A local S3-compatible server (moto's, on a loopback port) with a bucket ``oar-test``; this process and the
    ``oar`` it starts reach it through fsspec's environment config (``FSSPEC_S3_ENDPOINT_URL``) and the usual AWS
    variables, as a user pointing oar at their own S3 service would."""
    server_module = pytest.importorskip("moto.server", reason="moto's S3 server is not installed (the dev extra has it)")
    pytest.importorskip("s3fs", reason="s3fs is not installed (the dev extra has it)")
    server = server_module.ThreadedMotoServer(ip_address="127.0.0.1", port=closed_port(), verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    endpoint = f"http://{host}:{port}"
    for name, value in {"AWS_ACCESS_KEY_ID": "oar-test-key", "AWS_SECRET_ACCESS_KEY": "oar-test-secret-zz9",
                        "AWS_DEFAULT_REGION": "us-east-1", "FSSPEC_S3_ENDPOINT_URL": endpoint}.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setitem(fsspec.config.conf, "s3", {"endpoint_url": endpoint})     # fsspec read the env at import
    fs = fsspec.filesystem("s3", endpoint_url=endpoint, skip_instance_cache=True)
    fs.mkdir("oar-test")
    yield fs
    server.stop()


def test_s3_through_a_local_server(s3_server, tmp_path):
    """A labelled file in an S3 bucket: read by oar's reader, trained on by ``oar train`` in its own process; a
    missing key is one line that shows neither the key pair nor the secret."""
    with open(os.path.join(ROOT, "examples", "sentiment.tsv"), "rb") as f:
        data = f.read()
    s3_server.pipe("oar-test/reviews.tsv", data)
    assert read_bytes("s3://oar-test/reviews.tsv") == data
    assert isfile("s3://oar-test/reviews.tsv") and not isfile("s3://oar-test/absent.tsv")
    proc = run_oar("train", "-c", "configs/examples/sentiment_own_data.yaml", "--output_dir", str(tmp_path / "run"),
                   "-o", "data.train.path=s3://oar-test/reviews.tsv", "train.epochs=1")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert (tmp_path / "run" / "best.npz").exists() or (tmp_path / "run" / "last.npz").exists()
    proc = run_oar("train", "-c", "configs/examples/sentiment_own_data.yaml", "--output_dir", str(tmp_path / "gone"),
                   "-o", "data.train.path=s3://oar-test/absent.tsv")
    assert proc.returncode == 1
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("oar: error:") and "s3://oar-test/absent.tsv" in lines[0], lines
    assert "oar-test-key" not in proc.stderr and "oar-test-secret-zz9" not in proc.stderr


def run_oar(*args, cwd=ROOT):
    return subprocess.run([OAR, *args], capture_output=True, text=True, timeout=300, cwd=cwd)


def test_oar_train_reads_a_labelled_file_over_http(served, tmp_path):
    folder, base = served
    shutil.copy(os.path.join(ROOT, "examples", "sentiment.tsv"), folder / "reviews.tsv")
    proc = run_oar("train", "-c", "configs/examples/sentiment_own_data.yaml", "--output_dir", str(tmp_path / "run"),
                   "-o", f"data.train.path={base}/reviews.tsv", "train.epochs=1")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert (tmp_path / "run" / "best.npz").exists() or (tmp_path / "run" / "last.npz").exists()


def test_oar_train_on_an_unreachable_url_is_one_line(tmp_path):
    url = f"http://user:pa55word@127.0.0.1:{closed_port()}/reviews.tsv?sig=zzz"
    proc = run_oar("train", "-c", "configs/examples/sentiment_own_data.yaml", "--output_dir", str(tmp_path / "run"),
                   "-o", f"data.train.path={url}")
    assert proc.returncode == 1
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("oar: error: cannot reach file http://127.0.0.1:"), lines
    assert "pa55word" not in proc.stderr and "zzz" not in proc.stderr and "Traceback" not in proc.stderr
