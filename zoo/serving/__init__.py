"""``oar serve``: an HTTP inference server for zoo models (Starlette + uvicorn), with dynamic batching,
health, readiness and Prometheus metrics.

- :mod:`zoo.serving.options`: the settings and the command's flags (standard library only);
- :mod:`zoo.serving.instances`: request bodies -> task inputs, and every refusal of a client's mistake;
- :mod:`zoo.serving.batcher`: merging concurrent requests into batches on a worker thread per model;
- :mod:`zoo.serving.models`: loading, warm-up and state of each served model;
- :mod:`zoo.serving.metrics`: the Prometheus metrics;
- :mod:`zoo.serving.app`: the routes; :mod:`zoo.serving.server`: running them under uvicorn.

Importing this package imports none of the ``serve`` extra's libraries; ``zoo.serve(names, **options)``
(:func:`zoo.serving.server.serve`) does.
"""
