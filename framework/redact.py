"""Credentials are never shown: the one redaction of every message, log line and metric label oar writes.

- :func:`redact_url` is a URL as it may be shown: no ``user:password@``, no
  query string (signed URLs carry their tokens there), no fragment.
- :func:`redact` is any text (an error message, a log line, a label) with every
  URL in it so shown, and the value of every ``name=value`` or ``"name": value``
  whose name says it is a secret (``password``, ``token``, ``sig``, ``key``,
  ``X-Amz-Signature``, ``aws_secret_access_key`` …) replaced by ``***``.
- :func:`redact_options` is a copy of fsspec storage options (nested dicts
  too) with the values of such names replaced.
- :class:`RedactingFilter` applies :func:`redact` to every record a logging
  handler emits, its traceback included.

The ``oar`` command passes every error and warning line through :func:`redact`,
and every log handler oar installs carries a :class:`RedactingFilter`, so a
message built anywhere is safe to print even when it quotes what the user gave.
This module imports only the standard library.
"""
import logging
import re
import urllib.parse

__all__ = ["MASK", "is_secret_name", "redact_url", "redact", "redact_options", "RedactingFilter"]

MASK = "***"

# A name holds a secret when one of its parts (split at ``-``, ``_``, ``.``) is one of these words, or it ends
# in ``key`` alone or after one of the ``_KEY_KINDS`` (``aws_secret_access_key``, ``api-key``; not ``section.key``).
_SECRET_WORDS = frozenset({"password", "passwd", "pwd", "secret", "token", "sig", "signature", "credential",
                           "credentials", "apikey", "auth", "authorization", "sas", "passphrase"})
_KEY_KINDS = frozenset({"access", "api", "account", "private", "secret", "sas", "signing", "encryption", "master"})
_URL = re.compile(r"\b[A-Za-z][A-Za-z0-9+.-]+://[^\s'\"<>]+")
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]+://")
_USERINFO = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]+://)[^/@]*@")
# ``name=value`` or ``name: value``, the name quoted or not (a dict's repr, JSON); a bare ``key: …`` is prose
_PAIR = re.compile(r"""(?P<q1>['"]?)(?P<name>[A-Za-z][\w.-]*)(?P<q2>['"]?)(?P<sep>\s*[:=]\s*)(?P<open>['"]?)"""
                   r"""(?P<value>[^\s'",&;}\]]+)""")
_BEARER = re.compile(r"\b(Bearer|Basic)\s+[A-Za-z0-9._~+/=-]+", re.IGNORECASE)


def is_secret_name(name):
    """True when a setting or query parameter called ``name`` holds a secret (``token``, ``X-Amz-Signature`` …)."""
    if not isinstance(name, str):
        return False
    parts = [p for p in re.split(r"[-_.\s]+", name.strip().lower()) if p]
    if not parts:
        return False
    if any(p in _SECRET_WORDS for p in parts):
        return True
    return parts[-1] == "key" and (len(parts) == 1 or parts[-2] in _KEY_KINDS)


def redact_url(url):
    """``url`` as it may be shown: without ``user:password@``, query string and fragment (a path is kept as is)."""
    if not isinstance(url, str) or not _SCHEME.match(url):
        return url
    try:
        parts = urllib.parse.urlsplit(url)
    except ValueError:                          # a malformed netloc: drop everything after the path start
        return _USERINFO.sub(r"\1", url).split("?", 1)[0].split("#", 1)[0]
    host = parts.netloc.rpartition("@")[2]
    return urllib.parse.urlunsplit((parts.scheme, host, parts.path, "", ""))


def _pair(match):
    name, quoted = match.group("name"), match.group("q1") and match.group("q1") == match.group("q2")
    if not is_secret_name(name) or (":" in match.group("sep") and not quoted and name.lower() == "key"):
        return match.group(0)
    return f"{match.group('q1')}{name}{match.group('q2')}{match.group('sep')}{match.group('open')}{MASK}"


def redact(text):
    """``text`` with every URL shown through :func:`redact_url` and every secret ``name=value`` or
    ``'name': 'value'`` value replaced by ``***`` (anything else is kept)."""
    if not isinstance(text, str):
        text = str(text)
    text = _URL.sub(lambda m: redact_url(m.group(0)), text)
    text = _BEARER.sub(lambda m: f"{m.group(1)} {MASK}", text)
    return _PAIR.sub(_pair, text)


def redact_options(options):
    """A copy of ``options`` (fsspec storage options: a dict, possibly nested) with every secret value masked."""
    if isinstance(options, dict):
        return {k: MASK if is_secret_name(str(k)) and v is not None else redact_options(v) for k, v in options.items()}
    if isinstance(options, (list, tuple)):
        return type(options)(redact_options(v) for v in options)
    if isinstance(options, str):
        return redact(options)
    return options


class RedactingFilter(logging.Filter):
    """A logging filter that redacts each record's message and traceback (add it to a handler)."""

    def filter(self, record):
        """Replace the record's message (arguments merged) and its exception text with their redacted forms."""
        record.msg, record.args = redact(record.getMessage()), ()
        if record.exc_info:
            record.exc_text = redact(logging.Formatter().formatException(record.exc_info))
            record.exc_info = None
        return True
