"""The model zoo: catalog, task API, the `oar` command, benchmarks, the HTTP server.

``zoo.load(name)`` returns a ready Task (``zoo.load(DIR)`` that of an export
directory written by ``zoo.export(name, DIR)`` / ``oar export``); ``zoo.Task(task_name, model=None)``
picks the task's default model; ``zoo.serve(names, **options)`` serves models
over HTTP (``oar serve``).
"""
from .api import export, load, Task

__all__ = ["load", "export", "Task", "serve"]


def serve(names, options=None, **settings):
    """Serve zoo models over HTTP until SIGTERM or Ctrl-C: :func:`zoo.serving.server.serve` (needs the
    ``serve`` extra)."""
    from .serving.server import serve as run_server
    return run_server(names, options, **settings)
