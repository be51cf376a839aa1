"""The one base class of the mistakes a user can make, and the way they are shown.

Every error that names something the user gave — a config key, an input file
and line, a video, a weights file, a model name — derives from ``UserError``
(besides its usual built-in base, so ``except ValueError`` keeps working).
The ``oar`` command catches ``UserError`` once, at the top, and prints it as
one line ``oar: error: …``; anything else is a bug and keeps its traceback.
"""
__all__ = ["UserError", "InputError", "MissingFileError", "FileFormatError", "ChecksumError", "describe_os_error"]


class UserError(Exception):
    """A mistake in what the user gave (input, config, file, name): shown as one line, never a traceback."""

    def __str__(self):
        return str(self.args[0]) if self.args else ""


class InputError(UserError, ValueError):
    """An input to predict on that cannot be used: wrong kind, unreadable file, bad encoding, wrong shape.

    ``index`` is the input's position in the list given to ``predict`` (0-based), when the error is about
    one input; ``str`` then reads ``input 3: …``, and ``located(where)`` restates it for a caller that knows
    better where that input came from (``oar run`` says ``reviews.txt, line 7: …``).
    """

    def __init__(self, message, index=None):
        super().__init__(message)
        self.message, self.index = message, index

    def __str__(self):
        return self.message if self.index is None else f"input {self.index}: {self.message}"

    def located(self, where):
        """The same error, about the input at ``where`` (a description such as ``'stdin, line 4'``)."""
        return InputError(f"{where}: {self.message}")


class MissingFileError(UserError, FileNotFoundError):
    """A file or folder the user named (in a config, a flag, an input) does not exist; still a FileNotFoundError."""


class FileFormatError(UserError, ValueError):
    """A file that cannot be read as what it should be (truncated, garbage, another format); the message
    names the file and what the reader found."""


class ChecksumError(FileFormatError):
    """A file whose sha256 is not the one recorded for it: changed or damaged since it was written."""


def describe_os_error(err):
    """One line for an ``OSError`` about a path the user gave, e.g. ``cannot write outputs/x: Not a directory``."""
    where = f" {err.filename}" if getattr(err, "filename", None) else ""
    if getattr(err, "filename2", None):
        where += f" -> {err.filename2}"
    return f"{err.strerror or type(err).__name__}:{where}" if where else str(err)
