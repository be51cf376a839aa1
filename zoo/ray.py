"""Batch inference past one machine on Ray Data (the ``ray`` extra: ``pip install "oar[ray]"``).

oar runs no scheduler or cluster of its own: Ray Data reads the corpus, keeps
a pool of actors busy and writes the results; oar gives it a callable class.

- :class:`Predictor` loads a zoo model (or an ``oar export`` directory) once
  per actor and maps a batch of rows to result columns, through the task's one
  batching path (``Task.predict_iter``), so it plugs into Ray Data as Ray's
  docs show for other models::

      ds = ray.data.read_text("s3://bucket/corpus.txt")
      ds = ds.map_batches(Predictor, fn_constructor_kwargs={"name_or_dir": "lac_pku"},
                          batch_size=256, concurrency=8)
      ds.write_json("s3://bucket/tagged/")

- :func:`read_lines` is ``ray.data.read_text`` that also says where each line
  came from: columns ``text``, ``path`` (its file) and ``position`` (its
  0-based line number in that file), read streaming in blocks of
  ``block_lines``, so a single large file still feeds every actor.
- :func:`run` is ``oar run NAME --input_file URL --output URL --engine ray``:
  it writes JSONL shards whose rows are ``{"path", "position", "input",
  **result}`` (Parquet: the result as one JSON string column ``result``, so
  every model's results fit one schema), which join back into input order by ``(path,
  position)`` (:func:`read_results` does it). Paths and URLs are those Ray's
  readers take (local, ``s3://``, ``gs://``, ``https://`` …).

Faults are Ray's to handle: actors are created with ``max_restarts=-1`` and
``max_task_retries=-1``, so a dead actor is restarted and its batch redone;
results are written only by Ray's write tasks, once per block, so a line is
never lost or written twice (tested by killing an actor mid-run).
"""
import json
import os

from framework.engine.batching import WINDOW_BATCHES
from framework.errors import UserError

from .usage import UsageError

__all__ = ["Predictor", "read_lines", "run", "read_results", "add_arguments", "ray_available"]

RESULT_FORMATS = ("jsonl", "parquet")


def ray_available():
    """True when Ray Data can be imported."""
    try:
        import ray.data  # noqa: F401
    except ImportError:
        return False
    return True


def _ray():
    try:
        import ray
        import ray.data  # noqa: F401
    except ImportError:
        raise type("RayMissingError", (UserError, ImportError), {})(
            "--engine ray needs Ray Data: pip install \"oar[ray]\" (or pip install \"ray[data]\")") from None
    return ray


class Predictor:
    """A callable for ``Dataset.map_batches``: the model is loaded once (per Ray actor), each batch of rows
    (a dict of columns) comes back with result columns added.

    Args:
        name_or_dir: a zoo model name, or a directory ``oar export`` wrote.
        batch_size: inputs per model call (grouped by length inside a Ray batch).
        runtime: ``"oar"`` or ``"onnxruntime"``.
        device: ``"cpu"`` or ``"gpu"``.
        static: the traced program (default) or the eager model.
        column: the column holding the inputs (default ``"text"``; a path model
            reads paths from it too, e.g. a list of videos read with ``read_text``).
        as_json: put each result in one column ``"result"`` as a JSON string (for
            results Arrow cannot hold as columns), instead of a column per field.
        options: keyword options of ``task.predict`` (``top_k``, ``whitespace``).

    Output columns: the input columns, plus one per result field (``words``,
    ``tags``; ``label``, ``score``; ``topk`` …; None where a row's result lacks
    it, e.g. a blank line, which never reaches the model).
    """

    def __init__(self, name_or_dir, batch_size=64, runtime="oar", device="cpu", static=True, column="text",
                 as_json=False, **options):
        from .api import load
        self.task = load(name_or_dir, device=device, static=static, runtime=runtime)
        self.batch_size, self.column, self.as_json, self.options = batch_size, column, as_json, options

    def predict(self, inputs):
        """The results (dicts) of ``inputs`` in order; a blank text gets ``{}`` without reaching the model."""
        from .inputs import predict_in_order
        return [result for _, result in predict_in_order(self.task, list(inputs), self.batch_size, **self.options)]

    def __call__(self, batch):
        import numpy
        if self.column not in batch:
            raise KeyError(f"Predictor: the batch has no column {self.column!r} (columns: {', '.join(batch)}); "
                           f"give column=…")
        inputs = [str(x) for x in batch[self.column]]
        results = self.predict(inputs)
        out = dict(batch)
        if self.as_json:
            out["result"] = numpy.array([json.dumps(r, ensure_ascii=False) for r in results], dtype=object)
            return out
        fields = []
        for result in results:
            fields += [k for k in result if k not in fields]
        for field in fields:
            column = numpy.empty(len(results), dtype=object)
            column[:] = [_plain(r.get(field)) for r in results]
            out[field] = column
        return out


def _plain(value):
    """``value`` with tuples as lists (Arrow and JSON hold them alike)."""
    if isinstance(value, tuple):
        return [_plain(v) for v in value]
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def _lines_datasource(paths, encoding, block_lines, **kwargs):
    from ray.data.datasource import FileBasedDatasource

    class LinesDatasource(FileBasedDatasource):
        """Text files as rows ``{"text", "path", "position"}`` in blocks of ``block_lines``, read streaming."""

        def _read_stream(self, f, path):
            import pyarrow
            buffer, texts, position = b"", [], 0

            def block():
                nonlocal texts, position
                table = pyarrow.table({"text": texts, "path": [path] * len(texts),
                                       "position": list(range(position, position + len(texts)))})
                position += len(texts)
                texts = []
                return table

            first = True
            while True:
                chunk = f.read(1 << 20)
                if not chunk:
                    break
                buffer += chunk
                *lines, buffer = buffer.split(b"\n")
                for raw in lines:
                    line = raw.decode(encoding)
                    if first:
                        line, first = line.lstrip("\ufeff"), False
                    texts.append(line.rstrip("\r"))
                    if len(texts) >= block_lines:
                        yield block()
            if buffer:
                line = buffer.decode(encoding)
                texts.append((line.lstrip("\ufeff") if first else line).rstrip("\r"))
            if texts:
                yield block()

    return LinesDatasource(paths, **kwargs)


def read_lines(paths, encoding="utf-8", block_lines=1024, **read_args):
    """A Ray Dataset of the lines of ``paths`` (a file, a folder, a list; local or any URL Ray reads) with
    columns ``text``, ``path`` and ``position`` (the line's 0-based number in its file), blank lines kept."""
    ray = _ray()
    return ray.data.read_datasource(_lines_datasource(paths, encoding, block_lines), **read_args)


def add_arguments(parser):
    """The ``oar run`` flags of the Ray engine."""
    group = parser.add_argument_group("Ray Data engine (--engine ray; needs the ray extra)")
    group.add_argument("--engine", choices=["local", "ray"], default="local",
                       help="local: this process (default); ray: Ray Data actors reading --input_file (a path or "
                            "URL) and writing shards to --output (a folder or URL)")
    group.add_argument("--address", help="the Ray cluster to join (default: RAY_ADDRESS, else a local one)")
    group.add_argument("--replicas", type=int, default=1, help="model actors (default 1)")
    group.add_argument("--output_format", choices=RESULT_FORMATS, default="jsonl",
                       help="shards written to --output with --engine ray (default jsonl)")


def _jsonl_datasink(path):
    from ray.data.datasource import BlockBasedFileDatasink

    class JsonLinesDatasink(BlockBasedFileDatasink):
        """One ``{"path", "position", "input", **result}`` JSON object per line (the standard library's
        ``json``, so every result a model gives is written as ``oar run --json`` writes it)."""

        def write_block_to_file(self, block, file):
            lines = []
            for row in block.to_arrow().to_pylist():
                result = json.loads(row.pop("result"))
                lines.append(json.dumps({**row, **result}, ensure_ascii=False))
            file.write(("\n".join(lines) + "\n").encode("utf-8") if lines else b"")

    return JsonLinesDatasink(path, file_format="json")


def _rows(batch):
    """Rename ``text`` to ``input`` (as ``oar run --json`` echoes it) and keep the position first."""
    out = {"path": batch.pop("path"), "position": batch.pop("position"), "input": batch.pop("text")}
    out.update(batch)
    return out


def run(args, name, options):
    """``oar run NAME --engine ray``: predict every line of ``args.input_file`` on Ray Data and write the shards
    to ``args.output``; prints one JSON summary line on stdout."""
    if not args.input_file or args.input_file == "-":
        raise UsageError("--engine ray reads --input_file (a path or URL; not stdin)")
    if not args.output or args.output == "-":
        raise UsageError("--engine ray writes shards to --output (a folder or URL)")
    if args.replicas < 1:
        raise UsageError(f"--replicas must be at least 1, got {args.replicas}")
    if args.batch_size < 1:
        raise UsageError(f"--batch_size must be at least 1, got {args.batch_size}")
    ray = _ray()
    import time
    started = time.perf_counter()
    init = {"address": args.address} if args.address else {}
    if not ray.is_initialized():
        try:
            ray.init(log_to_driver=False, configure_logging=True, logging_level="ERROR",
                     runtime_env={"env_vars": {"OAR_NUM_THREADS": os.environ.get("OAR_NUM_THREADS", "1")}}, **init)
        except (ConnectionError, RuntimeError) as exc:
            raise UsageError(f"--address {args.address}: cannot join the Ray cluster ({type(exc).__name__}; "
                            f"'auto' joins the one started on this machine, RAY_AUTH_TOKEN gives a cluster's "
                            f"token)") from None
    context = ray.data.DataContext.get_current()
    context.execution_options.verbose_progress = False
    try:
        # a block as long as the in-process path's sorting window: as little padding, and few tasks to schedule
        ds = read_lines(args.input_file, encoding=args.encoding,
                        block_lines=max(args.batch_size * WINDOW_BATCHES, 256), num_cpus=0)
        ds = ds.map_batches(Predictor, fn_constructor_kwargs=dict(
            name_or_dir=name, batch_size=args.batch_size, runtime=args.runtime, device=args.device,
            static=not args.eager, as_json=True, **options),
            batch_size=None, compute=ray.data.ActorPoolStrategy(size=args.replicas), num_cpus=1,
            max_restarts=-1, max_task_retries=-1)
        ds = ds.map_batches(_rows, batch_size=None, num_cpus=0)
        if args.output_format == "parquet":
            ds.write_parquet(args.output, ray_remote_args={"num_cpus": 0})
        else:
            ds.write_datasink(_jsonl_datasink(args.output), ray_remote_args={"num_cpus": 0})
    except UserError:
        raise
    except Exception as exc:                          # Ray wraps the actors' errors; say the cause in one line
        cause = _root_cause(exc)
        if isinstance(cause, UserError):
            raise cause from None
        if isinstance(cause, (FileNotFoundError, OSError)):
            raise UserError(f"--engine ray: {type(cause).__name__}: {str(cause).splitlines()[0]}") from None
        raise
    print(json.dumps({"output": args.output, "format": args.output_format, "replicas": args.replicas,
                      "seconds": round(time.perf_counter() - started, 3)}))


def _root_cause(exc):
    seen = set()
    while id(exc) not in seen:
        seen.add(id(exc))
        inner = getattr(exc, "cause", None) or exc.__cause__
        if inner is None or inner is exc:
            break
        exc = inner
    return exc


def read_results(output, format="jsonl"):
    """The rows that :func:`run` wrote to ``output`` (a folder or URL), in input order (sorted by ``path`` and
    ``position``), as dicts; for a result set that fits in memory (use Ray's ``sort`` past that)."""
    import fsspec
    fs, root = fsspec.core.url_to_fs(output)
    rows = []
    for name in sorted(fs.find(root)):
        if format == "jsonl" and name.endswith(".json"):
            with fs.open(name, "rb") as f:
                rows += [json.loads(line) for line in f if line.strip()]
        elif format == "parquet" and name.endswith(".parquet"):
            import pyarrow.parquet
            with fs.open(name, "rb") as f:
                for row in pyarrow.parquet.read_table(f).to_pylist():
                    rows.append({**row, **json.loads(row.pop("result"))})
    rows.sort(key=lambda row: (row["path"], row["position"]))
    return rows
