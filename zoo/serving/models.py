"""The models one server serves: loading each (off the event loop), its warm-up batch, its state and batcher.

:func:`served_models` turns what ``oar serve`` is given (zoo names, run or
export directories, ``NAME=DIR``) into ``{route name: model}``, each model
resolved (:func:`zoo.resolver.resolve`) before anything listens. A
:class:`ServedModel` is ``loading`` until its task is loaded and has
answered one warm-up batch, then ``ready`` with a running
:class:`~zoo.serving.batcher.Batcher`; a model that fails to load is
``failed`` (its one-line reason kept) and the others serve on.
"""
import inspect
import logging
import os
import re
import tempfile

from framework.errors import UserError
from framework.redact import redact

from ..api import load
from ..card import CardError
from ..resolver import resolve
from ..tasks import task_spec
from .batcher import Batcher

__all__ = ["ServedModel", "load_task", "served_models"]

log = logging.getLogger("oar.serve")

_ROUTE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,127}")


def served_models(specs):
    """``{route name: model}`` of ``specs``: a zoo name serves under its name, a run or export directory under
    its base name, ``NAME=DIR`` (or ``NAME=zoo_name``) under ``NAME``; a directory is made absolute (worker
    processes load it too). Every model is resolved first, so an unknown one fails before anything listens;
    two models under one route name, or a route name a URL cannot carry, are a CardError."""
    models = {}
    for spec in [specs] if isinstance(specs, str) else specs:
        route, sep, model = str(spec).partition("=")
        if not sep:
            route, model = os.path.basename(os.path.normpath(spec)), spec
        if not _ROUTE_NAME.fullmatch(route):
            raise CardError(f"{spec!r:.80}: the route name {route!r:.80} must be letters, digits, '_', '.' or '-' "
                            f"(give NAME=DIR to choose one)")
        card = resolve(model)
        model = model if card.origin == "zoo" else os.path.abspath(model)
        if models.get(route, model) != model:
            raise CardError(f"two models would serve as {route!r}: {models[route]} and {model}; name them with "
                            f"NAME=DIR")
        models[route] = model
    return models


def load_task(name, options):
    """``zoo.load(name, device=…)``, with ``runtime=`` passed when the runtime is not the default and the
    zoo's ``load`` takes it (a ``UserError`` otherwise)."""
    keywords = {"device": options.device}
    if options.runtime != "oar":
        if "runtime" not in inspect.signature(load).parameters:
            raise UserError(f"--runtime {options.runtime}: this zoo loads models on the oar runtime only")
        keywords["runtime"] = options.runtime
    return load(name, **keywords)


class ServedModel:
    """One served model: its route ``name``, ``model`` (a zoo name or a directory), ``task`` (the task's
    name), ``version`` (the weights' sha256, None for a model its card loads from elsewhere), ``kind`` of
    instance, ``state`` and, once ready, ``batcher``."""

    def __init__(self, name, options, metrics, model=None):
        card = resolve(model or name)
        self.name, self.model, self.task, self.options, self.metrics = name, model or name, card.task, options, metrics
        self.version = card.version
        self.kind = task_spec(self.task).kind
        self.state, self.reason, self.batcher = "loading", None, None

    def load(self):
        """Load the task, run one warm-up batch and start the batcher; on failure the state is ``failed``."""
        try:
            task = load_task(self.model, self.options)
            with tempfile.TemporaryDirectory() as folder:
                task.predict(task_spec(self.task).example_inputs(folder))
        except Exception as err:                # noqa: BLE001 - one model's failure leaves the others serving
            self.state, self.reason = "failed", redact(str(err) if isinstance(err, UserError) else repr(err))
            log.error("model %s failed to load: %s", self.name, self.reason, exc_info=not isinstance(err, UserError))
            return
        label = redact(self.name)
        self.batcher = Batcher(task.predict, self.options.max_batch_size, self.options.max_delay_ms / 1000,
                               self.options.max_queue, on_batch=self.metrics.batch_size.labels(label).observe,
                               on_depth=self.metrics.queue_depth.labels(label).set, name=self.name)
        self.batcher.start()
        self.state = "ready"
        log.info("model %s ready", self.name)

    def stop(self):
        """Finish the queued requests and stop the batcher."""
        if self.batcher is not None:
            self.batcher.stop()

    def describe(self):
        """``{"name", "task", "version", "state", "ready"}`` (and ``"reason"`` when it failed to load)."""
        info = {"name": self.name, "task": self.task, "version": self.version, "state": self.state,
                "ready": self.state == "ready"}
        if self.reason:
            info["reason"] = self.reason
        return info
