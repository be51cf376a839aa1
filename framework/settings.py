"""The one reader of the environment settings oar takes (``OAR_*``, and the OpenMP/BLAS thread counts it follows).

Each setting is read where it is used, through one of these functions, and
checked there: a value the setting cannot take is one :class:`SettingError`
naming the variable, what it takes and what it holds
(``OAR_NUM_THREADS must be a positive integer, got 'abc'``), which the ``oar``
command prints as one line. A variable that is unset or blank counts as unset.
"""
import math
import os

from .errors import UserError

__all__ = ["SettingError", "env_text", "env_int", "env_float", "env_choice", "env_flag", "env_list", "env_counts"]

_TRUE = ("1", "true", "yes", "on")
_FALSE = ("0", "false", "no", "off")
_MAX_INT = 2 ** 31 - 1          # no count or size oar reads from the environment is larger


class SettingError(UserError, ValueError):
    """An environment variable holding a value its setting cannot take; the message names the variable."""


def env_text(name, default=None):
    """The value of the environment variable ``name`` with surrounding blanks removed, or ``default`` when it is
    unset or blank."""
    value = os.environ.get(name)
    if value is None or not value.strip():
        return default
    return value.strip()


def env_int(name, default=None, low=1, high=_MAX_INT):
    """The int in ``name`` (``default`` when unset), which must lie in [``low``, ``high``]; SettingError else."""
    text = env_text(name)
    if text is None:
        return default
    try:
        value = int(text)
    except ValueError:
        value = None
    if value is None or value < low or value > high:
        raise SettingError(f"{name} must be {_int_range(low, high)}, got {text!r}")
    return value


def _int_range(low, high):
    if low == 1 and high == _MAX_INT:
        return "a positive integer"
    if high == _MAX_INT:
        return f"an integer of at least {low}"
    return f"an integer in [{low}, {high}]"


def env_float(name, default=None, low=None, positive=False):
    """The finite number in ``name`` (``default`` when unset): above 0 when ``positive``, at least ``low`` when
    given; SettingError else (``nan`` and ``inf`` included)."""
    text = env_text(name)
    if text is None:
        return default
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or (positive and value <= 0) or (low is not None and value < low):
        what = "a positive number" if positive else ("a number" if low is None else f"a number of at least {low:g}")
        raise SettingError(f"{name} must be {what}, got {text!r}")
    return value


def env_choice(name, choices, default):
    """One of ``choices`` (lowercase strings) named by ``name``, case-insensitively; ``default`` when unset."""
    text = env_text(name)
    if text is None:
        return default
    if text.lower() not in choices:
        raise SettingError(f"{name} must be one of {', '.join(choices)}, got {text!r}")
    return text.lower()


def env_flag(name, default=False):
    """True or False as ``name`` says (1/true/yes/on, 0/false/no/off, any case); ``default`` when unset."""
    text = env_text(name)
    if text is None:
        return default
    if text.lower() in _TRUE:
        return True
    if text.lower() in _FALSE:
        return False
    raise SettingError(f"{name} must be one of {', '.join(_TRUE + _FALSE)}, got {text!r}")


def env_list(name, item=str, what="names"):
    """The comma-separated items of ``name``, each made by ``item`` (e.g. ``int``), blanks dropped; an empty list
    when unset. An item ``item`` refuses (ValueError) is a SettingError naming ``what`` the list holds."""
    items = []
    for part in (env_text(name) or "").split(","):
        if part.strip():
            try:
                items.append(item(part.strip()))
            except ValueError:
                raise SettingError(f"{name} must be a comma-separated list of {what}, got "
                                   f"{os.environ.get(name)!r}") from None
    return items


def _count(text):
    value = int(text)
    if not 1 <= value <= _MAX_INT:
        raise ValueError(text)
    return value


def env_counts(name, default=None):
    """The positive ints of the comma-separated list in ``name`` (``default`` when unset or empty)."""
    return env_list(name, _count, "positive integers") or default
