"""Atomic file writes, for every file the project writes (re-exported by :mod:`framework.serialization`).

- :func:`atomic_write` gives a file object on a temporary file beside the
  target, flushed, fsynced and renamed over it on a clean exit;
- :func:`atomic_path` gives a temporary name instead, for writers that open
  files themselves (a video muxer, an external tool);
- :func:`remove_stale_temporaries` removes what writes killed midway left
  behind, and never a temporary that a live process is writing.

This module imports nothing of the framework but its standard library needs,
so the fetcher and the compiled kernels' cache can use it without reaching the
Tensor core.
"""
import contextlib
import os
import re
import stat
import tempfile
import time

try:
    import fcntl
except ImportError:        # Windows: there, stale temporaries are recognised by their age
    fcntl = None

__all__ = ["atomic_write", "atomic_path", "remove_stale_temporaries"]

# ---- atomic files ----------------------------------------------------------------
# A temporary file is ``.<name>.<8 random characters>.tmp`` beside its target. Its writer holds an
# exclusive flock on it until the rename, so a temporary that nobody holds was left by a killed writer.
_TEMPORARY = re.compile(r"^\.(?P<name>.+)\.[a-z0-9_]{8}\.tmp$")
_UNLOCKED_AGE = 3600.0           # without fcntl: a temporary older than this (seconds) counts as stale


def _umask():
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o077)       # the brief change is restrictive, never permissive
    os.umask(mask)
    return mask


def _new_temporary(path):
    """(fd, name) of a new temporary file beside ``path``, flocked through ``fd``, with the mode
    ``open(path, "w")`` would give it (the old file's, else ``0o666`` less the umask)."""
    directory = os.path.dirname(os.path.abspath(path))
    while True:
        fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(path)}.", suffix=".tmp", dir=directory)
        if fcntl is None:
            break
        fcntl.flock(fd, fcntl.LOCK_EX)
        if os.fstat(fd).st_nlink:
            break
        os.close(fd)             # a cleaner took it for stale between mkstemp and the lock: take another name
    try:
        try:
            mode = stat.S_IMODE(os.stat(path).st_mode)
        except OSError:
            mode = 0o666 & ~_umask()
        os.chmod(tmp, mode)
    except BaseException:
        _discard(fd, tmp)
        raise
    return fd, tmp


def _discard(fd, tmp):
    """Remove the temporary ``tmp`` (still locked through ``fd``), then close ``fd``."""
    try:
        if os.path.exists(tmp):
            os.remove(tmp)
    finally:
        os.close(fd)


@contextlib.contextmanager
def atomic_write(path, mode="w", encoding="utf-8", newline=None, durable=True):
    """Write ``path`` all at once: a context manager giving a file object on a temporary file beside it.

    On a clean exit the file is flushed, fsynced (``durable``) and renamed over
    ``path`` (``os.replace``), so readers see the old file or the complete new one,
    never half a file; on an exception the temporary is removed and ``path`` is
    untouched. ``mode`` is ``"w"`` (text, ``encoding`` and ``newline`` as in
    ``open``) or ``"wb"``. The new file gets the permissions ``open`` would give
    it. A write killed midway leaves only a temporary ``.<name>.<random>.tmp``,
    which :func:`remove_stale_temporaries` recognises.

    ``with atomic_write("out/vocab.txt") as f: f.write(text)``
    """
    if mode not in ("w", "wb"):
        raise ValueError(f"atomic_write: mode must be 'w' or 'wb', got {mode!r}")
    options = {} if mode == "wb" else {"encoding": encoding, "newline": newline}
    with atomic_path(path, durable) as tmp, open(tmp, mode, **options) as f:
        yield f


@contextlib.contextmanager
def atomic_path(path, durable=True):
    """:func:`atomic_write` for writers that open a file by name (a video muxer, an external tool):
    yields the name of an empty temporary file beside ``path`` to write to, renamed over ``path``
    on a clean exit and removed on an exception."""
    path = os.fspath(path)
    fd, tmp = _new_temporary(path)
    try:
        yield tmp
        if durable:
            with open(tmp, "rb") as f:
                os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        _discard(fd, tmp)
        raise
    os.close(fd)
    if durable:
        _fsync_directory(os.path.dirname(os.path.abspath(path)))


def _fsync_directory(directory):
    """Make the rename durable where the platform allows opening a directory."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def remove_stale_temporaries(directory, name=None):
    """Remove the temporaries of :func:`atomic_write` / :func:`atomic_path` in ``directory`` (those of
    the file ``name`` only, when given) that no live process is writing: left by a killed write.
    A temporary being written is never touched. Returns the removed paths, sorted."""
    try:
        entries = os.listdir(directory)
    except OSError:
        return []
    removed = []
    for entry in sorted(entries):
        match = _TEMPORARY.match(entry)
        if match is None or (name is not None and match.group("name") != name):
            continue
        candidate = os.path.join(directory, entry)
        if _remove_if_unlocked(candidate):
            removed.append(candidate)
    return removed


def _remove_if_unlocked(candidate):
    try:
        fd = os.open(candidate, os.O_RDONLY)
    except OSError:
        return False
    try:
        if fcntl is None:
            if time.time() - os.fstat(fd).st_mtime < _UNLOCKED_AGE:
                return False
        else:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                return False     # its writer is alive
        held, now = os.fstat(fd), os.stat(candidate)
        if (held.st_ino, held.st_dev) != (now.st_ino, now.st_dev) or not stat.S_ISREG(now.st_mode):
            return False
        os.unlink(candidate)
        return True
    except OSError:
        return False             # renamed into place or removed meanwhile
    finally:
        os.close(fd)
