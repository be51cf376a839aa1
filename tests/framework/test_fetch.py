"""Fetching from a package index: one download however many processes start on a cold cache, the
sha256 checked, files renamed into place whole, a progress bar, and the lock that makes it so.

The index is a real HTTP server on 127.0.0.1 (PEP 503 simple pages) that counts its requests."""
import hashlib
import http.server
import io
import json
import os
import subprocess
import sys
import tarfile
import textwrap
import threading
import time

import pytest
from tqdm import tqdm

from framework.fetch import Distribution, FetchError, fetch, fetch_archive, file_lock

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")
MEMBERS = ["demo/data/", "demo/README.txt"]


def _archive(path):
    """A .tar.gz with a top folder, as source distributions have; returns {member: bytes}."""
    contents = {"demo/data/big.bin": os.urandom(3 << 20), "demo/data/small.txt": "第一行\n".encode("utf-8"),
                "demo/data/deep/more.txt": b"more\n", "demo/README.txt": b"readme\n", "setup.py": b"# unused\n"}
    with tarfile.open(path, "w:gz") as archive:
        for name, data in contents.items():
            info = tarfile.TarInfo(f"demo-1.0/{name}")
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return contents


class _Index(http.server.SimpleHTTPRequestHandler):
    """Serves the site folder; counts GETs by path and sends archives slowly, so downloads overlap."""

    def do_GET(self):
        with self.server.lock:
            self.server.gets[self.path] = self.server.gets.get(self.path, 0) + 1
        super().do_GET()

    def copyfile(self, source, outputfile):
        if not self.path.endswith(".tar.gz"):
            return super().copyfile(source, outputfile)
        for block in iter(lambda: source.read(256 << 10), b""):
            outputfile.write(block)
            time.sleep(0.02)

    def log_message(self, *args):
        pass


@pytest.fixture
def index(tmp_path, monkeypatch):
    site = tmp_path / "site"
    (site / "files").mkdir(parents=True)
    contents = _archive(site / "files" / "demo-1.0.tar.gz")
    sha = hashlib.sha256((site / "files" / "demo-1.0.tar.gz").read_bytes()).hexdigest()
    for project, fragment in (("demo", f"#sha256={sha}"), ("unpinned", "")):
        (site / "simple" / project).mkdir(parents=True)
        (site / "simple" / project / "index.html").write_text(
            f'<html><body><a href="../../files/demo-1.0.tar.gz{fragment}">demo-1.0.tar.gz</a></body></html>')
    server = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), lambda *a, **k: _Index(*a, directory=str(site), **k))
    server.gets, server.lock = {}, threading.Lock()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    home = tmp_path / "home"
    monkeypatch.setenv("OAR_HOME", str(home))
    monkeypatch.setenv("OAR_PACKAGE_INDEX", f"http://127.0.0.1:{server.server_address[1]}/simple")
    try:
        yield {"server": server, "home": home, "contents": contents,
               "dist": Distribution("demo", "1.0", "demo-1.0.tar.gz", sha)}
    finally:
        server.shutdown()
        server.server_close()


def _downloads(index):
    return index["server"].gets.get("/files/demo-1.0.tar.gz", 0)


def _leftovers(home):
    return [os.path.join(d, n) for d, _, names in os.walk(home) for n in names if n.endswith((".tmp", ".part"))]


def _check_extracted(index, root):
    for name, data in index["contents"].items():
        if name != "setup.py":
            with open(os.path.join(root, name), "rb") as f:
                assert hashlib.sha256(f.read()).hexdigest() == hashlib.sha256(data).hexdigest(), name
    assert not os.path.exists(os.path.join(root, "setup.py"))


def test_concurrent_first_fetches_all_succeed_with_one_download(index, tmp_path):
    dist, go = index["dist"], tmp_path / "go"
    script = textwrap.dedent(f"""
        import hashlib, json, os, sys, time
        from framework.fetch import Distribution, fetch
        while not os.path.exists({str(go)!r}):
            time.sleep(0.005)
        root = fetch(Distribution(*{[dist.project, dist.version, dist.filename, dist.sha256]!r}), {MEMBERS!r})
        digests = {{}}
        for folder, _, names in os.walk(os.path.join(root, "demo")):
            for name in names:
                with open(os.path.join(folder, name), "rb") as f:
                    digests[os.path.relpath(os.path.join(folder, name), root)] = hashlib.sha256(f.read()).hexdigest()
        print(json.dumps({{"root": root, "files": digests}}))
    """)
    workers = [subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True, cwd=ROOT, env=dict(os.environ, OAR_PROGRESS="0")) for _ in range(6)]
    time.sleep(1.0)                                  # let every worker import and wait at the start line
    go.write_text("")
    results = [worker.communicate(timeout=120) for worker in workers]
    assert [w.returncode for w in workers] == [0] * 6, [err[-2000:] for _, err in results]
    expected = {os.path.normpath(name): hashlib.sha256(data).hexdigest()
                for name, data in index["contents"].items() if name.startswith("demo/")}
    for out, _ in results:
        report = json.loads(out)
        assert report["root"] == str(index["home"] / "demo-1.0")
        assert report["files"] == expected
    assert _downloads(index) == 1
    assert _leftovers(index["home"]) == []
    # the processes that waited for the lock said so on stderr, and nothing else
    waited = [err for _, err in results if err]
    assert all(line.startswith("oar: waiting for another process") for err in waited for line in err.splitlines())


def test_later_fetches_touch_no_network(index):
    root = fetch(index["dist"], MEMBERS)
    _check_extracted(index, root)
    gets = dict(index["server"].gets)
    assert fetch(index["dist"], MEMBERS) == root
    assert fetch(index["dist"], ["demo/data/small.txt"]) == root
    assert index["server"].gets == gets
    with open(os.path.join(root, ".oar-fetched.json")) as f:
        assert json.load(f) == ["demo/data/"]


def test_a_folder_left_half_extracted_is_completed(index):
    root = index["home"] / "demo-1.0"
    (root / "demo" / "data").mkdir(parents=True)
    (root / "demo" / "data" / "small.txt").write_text("an older, partial extraction")
    (root / "demo" / "data" / ".big.bin.abcd1234.tmp").write_bytes(b"half")     # left by a killed extraction
    fetch(index["dist"], ["demo/data/"])
    for name, data in index["contents"].items():
        if name.startswith("demo/data/"):
            assert (root / name).read_bytes() == data
    assert _leftovers(index["home"]) == []


def test_download_is_checked_against_the_pinned_sha256(index):
    wrong = Distribution("unpinned", "1.0", "demo-1.0.tar.gz", "0" * 64)
    with pytest.raises(FetchError, match=r"has sha256 [0-9a-f]{64}, expected 0{64}.*save it as"):
        fetch_archive(wrong)
    assert not os.path.exists(index["home"] / "downloads" / "demo-1.0.tar.gz")
    assert _leftovers(index["home"]) == []
    listed = Distribution("demo", "1.0", "demo-1.0.tar.gz", "1" * 64)  # the index lists another sha256
    with pytest.raises(FetchError, match="refusing"):
        fetch_archive(listed)
    assert _downloads(index) == 1


def test_download_shows_a_progress_bar_in_bytes(index, monkeypatch, capsys):
    monkeypatch.setenv("OAR_PROGRESS", "1")
    path = fetch_archive(index["dist"])
    size = os.path.getsize(path)
    captured = capsys.readouterr()
    assert captured.out == ""
    total = tqdm.format_sizeof(size, "B", 1024)
    assert "download demo-1.0.tar.gz" in captured.err
    assert f"/{total[:-1]} [" in captured.err and "B/s]" in captured.err   # e.g. "2.00M/3.00M [00:00<00:00, 14.4MB/s]"


def test_unreachable_index_says_how_to_place_the_file(tmp_path, monkeypatch):
    monkeypatch.setenv("OAR_HOME", str(tmp_path))
    monkeypatch.setenv("OAR_PACKAGE_INDEX", "http://127.0.0.1:9/simple")
    with pytest.raises(FetchError, match=r"save it as .*downloads.*demo-1\.0\.tar\.gz"):
        fetch(Distribution("demo", "1.0", "demo-1.0.tar.gz", "0" * 64), MEMBERS)


def test_file_lock_excludes_other_processes(tmp_path, capfd):
    target, released = tmp_path / "cache" / "model", tmp_path / "released"
    script = textwrap.dedent(f"""
        import time
        from framework.fetch import file_lock
        with file_lock({str(target)!r}):
            print("holding", flush=True)
            time.sleep(0.5)
            open({str(released)!r}, "w").close()
    """)
    holder = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True, cwd=ROOT)
    try:
        assert holder.stdout.readline().strip() == "holding"
        with file_lock(str(target), "oar: waiting for the holder"):
            assert released.exists()                 # entered only once the other process let go
    finally:
        holder.wait(timeout=30)
        holder.stdout.close()
    assert holder.returncode == 0
    assert "oar: waiting for the holder" in capfd.readouterr().err
    assert os.path.isfile(str(target) + ".lock") and not target.exists()
    with file_lock(str(target), "never shown"):      # free again: no wait, no message
        pass
    assert capfd.readouterr().err == ""
