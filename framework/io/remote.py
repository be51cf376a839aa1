"""Files by path or URL, through fsspec: ``s3://``, ``gs://``, ``http(s)://``, ``memory://``, ``file://`` …

Every file key of a dataset (``data.train.path``, list files, vocabularies,
shard lists) goes through :func:`open_file` / :func:`isfile`, so it takes a URL
as well as a local path. A plain path (no ``scheme://``) is opened with the
built-in ``open``, exactly as before; a URL is opened by fsspec, streaming
(HTTP without range requests, object stores in blocks), with the protocol's
own package (``s3fs``, ``gcsfs``; HTTP needs ``aiohttp``, installed with oar).

Credentials come only from where fsspec and the protocol's package look for
them (environment variables such as ``AWS_ACCESS_KEY_ID``, the fsspec config
folder, ``~/.aws``); oar never takes them as arguments and never prints them:
every message names a URL through :func:`safe_url` (:func:`framework.redact.redact_url`),
which drops a ``user:password@`` part and the query string (signed URLs carry
their tokens there). A URL that cannot be read is one :class:`RemoteFileError`
line.

**Time limits.** Every URL is opened with a connect and a read timeout
(:func:`storage_options`: aiohttp's for HTTP, botocore's for S3, gcsfs's), of
``$OAR_NETWORK_TIMEOUT`` seconds (default 60); a server that does not answer
in time is one :class:`RemoteFileError` line, whether it stalls while
connecting, before its headers or in the middle of a file.
"""
import asyncio
import io
import os
import re

from ..errors import MissingFileError, UserError
from ..timeouts import network_timeout
from ..redact import redact, redact_url

__all__ = ["RemoteFileError", "is_url", "safe_url", "open_file", "isfile", "read_bytes", "join", "storage_options"]

_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]+://")


class RemoteFileError(UserError, OSError):
    """A URL that cannot be read (no such host, refused, a server error, a protocol without its package);
    the message names the URL without credentials."""


def is_url(path):
    """True when ``path`` is a URL (``scheme://…``, at least two letters of scheme, so ``C:\\`` is a path)."""
    return isinstance(path, str) and bool(_URL.match(path))


def safe_url(url):
    """``url`` as it may be shown: no ``user:password@`` and no query string or fragment."""
    return redact_url(url) if is_url(url) else url


def _scrub(text, url):
    """``text`` (an exception's message) with ``url`` and any credentials in it replaced by the safe form."""
    text = redact(str(text).replace(url, safe_url(url)))
    return text.splitlines()[0] if text.strip() else text


def _reason(exc, url):
    """A short reason for ``exc``, raised while reading ``url``."""
    status = getattr(exc, "status", None) or getattr(exc, "code", None)
    if isinstance(status, int):
        return f"the server answered {status}"
    cause = exc
    while cause.__cause__ is not None or cause.__context__ is not None:     # aiohttp wraps the socket error
        if isinstance(cause, OSError) and cause.strerror:
            break
        cause = cause.__cause__ or cause.__context__
    if isinstance(cause, (TimeoutError, asyncio.TimeoutError)) or "timeout" in type(cause).__name__.lower():
        return f"no answer within {network_timeout():g} s (OAR_NETWORK_TIMEOUT)"
    message = getattr(cause, "strerror", None) or str(cause) or type(cause).__name__
    return _scrub(message, url)


def _fsspec():
    try:
        import fsspec
    except ImportError:                                       # pragma: no cover - fsspec is a core dependency
        raise RemoteFileError("reading URLs needs fsspec: pip install fsspec") from None
    return fsspec


def storage_options(url):
    """The fsspec options oar adds for ``url``'s protocol: connect and read timeouts (:func:`network_timeout`)."""
    protocol, seconds = url.split(":", 1)[0].lower(), network_timeout()
    if protocol in ("http", "https"):
        import aiohttp
        return {"client_kwargs": {"timeout": aiohttp.ClientTimeout(total=None, connect=seconds,
                                                                   sock_connect=seconds, sock_read=seconds)}}
    if protocol in ("s3", "s3a"):
        return {"config_kwargs": {"connect_timeout": seconds, "read_timeout": seconds}}
    if protocol in ("gs", "gcs"):
        return {"timeout": seconds}
    return {}


class _Guarded(io.RawIOBase):
    """A URL's file object whose read errors (a timeout, a dropped connection) are one
    :class:`RemoteFileError` line naming the URL."""

    def __init__(self, raw, url, what):
        super().__init__()
        self.raw, self.url, self.what = raw, url, what

    def readable(self):
        return True

    def readinto(self, buffer):
        try:
            data = self.raw.read(len(buffer))
        except UserError:
            raise
        except Exception as exc:
            raise RemoteFileError(f"cannot read {self.what} {safe_url(self.url)}: {_reason(exc, self.url)}") \
                from None
        buffer[:len(data)] = data
        return len(data)

    def close(self):
        try:
            self.raw.close()
        finally:
            super().close()


def _open_url(url, mode, what, streaming):
    fsspec = _fsspec()
    options = {"block_size": 0} if streaming and url.split(":", 1)[0] in ("http", "https") else {}
    try:
        fs, target = fsspec.core.url_to_fs(url, **storage_options(url))  # no glob expansion: '?' is a query
        return io.BufferedReader(_Guarded(fs.open(target, mode, **options), url, what), 1 << 20)
    except FileNotFoundError as exc:
        cause = exc.__cause__                              # fsspec's HTTP says "not found" for any failure
        if cause is not None and getattr(cause, "status", None) not in (None, 404, 410):
            raise RemoteFileError(f"cannot read {what} {safe_url(url)}: {_reason(cause, url)}") from None
        if cause is not None and getattr(cause, "status", None) is None and not isinstance(cause, FileNotFoundError):
            raise RemoteFileError(f"cannot reach {what} {safe_url(url)}: {_reason(cause, url)}") from None
        raise MissingFileError(f"{what} not found: {safe_url(url)}") from None
    except ImportError as exc:
        protocol = url.split(":", 1)[0]
        raise RemoteFileError(f"cannot read {what} {safe_url(url)}: the {protocol}:// protocol needs a package "
                              f"that is not installed ({_scrub(exc, url)})") from None
    except ValueError as exc:
        if "protocol" in str(exc).lower():
            raise RemoteFileError(f"cannot read {what} {safe_url(url)}: {_scrub(exc, url)}") from None
        raise
    except Exception as exc:                                   # aiohttp, botocore, socket errors: one line
        raise RemoteFileError(f"cannot read {what} {safe_url(url)}: {_reason(exc, url)}") from None


def open_file(path, mode="rb", what="file", streaming=True, encoding=None):
    """An open file object for ``path`` (a local path or a URL), ``mode`` ``"rb"`` or ``"r"``.

    A local path opens with ``open``; a missing one is :class:`MissingFileError`
    (``what`` names it: "label file", "shard" …). A URL opens through fsspec;
    ``streaming`` reads HTTP front to back without range requests (what a
    tar stream or a line reader needs). Errors reading a URL are
    :class:`RemoteFileError`, one line naming the URL without its credentials.
    """
    if mode not in ("rb", "r"):
        raise ValueError(f"open_file: mode must be 'rb' or 'r', got {mode!r}")
    if not is_url(path):
        if os.path.isdir(path):
            raise MissingFileError(f"{what} {path} is a folder, not a file")
        if not os.path.isfile(path):
            raise MissingFileError(f"{what} not found: {path}")
        return open(path, mode, encoding=encoding if mode == "r" else None)
    raw = _open_url(path, "rb", what, streaming)
    return io.TextIOWrapper(raw, encoding=encoding or "utf-8") if mode == "r" else raw


def read_bytes(path, what="file"):
    """The whole content of ``path`` (a local path or a URL) as bytes; errors as :func:`open_file`."""
    with open_file(path, "rb", what=what) as f:
        try:
            return f.read()
        except (UserError, MemoryError):
            raise
        except Exception as exc:
            if not is_url(path):
                raise
            raise RemoteFileError(f"cannot read {what} {safe_url(path)}: {_reason(exc, path)}") from None


def isfile(path):
    """True when ``path`` names a file: ``os.path.isfile`` for a local path; for a URL, whether fsspec finds
    a file there (False when it cannot tell, e.g. a server that is not reachable, so the read that follows
    gives the one-line reason)."""
    if not is_url(path):
        return os.path.isfile(path)
    fsspec = _fsspec()
    try:
        fs, target = fsspec.core.url_to_fs(path, **storage_options(path))
        return bool(fs.isfile(target))
    except Exception:
        return False


def join(base, name):
    """``name`` relative to the folder or URL prefix ``base`` (a URL or absolute path ``name`` is kept)."""
    if is_url(name) or os.path.isabs(name):
        return name
    if is_url(base):
        return base.rstrip("/") + "/" + name
    return os.path.join(base, name)
