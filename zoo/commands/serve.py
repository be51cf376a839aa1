"""``oar serve NAME …``: serve zoo models over HTTP until SIGTERM or Ctrl-C (the flags: :mod:`zoo.serving.options`)."""
from ..usage import UsageError

__all__ = ["add_arguments", "run"]


def add_arguments(parser):
    from ..serving.options import add_arguments as serve_arguments
    serve_arguments(parser)


def run(args):
    """Serve zoo models over HTTP (``/v1/models/NAME:predict`` and the rest) until SIGTERM or Ctrl-C."""
    from ..serving.options import ServeOptionError, from_args
    try:
        options = from_args(args)
    except ServeOptionError as err:
        raise UsageError(str(err)) from None
    from ..serving.server import serve as run_server
    return run_server(args.names, options)
