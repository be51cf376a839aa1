"""The server's Prometheus metrics (prometheus-client), served at ``GET /metrics``.

- ``oar_serving_requests_total{model, code}``: answered prediction requests;
- ``oar_serving_errors_total{model, code}``: those answered 4xx or 5xx;
- ``oar_serving_request_latency_seconds{model}``: time from the request's arrival to its answer;
- ``oar_serving_batch_size{model}``: instances per batch the batcher formed;
- ``oar_serving_queue_depth{model}``: requests waiting;
- ``oar_serving_client_disconnects_total{model}``: requests whose client went away before its body was read.

A request for a model the server does not serve counts under ``model="unknown"``
(a client cannot create label values); a label is shown through
``framework.redact.redact``. With ``--workers N`` every process writes
its values to the folder named by ``PROMETHEUS_MULTIPROC_DIR`` and ``/metrics``
adds them up (prometheus-client's multiprocess mode; the depth is the sum over
the live processes).
"""
import os

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client import multiprocess

from framework.redact import redact

__all__ = ["ServingMetrics", "UNKNOWN_MODEL", "CONTENT_TYPE_LATEST"]

UNKNOWN_MODEL = "unknown"
LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)
BATCH_BUCKETS = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024)


class ServingMetrics:
    """The metrics of one server (their own registry, so several servers can live in one process)."""

    def __init__(self):
        self.registry = CollectorRegistry()
        self.requests = Counter("oar_serving_requests", "Prediction requests answered, by model and HTTP status",
                                ["model", "code"], registry=self.registry)
        self.errors = Counter("oar_serving_errors", "Prediction requests answered with an error status",
                              ["model", "code"], registry=self.registry)
        self.latency = Histogram("oar_serving_request_latency_seconds", "Seconds from a request's arrival to its "
                                 "answer", ["model"], buckets=LATENCY_BUCKETS, registry=self.registry)
        self.batch_size = Histogram("oar_serving_batch_size", "Instances per batch the batcher formed", ["model"],
                                    buckets=BATCH_BUCKETS, registry=self.registry)
        self.client_disconnects = Counter("oar_serving_client_disconnects", "Requests whose client went away "
                                          "before the body was read", ["model"], registry=self.registry)
        self.queue_depth = Gauge("oar_serving_queue_depth", "Requests waiting for their batch", ["model"],
                                 multiprocess_mode="livesum", registry=self.registry)

    def answered(self, model, code, seconds):
        """Count one answered request of ``model`` with HTTP status ``code`` that took ``seconds`` (the label
        shown through ``framework.redact.redact``, as every label)."""
        model = redact(model)
        self.requests.labels(model, str(code)).inc()
        if code >= 400:
            self.errors.labels(model, str(code)).inc()
        self.latency.labels(model).observe(seconds)

    def render(self):
        """The exposition text of every metric (of every worker process in multiprocess mode), as bytes."""
        if "PROMETHEUS_MULTIPROC_DIR" in os.environ:
            registry = CollectorRegistry()
            multiprocess.MultiProcessCollector(registry)
            return generate_latest(registry)
        return generate_latest(self.registry)
