"""Real ``oar serve`` processes (the installed console script) on free loopback ports, talked to over HTTP."""
import os
import shutil
import signal
import socket
import subprocess
import sys
import time

import pytest

httpx = pytest.importorskip("httpx")
pytest.importorskip("starlette")
pytest.importorskip("uvicorn")
pytest.importorskip("prometheus_client")

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
OAR = shutil.which("oar", path=os.path.dirname(sys.executable)) or shutil.which("oar")


def free_port():
    """A TCP port nothing listens on now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class ServerProcess:
    """``oar serve *args`` as a process: ``url``, ``process``, ``stop()`` (SIGTERM, then its exit status)."""

    def __init__(self, *args, ready_timeout=180):
        assert OAR, "the oar console script is not installed (pip install -e .)"
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.process = subprocess.Popen([OAR, "serve", *args, "--port", str(self.port)], cwd=ROOT,
                                        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + ready_timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise AssertionError(f"oar serve exited with {self.process.returncode}: {self.process.stderr.read()}")
            try:
                if httpx.get(self.url + "/readyz", timeout=2).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            time.sleep(0.2)
        self.stop()
        raise AssertionError("oar serve did not get ready in time")

    def stop(self):
        """SIGTERM, wait; ``(exit status, stdout, stderr)``."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        out, err = self.process.communicate(timeout=60)
        return self.process.returncode, out, err


@pytest.fixture(scope="module")
def clip_folder(tmp_path_factory):
    """A folder holding one short encoded video, ``clip.mp4``."""
    import numpy
    from video.data.encode import write_video
    folder = tmp_path_factory.mktemp("clips")
    frames = numpy.random.default_rng(1).integers(0, 256, (12, 64, 64, 3), dtype=numpy.uint8)
    write_video(str(folder / "clip.mp4"), frames, fps=8)
    return folder
