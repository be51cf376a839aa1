"""The settings of one ``oar serve`` run: :class:`ServeOptions` and the command-line flags that fill it.

This module imports nothing beyond the standard library and ``framework.errors``,
so ``oar --help`` can list the flags without the ``serve`` extra installed.
"""
import dataclasses
import json
import os
from dataclasses import dataclass

from framework.errors import UserError

__all__ = ["ServeOptions", "ServeOptionError", "add_arguments", "from_args"]


class ServeOptionError(UserError, ValueError):
    """A server setting that cannot work (a port out of range, a zero batch size, a missing --allow_path)."""


@dataclass(frozen=True)
class ServeOptions:
    """How the server listens, batches, limits requests and loads its models (the flags of ``oar serve``)."""

    host: str = "127.0.0.1"
    port: int = 8866
    workers: int = 1
    max_batch_size: int = 64
    max_delay_ms: float = 5.0
    max_queue: int = 1024
    timeout_s: float = 30.0
    max_instances: int = 1024
    max_body_mb: float = 16.0
    max_text_len: int = 10_000
    allow_path: str = None
    runtime: str = "oar"
    device: str = "cpu"
    blas_threads: int = 1

    def __post_init__(self):
        if not 0 <= self.port <= 65535:
            raise ServeOptionError(f"--port must be between 0 and 65535, got {self.port}")
        for name in ("workers", "max_batch_size", "max_queue", "max_instances", "max_text_len", "blas_threads"):
            if getattr(self, name) < 1:
                raise ServeOptionError(f"--{name} must be at least 1, got {getattr(self, name)}")
        for name in ("timeout_s", "max_body_mb"):
            if not getattr(self, name) > 0:
                raise ServeOptionError(f"--{name} must be above 0, got {getattr(self, name)}")
        if not self.max_delay_ms >= 0:
            raise ServeOptionError(f"--max_delay_ms must be 0 or more, got {self.max_delay_ms}")
        if self.allow_path is not None:
            if not os.path.isdir(self.allow_path):
                raise ServeOptionError(f"--allow_path {self.allow_path}: not a directory")
            object.__setattr__(self, "allow_path", os.path.realpath(self.allow_path))

    @property
    def max_body_bytes(self):
        """``max_body_mb`` in bytes."""
        return int(self.max_body_mb * 1024 * 1024)

    def to_json(self):
        """The options as a JSON string (how worker processes receive them)."""
        return json.dumps(dataclasses.asdict(self))

    @classmethod
    def from_json(cls, text):
        """The options :meth:`to_json` wrote."""
        return cls(**json.loads(text))


_HELP = {
    "host": "address to listen on (default %(default)s, this machine only; 0.0.0.0 for every interface)",
    "port": "TCP port (default %(default)s; 0 picks a free one)",
    "workers": "server processes, each with its own copy of the models (default %(default)s)",
    "max_batch_size": "instances merged into one predict call (default %(default)s)",
    "max_delay_ms": "how long a batch waits for more requests under concurrent load (default %(default)s)",
    "max_queue": "requests waiting per model before new ones get 503 (default %(default)s)",
    "timeout_s": "seconds a request may wait for its result before it gets 504 (default %(default)s)",
    "max_instances": "instances per request (default %(default)s)",
    "max_body_mb": "request body size limit in MiB, else 413 (default %(default)s)",
    "max_text_len": "characters per text (default %(default)s)",
    "allow_path": "let video/image instances name files under this folder ({\"path\": …}); off by default",
    "runtime": "inference runtime (default %(default)s)",
    "device": "device the models run on (default %(default)s)",
    "blas_threads": "BLAS threads per process (default %(default)s: batching, not BLAS, keeps the cores busy)",
}
_CHOICES = {"runtime": ("oar", "onnxruntime"), "device": ("cpu", "gpu")}
_METAVARS = {"host": "HOST", "allow_path": "DIR", "runtime": None, "device": None}


def add_arguments(parser):
    """Declare ``oar serve NAME [NAME …]`` and one flag per :class:`ServeOptions` field on ``parser``."""
    parser.add_argument("names", nargs="+", metavar="MODEL",
                        help="models to serve: zoo names (`oar list`), run or export directories (served under "
                             "their base names), or NAME=DIR")
    for field in dataclasses.fields(ServeOptions):
        kind = field.type if field.type in (int, float) else str
        parser.add_argument(f"--{field.name}", type=kind, default=field.default, choices=_CHOICES.get(field.name),
                            metavar=_METAVARS.get(field.name, "N"), help=_HELP[field.name])


def from_args(args):
    """:class:`ServeOptions` from the parsed flags of :func:`add_arguments`."""
    return ServeOptions(**{field.name: getattr(args, field.name) for field in dataclasses.fields(ServeOptions)})
