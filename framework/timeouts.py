"""How long oar waits on the network: one setting, ``$OAR_NETWORK_TIMEOUT``, for every connect and every read
(downloads in :mod:`framework.fetch`, URLs in :mod:`framework.io.remote`, ``--address`` in :mod:`zoo.ray`).
Imports only the standard library and :mod:`framework.errors`."""
import os

from .errors import UserError

__all__ = ["TimeoutSettingError", "DEFAULT_TIMEOUT", "network_timeout"]

DEFAULT_TIMEOUT = 60.0      # seconds a connect or a read may take


class TimeoutSettingError(UserError, ValueError):
    """``$OAR_NETWORK_TIMEOUT`` is not a number of seconds > 0."""


def network_timeout():
    """Seconds a network connect or read may take: ``$OAR_NETWORK_TIMEOUT`` (default 60), a finite number > 0;
    anything else is one :class:`TimeoutSettingError` line naming the variable."""
    text = os.environ.get("OAR_NETWORK_TIMEOUT", "").strip()
    if not text:
        return DEFAULT_TIMEOUT
    try:
        seconds = float(text)
    except ValueError:
        seconds = float("nan")
    if not 0 < seconds < float("inf"):
        raise TimeoutSettingError(f"OAR_NETWORK_TIMEOUT={text!r}: give the seconds a network connect or read may "
                                  f"take, a number > 0")
    return seconds
