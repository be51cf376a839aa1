"""The one atomic write (framework.serialization.atomic_write / atomic_path) and the removal of the
temporaries that killed writes leave behind, down to a training run that starts after a killed one."""
import os
import signal
import subprocess
import sys
import textwrap

import numpy
import pytest

from framework.config import load_config
from framework.engine import runner
from framework.engine.checkpoint import load_checkpoint
from framework.serialization import atomic_path, atomic_write, remove_stale_temporaries

import zoo.toy  # noqa: F401  (registers the tiny task)

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")
TINY = os.path.join(ROOT, "configs", "_test", "tiny.yaml")


def _temporaries(folder):
    return sorted(name for name in os.listdir(folder) if name.endswith(".tmp"))


def test_text_and_binary_writes(tmp_path):
    text_path, binary_path = tmp_path / "vocab.txt", tmp_path / "blob.bin"
    with atomic_write(text_path, newline="\n") as f:
        f.write("百度\n公司\n")
        assert not text_path.exists()                 # nothing at the destination until the rename
        assert len(_temporaries(tmp_path)) == 1
    assert text_path.read_bytes() == "百度\n公司\n".encode("utf-8")
    with atomic_write(str(binary_path), "wb") as f:
        f.write(bytes(range(256)))
    assert binary_path.read_bytes() == bytes(range(256))
    assert _temporaries(tmp_path) == []


def test_failed_write_keeps_the_old_file_and_leaves_no_temporary(tmp_path):
    path = tmp_path / "config.yaml"
    path.write_text("old: 1\n")
    with pytest.raises(RuntimeError, match="midway"):
        with atomic_write(path) as f:
            f.write("new: 2\n")
            raise RuntimeError("midway")
    assert path.read_text() == "old: 1\n"
    assert os.listdir(tmp_path) == ["config.yaml"]


def test_bad_mode_is_refused(tmp_path):
    with pytest.raises(ValueError, match="mode"):
        with atomic_write(tmp_path / "x", "a"):
            pass


def test_permissions_are_those_open_would_give(tmp_path):
    old = os.umask(0o027)
    try:
        with atomic_write(tmp_path / "new.txt") as f:
            f.write("x")
        existing = tmp_path / "private.txt"
        existing.write_text("old")
        os.chmod(existing, 0o600)
        with atomic_write(existing) as f:
            f.write("new")
    finally:
        os.umask(old)
    assert os.stat(tmp_path / "new.txt").st_mode & 0o777 == 0o640       # 0o666 less the umask
    assert os.stat(existing).st_mode & 0o777 == 0o600                    # the replaced file's mode
    assert existing.read_text() == "new"


def test_atomic_path_for_writers_that_open_by_name(tmp_path):
    path = tmp_path / "clip.mp4"
    with atomic_path(path) as temporary:
        assert os.path.dirname(temporary) == str(tmp_path) and os.path.isfile(temporary)
        with open(temporary, "wb") as f:
            f.write(b"frames")
    assert path.read_bytes() == b"frames"
    with pytest.raises(OSError):
        with atomic_path(tmp_path / "other.mp4") as temporary:
            raise OSError("encoder failed")
    assert sorted(os.listdir(tmp_path)) == ["clip.mp4"]


def test_stale_temporaries_are_removed_but_not_one_being_written(tmp_path):
    (tmp_path / ".last.npz.abcd1234.tmp").write_bytes(b"PK half")        # a killed write
    (tmp_path / ".best.npz.zz_9yy8x.tmp").write_bytes(b"PK half")
    (tmp_path / "notes.tmp").write_text("not ours")                       # other names stay
    (tmp_path / ".hidden.tmp").write_text("not ours")
    with atomic_write(tmp_path / "last.npz", "wb") as f:
        f.write(b"complete")
        live = [n for n in _temporaries(tmp_path) if n.startswith(".last.npz.") and n != ".last.npz.abcd1234.tmp"]
        removed = remove_stale_temporaries(str(tmp_path), name="best.npz")
        assert removed == [str(tmp_path / ".best.npz.zz_9yy8x.tmp")]
        removed = remove_stale_temporaries(str(tmp_path))
        assert removed == [str(tmp_path / ".last.npz.abcd1234.tmp")]
        assert len(live) == 1 and (tmp_path / live[0]).exists()           # the live write is untouched
    assert (tmp_path / "last.npz").read_bytes() == b"complete"
    assert sorted(os.listdir(tmp_path)) == [".hidden.tmp", "last.npz", "notes.tmp"]
    assert remove_stale_temporaries(str(tmp_path / "missing")) == []


def test_a_killed_writer_is_told_from_a_live_one(tmp_path):
    path = tmp_path / "last.npz"
    path.write_bytes(b"previous checkpoint")
    script = textwrap.dedent(f"""
        import sys, time
        from framework.serialization import atomic_write
        with atomic_write({str(path)!r}, "wb") as f:
            f.write(b"x" * 100000)
            f.flush()
            print("writing", flush=True)
            time.sleep(60)
    """)
    writer = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True, cwd=ROOT)
    try:
        assert writer.stdout.readline().strip() == "writing"
        temporaries = _temporaries(tmp_path)
        assert len(temporaries) == 1
        assert remove_stale_temporaries(str(tmp_path)) == []              # its writer is alive
        writer.send_signal(signal.SIGKILL)
        writer.wait(timeout=10)
        assert _temporaries(tmp_path) == temporaries                      # the kill left it behind
        assert remove_stale_temporaries(str(tmp_path)) == [str(tmp_path / temporaries[0])]
    finally:
        if writer.poll() is None:
            writer.kill()
        writer.stdout.close()
    assert sorted(os.listdir(tmp_path)) == ["last.npz"]
    assert path.read_bytes() == b"previous checkpoint"


def test_a_run_removes_the_temporaries_of_killed_checkpoint_writes(tmp_path):
    out = tmp_path / "run"
    runner.train(load_config(TINY, ["train.epochs=2"]), output_dir=str(out), progress=False)
    last = load_checkpoint(str(out / "last.npz"))
    assert last["trainer"]["step"] == 32
    # what a write killed midway leaves: the first bytes of a checkpoint under a temporary name
    half = (out / "last.npz").read_bytes()[:4096]
    (out / ".last.npz.k1lled00.tmp").write_bytes(half)
    (out / ".best.npz.k1lled01.tmp").write_bytes(half)
    trainer, summary = runner.train(load_config(TINY, ["train.epochs=3"]), output_dir=str(out), resume=True,
                                    progress=False)
    assert _temporaries(out) == []
    assert summary["step"] == 48                                          # resumed from the intact checkpoint
    resumed = load_checkpoint(str(out / "last.npz"))
    assert resumed["trainer"]["step"] == 48
    best = load_checkpoint(str(out / "best.npz"))
    assert sorted(best["model"]) == sorted(last["model"])
    assert all(numpy.isfinite(v).all() for v in resumed["model"].values())
