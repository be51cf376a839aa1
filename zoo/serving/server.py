"""Running the application under uvicorn: one process, or ``workers`` processes each with its own models.

SIGTERM (or Ctrl-C) stops accepting connections, lets the requests already
received finish (their batches included), stops the batchers and returns.
With ``workers > 1`` uvicorn's supervisor starts the processes (each builds the
application from the options this process leaves in ``OAR_SERVE``) and restarts
one that dies; their metrics are added up through a shared folder
(:mod:`zoo.serving.metrics`).
"""
import json
import os
import signal
import tempfile
import threading

import uvicorn

from framework.errors import UserError

from .app import create_app
from .models import served_models
from .options import ServeOptions

__all__ = ["serve", "app_from_environment"]

OPTIONS_ENV = "OAR_SERVE"


class ServeError(UserError, OSError):
    """The server could not start (the address is in use, or not one this machine has)."""


def app_from_environment():
    """The application a worker process builds from the names and options in ``OAR_SERVE``."""
    settings = json.loads(os.environ[OPTIONS_ENV])
    return create_app(settings["models"], ServeOptions.from_json(settings["options"]))


def _run(target, options):
    try:
        uvicorn.run(target, factory=isinstance(target, str), host=options.host, port=options.port,
                    workers=options.workers, access_log=False, log_level="info")
    except SystemExit as stop:                 # uvicorn's way of saying it could not start; it logged why
        if stop.code:
            raise ServeError(f"could not serve on {options.host}:{options.port} (see the message above)") from None


def serve(names, options=None, **settings):
    """Serve the models ``names`` over HTTP until SIGTERM or Ctrl-C (``oar serve``): zoo names, run or export
    directories (served under their base names) or ``NAME=DIR`` (:func:`~zoo.serving.models.served_models`).

    ``options``: a :class:`~zoo.serving.options.ServeOptions`, or its fields as keywords
    (``serve(["lac_pku", "outputs/my_reviews"], port=8866, max_batch_size=32)``). An unknown model raises
    its error before anything listens.
    """
    options = options or ServeOptions(**settings)
    models = served_models(names)
    # uvicorn re-raises the SIGTERM it has drained on once it is done; by then there is nothing left to stop
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, lambda signum, frame: None)
    if options.workers == 1:
        _run(create_app(models, options), options)
        return 0
    with tempfile.TemporaryDirectory(prefix="oar-serve-metrics-") as folder:
        os.environ["PROMETHEUS_MULTIPROC_DIR"] = folder
        os.environ[OPTIONS_ENV] = json.dumps({"models": models, "options": options.to_json()})
        _run(f"{__name__}:app_from_environment", options)
    return 0
