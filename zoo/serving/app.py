"""The Starlette application of ``oar serve``: its routes, and how every outcome becomes a JSON answer.

Routes (``docs/SERVING.md`` has the reference):

- ``POST /v1/models/{name}:predict``  ``{"instances": [...]}`` -> ``{"predictions": [...]}``
- ``POST /predict/{name}``  PaddleHub's ``{"text": [...]}`` -> ``{"status": "0", "msg": "", "results": [...]}``
- ``GET /v1/models``, ``GET /v1/models/{name}``, ``GET /healthz``, ``GET /readyz``, ``GET /metrics``

A refusal is ``{"error": …, "detail": …}`` with its status (400 bad input,
403 a path the server may not read, 404 unknown model or route, 405 a route
asked with another method, with ``Allow``, 413 body too large, 503 model not
ready or queue full, with ``Retry-After``, 504 past the timeout); a failure of
the server's own is a 500 with no traceback (the traceback goes to the server's
log). No answer names a server path: what the client sent (its field, its path
string) or a word for the server's folder stands in its place. A client that
goes away before its body is read is a debug line in the log and a count in
``oar_serving_client_disconnects_total``. Models load on a thread after
start-up, so ``/healthz`` answers at once and ``/readyz`` turns 200 when every
model has run its warm-up batch.
"""
import asyncio
import contextlib
import logging
import shutil
import sys
import tempfile
import threading
import time

from threadpoolctl import threadpool_limits
from starlette.applications import Starlette
from starlette.convertors import Convertor, register_url_convertor
from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from framework.errors import InputError, UserError
from framework.fetch import oar_home
from framework.redact import RedactingFilter

from ..catalog import ROOT
from .batcher import QueueFull
from .instances import (RequestError, ScratchFiles, decode_instances, hide_paths, invalid, paddlehub_instances,
                        parse_body, read_instances)
from .metrics import CONTENT_TYPE_LATEST, UNKNOWN_MODEL, ServingMetrics
from .models import ServedModel, served_models

__all__ = ["create_app", "Server"]

log = logging.getLogger("oar.serve")


class Server:
    """What the routes share: the options, the served models by name, the metrics and a scratch folder."""

    def __init__(self, models, options):
        self.options, self.metrics = options, ServingMetrics()
        self.models = {name: ServedModel(name, options, self.metrics, model) for name, model in models.items()}
        self.scratch = self._blas = None
        self.hidden = {}

    def start(self):
        """Limit BLAS to ``blas_threads``, make the scratch folder and load the models on a thread of their own,
        one after the other."""
        self._blas = threadpool_limits(self.options.blas_threads, user_api="blas")
        self.scratch = tempfile.mkdtemp(prefix="oar-serve-")
        self.hidden = {folder: word for folder, word in ((self.options.allow_path, "<allowed folder>"),
                                                         (self.scratch, "<scratch folder>"), (ROOT, "<oar>"),
                                                         (oar_home(), "$OAR_HOME")) if folder}
        threading.Thread(target=lambda: [model.load() for model in self.models.values()], name="model-loader",
                         daemon=True).start()

    def stop(self):
        """Finish every queued request, remove the scratch folder and restore the BLAS threads."""
        for model in self.models.values():
            model.stop()
        shutil.rmtree(self.scratch, ignore_errors=True)
        self._blas.restore_original_limits()

    def model(self, name):
        """The served model ``name``; a 404 that lists the served names."""
        if name not in self.models:
            raise RequestError(404, "unknown model", f"model {name!r} is not served here; served: "
                                                     f"{', '.join(self.models)}")
        return self.models[name]

    async def predict(self, model, instances, field):
        """The results of ``instances`` (raw JSON values) on ``model``, every failure as a RequestError."""
        scratch = ScratchFiles(self.scratch, self.hidden)
        try:
            inputs = decode_instances(instances, model.kind, self.options, scratch, field)
            if model.state != "ready":
                why = f"failed to load: {scratch.describe(model.reason)}" if model.state == "failed" else "is loading"
                raise RequestError(503, "model not ready", f"model {model.name} {why}", {"Retry-After": "1"})
            return await model.batcher.submit(inputs, self.options.timeout_s)
        except QueueFull as err:
            raise RequestError(503, "overloaded", f"model {model.name}: {err}; retry later",
                               {"Retry-After": "1"}) from None
        except asyncio.TimeoutError:
            raise RequestError(504, "timeout", f"model {model.name}: no result within "
                                               f"{self.options.timeout_s:g} s; the request was dropped") from None
        except InputError as err:
            where = field if err.index is None else f"{field}[{err.index}]"
            raise invalid(where, scratch.describe(err.message)) from None
        except UserError as err:
            raise invalid(field, scratch.describe(str(err))) from None
        except RequestError:
            raise
        except Exception:
            log.exception("model %s failed on a request", model.name)
            raise RequestError(500, "internal error", f"model {model.name} failed on this request; the server "
                                                      f"log has the details") from None
        finally:
            scratch.remove()

    def describe(self, model):
        """``model.describe()``, a failed model's reason naming no server path."""
        info = model.describe()
        if "reason" in info:
            info["reason"] = hide_paths(info["reason"], self.hidden)
        return info


def _answer(err):
    return JSONResponse(err.body(), status_code=err.status, headers=err.headers)


async def _read_body(request, limit):
    """The request's body, refused with 413 once it is longer than ``limit`` bytes."""
    too_large = RequestError(413, "body too large", f"body: over the server's limit of {limit} bytes")
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        raise too_large
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise too_large
        chunks.append(chunk)
    return b"".join(chunks)


def _prediction_route(read, wrap):
    """A prediction endpoint: ``read(body, model) -> (instances, field name)``, ``wrap(results) -> answer``."""
    async def endpoint(request):
        started, server = time.perf_counter(), request.app.state.server
        name = request.path_params["name"]
        label = name if name in server.models else UNKNOWN_MODEL
        try:
            model = server.model(name)
            body = parse_body(await _read_body(request, server.options.max_body_bytes))
            instances, field = read(body, model, server.options)
            response = JSONResponse(wrap(await server.predict(model, instances, field)))
        except RequestError as err:
            response = _answer(err)
        except ClientDisconnect:                # nobody is left to answer: a count and a debug line, no traceback
            log.debug("a client of model %s went away before its request body was read", label)
            server.metrics.client_disconnects.labels(label).inc()
            return Response(status_code=400)
        server.metrics.answered(label, response.status_code, time.perf_counter() - started)
        return response
    return endpoint


predict_v1 = _prediction_route(lambda body, model, options: (read_instances(body, options.max_instances), "instances"),
                               lambda results: {"predictions": results})
predict_paddlehub = _prediction_route(
    lambda body, model, options: (paddlehub_instances(body, model.kind, options.max_instances), "text"),
    lambda results: {"status": "0", "msg": "", "results": results})


async def list_models(request):
    """``{"models": [{"name", "task", "version", "state", "ready"}, …]}``."""
    server = request.app.state.server
    return JSONResponse({"models": [server.describe(m) for m in server.models.values()]})


async def model_status(request):
    """One model's description (200 whether ready or not; 404 for a model not served)."""
    server = request.app.state.server
    try:
        return JSONResponse(server.describe(server.model(request.path_params["name"])))
    except RequestError as err:
        return _answer(err)


async def healthz(request):
    """200 while the server runs."""
    return JSONResponse({"status": "ok"})


async def readyz(request):
    """200 once every model has loaded and answered its warm-up batch, else 503; the models' states either way."""
    server = request.app.state.server
    models = [server.describe(m) for m in server.models.values()]
    ready = all(m["ready"] for m in models)
    return JSONResponse({"ready": ready, "models": models}, status_code=200 if ready else 503)


async def metrics(request):
    """The Prometheus exposition of the server's metrics."""
    return Response(request.app.state.server.metrics.render(), media_type=CONTENT_TYPE_LATEST)


async def _http_error(request, exc):
    if exc.status_code == 404:
        error, detail = "not found", f"no route {request.method} {request.url.path}"
    elif exc.status_code == 405:
        allowed = (exc.headers or {}).get("Allow", "")
        error, detail = "method not allowed", f"{request.url.path} takes {allowed}, not {request.method}"
    else:
        error, detail = "http error", exc.detail
    return JSONResponse({"error": error, "detail": detail}, status_code=exc.status_code, headers=exc.headers)


async def _server_error(request, exc):
    return JSONResponse({"error": "internal error", "detail": "the server failed on this request; its log has "
                                                              "the details"}, status_code=500)


class ModelName(Convertor):
    """A model name in a route: no ``/`` and no ``:``, so ``GET /v1/models/NAME:predict`` is the predict route
    asked with the wrong method (405), not the status of a model called ``NAME:predict``."""

    regex = "[^/:]+"

    def convert(self, value):
        return value

    def to_string(self, value):
        return value


register_url_convertor("oar_model", ModelName())

ROUTES = [
    Route("/v1/models/{name:oar_model}:predict", predict_v1, methods=["POST"]),
    Route("/predict/{name}", predict_paddlehub, methods=["POST"]),
    Route("/v1/models", list_models, methods=["GET"]),
    Route("/v1/models/{name:oar_model}", model_status, methods=["GET"]),
    Route("/healthz", healthz, methods=["GET"]),
    Route("/readyz", readyz, methods=["GET"]),
    Route("/metrics", metrics, methods=["GET"]),
]


def _log_to_stderr():
    if not log.handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("oar serve: %(message)s"))
        handler.addFilter(RedactingFilter())         # no credential a message quotes reaches the log
        log.addHandler(handler)
        log.setLevel(logging.INFO)


def create_app(models, options):
    """The Starlette application serving ``models`` with :class:`~zoo.serving.options.ServeOptions` ``options``:
    what ``oar serve`` takes (zoo names, run or export directories, ``NAME=DIR``), or the ``{route name:
    model}`` of :func:`~zoo.serving.models.served_models` (an unknown model raises its error now)."""
    _log_to_stderr()
    server = Server(models if isinstance(models, dict) else served_models(models), options)

    @contextlib.asynccontextmanager
    async def lifespan(app):
        server.start()
        try:
            yield
        finally:
            await asyncio.to_thread(server.stop)

    app = Starlette(routes=ROUTES, lifespan=lifespan,
                    exception_handlers={HTTPException: _http_error, Exception: _server_error})
    app.state.server = server
    return app
