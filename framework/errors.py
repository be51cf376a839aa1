"""The one base class of the mistakes a user can make, and the way they are shown.

Every error that names something the user gave — a config key, an input file
and line, a video, a weights file, a model name — derives from ``UserError``
(besides its usual built-in base, so ``except ValueError`` keeps working).
The ``oar`` command catches ``UserError`` once, at the top, and prints it as
one line ``oar: error: …``; anything else is a bug and keeps its traceback.
"""
__all__ = ["UserError", "InputError", "describe_os_error"]


class UserError(Exception):
    """A mistake in what the user gave (input, config, file, name): shown as one line, never a traceback."""

    def __str__(self):
        return str(self.args[0]) if self.args else ""


class InputError(UserError, ValueError):
    """An input to predict on that cannot be used: wrong kind, unreadable file, bad encoding, wrong shape."""


def describe_os_error(err):
    """One line for an ``OSError`` about a path the user gave, e.g. ``cannot write outputs/x: Not a directory``."""
    where = f" {err.filename}" if getattr(err, "filename", None) else ""
    if getattr(err, "filename2", None):
        where += f" -> {err.filename2}"
    return f"{err.strerror or type(err).__name__}:{where}" if where else str(err)
