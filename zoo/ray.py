"""Batch inference past one machine on Ray Data (the ``ray`` extra: ``pip install "oar[ray]"``).

oar runs no scheduler or cluster of its own: Ray Data reads the corpus, keeps
a pool of actors busy and writes the results; oar gives it a callable class.

- :class:`Predictor` loads a zoo model (or an ``oar export`` directory) once
  per actor and maps a batch of rows to result columns, through the task's one
  batching path (``Task.predict_iter``), so it plugs into Ray Data as Ray's
  docs show for other models::

      ds = ray.data.read_text("s3://bucket/corpus.txt")
      ds = ds.map_batches(Predictor, fn_constructor_kwargs={"name_or_dir": "lac_pku"},
                          batch_size=256, concurrency=(1, 8), num_cpus=1)
      ds.write_parquet("s3://bucket/tagged/")

  ``concurrency=(1, 8)`` is a pool of 1 to 8 actors of one CPU each: it starts
  with what the cluster holds and grows as CPUs free up or join. A fixed
  ``concurrency=8`` asks for 8 actors at once, and waits for ever on a machine
  with fewer than 8 free CPUs.

- :func:`read_lines` is ``ray.data.read_text`` that also says where each line
  came from: columns ``text``, ``path`` (its file) and ``position`` (its
  0-based line number in that file), read streaming in blocks of
  ``block_lines``, so a single large file still feeds every actor.
- :func:`run` is ``oar run NAME --input_file URL --output URL --engine ray``:
  it writes ``*.jsonl`` shards whose rows are ``{"path", "position", "input",
  **result}``, the columns of ``oar run --json`` and of the Predictor
  (``*.parquet``: the same columns, each result field holding its JSON text,
  so every model's results fit a Parquet schema), which join back into input
  order by ``(path, position)`` (:func:`read_results` does it, for both). The
  shards are written to a folder beside ``--output`` and moved into place once
  complete; a folder that already holds results is refused unless
  ``--overwrite``. Paths and URLs are those Ray's readers take (local,
  ``s3://``, ``gs://``, ``https://`` …).

Faults are Ray's to handle: Ray Data creates actors with ``max_restarts=-1``
and ``max_task_retries=-1`` (its defaults), so a dead actor is restarted and its batch redone;
results are written only by Ray's write tasks, once per block, so a line is
never lost or written twice (tested by killing an actor mid-run).
"""
import contextlib
import json
import logging
import os
import socket
import sys
import uuid

from framework.engine.batching import WINDOW_BATCHES
from framework.errors import InputError, UserError
from framework.timeouts import network_timeout
from framework.io.remote import is_url, safe_url
from framework.redact import redact

from .inputs import OutputError, is_ascii_compatible
from .usage import UsageError

__all__ = ["Predictor", "read_lines", "run", "read_results", "add_arguments", "ray_available"]

RESULT_FORMATS = ("jsonl", "parquet")


class ClusterError(UserError, ConnectionError):
    """The Ray cluster ``--address`` names cannot be joined (nothing listens there, or it refuses)."""


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
        as_json: hold each result field as its JSON text (for results Arrow cannot
            hold as columns, e.g. top-k pairs of a label and a probability; what
            the Parquet shards of :func:`run` hold), instead of the value itself.
        options: keyword options of ``task.predict`` (``top_k``, ``whitespace``).

    Output columns, those of ``oar run --json``: ``input`` (the input column,
    renamed), one per result field (``words``, ``tags``; ``label``, ``score``;
    ``topk`` …; None where a row's result lacks it, e.g. a blank line, which
    never reaches the model), and the batch's other columns as they were.
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
        out = {k: v for k, v in batch.items() if k != self.column}
        out["input"] = batch[self.column]
        fields = []
        for result in results:
            fields += [k for k in result if k not in fields]
        for field in fields:
            column = numpy.empty(len(results), dtype=object)
            column[:] = [None if field not in r else json.dumps(r[field], ensure_ascii=False) if self.as_json
                         else _plain(r[field]) for r in results]
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
    if not is_ascii_compatible(encoding):
        raise InputError(f"--engine ray reads encodings that write a newline as the byte \\n (utf-8, gbk, "
                         f"gb18030 …), not {encoding}; convert the file to utf-8")

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

            def decoded(raw):
                try:
                    line = raw.decode(encoding)
                except UnicodeDecodeError as err:
                    raise InputError(f"{safe_url(path)}, line {position + len(texts) + 1}: byte "
                                     f"0x{raw[err.start:err.start + 1].hex()} is not valid {encoding}; give the "
                                     f"file's encoding with --encoding (e.g. --encoding gbk)") from None
                line = line.lstrip("\ufeff") if position + len(texts) == 0 else line
                return line[:-1] if line.endswith("\r") else line

            while True:
                chunk = f.read(1 << 20)
                if not chunk:
                    break
                buffer += chunk
                *lines, buffer = buffer.split(b"\n")
                for raw in lines:
                    texts.append(decoded(raw))
                    if len(texts) >= block_lines:
                        yield block()
            if buffer:
                texts.append(decoded(buffer))
            if texts:
                yield block()

    return LinesDatasource(paths, **kwargs)


def read_lines(paths, encoding="utf-8", block_lines=1024, **read_args):
    """A Ray Dataset of the lines of ``paths`` (a file, a folder, a list; local or any URL Ray reads) with
    columns ``text``, ``path`` and ``position`` (the line's 0-based number in its file), blank lines kept.
    A line ends at ``\\n`` (or ``\\r\\n``) only; a byte that does not decode is an ``InputError`` naming the
    file and the line."""
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
    group.add_argument("--overwrite", action="store_true",
                       help="replace the results an --output folder already holds (once the new ones are written)")


def _jsonl_datasink(path):
    from ray.data.datasource import BlockBasedFileDatasink

    class JsonLinesDatasink(BlockBasedFileDatasink):
        """One ``{"path", "position", "input", **result}`` JSON object per line, in ``*.jsonl`` files (the
        standard library's ``json``, so every result a model gives is written as ``oar run --json`` writes
        it; a field a row's result lacks, e.g. a blank line's, is left out as there)."""

        def write_block_to_file(self, block, file):
            lines = [json.dumps(_row(row), ensure_ascii=False) for row in block.to_arrow().to_pylist()]
            file.write(("\n".join(lines) + "\n").encode("utf-8") if lines else b"")

    return JsonLinesDatasink(path, file_format="jsonl")


def _row(stored):
    """A result row as ``oar run --json`` shows it (plus ``path``, ``position``), from a row whose result
    fields hold JSON text (None: not in this row's result)."""
    fixed = ("path", "position", "input")
    row = {k: stored[k] for k in fixed if k in stored}
    row.update((k, json.loads(v)) for k, v in stored.items() if k not in fixed and v is not None)
    return row


def _keep_order(batch):
    """``path``, ``position`` and ``input`` first, then the result fields."""
    return {k: batch[k] for k in ("path", "position", "input")} | {
        k: v for k, v in batch.items() if k not in ("path", "position", "input")}


def run(args, name, options):
    """``oar run NAME --engine ray``: predict every line of ``args.input_file`` on Ray Data and write the shards
    to ``args.output`` (complete or not at all: into a folder beside it, then moved into place; a folder that
    already holds results only with ``--overwrite``); prints one JSON summary line on stdout."""
    if not args.input_file or args.input_file == "-":
        raise UsageError("--engine ray reads --input_file (a path or URL; not stdin)")
    if not args.output or args.output == "-":
        raise UsageError("--engine ray writes shards to --output (a folder or URL)")
    if args.replicas < 1:
        raise UsageError(f"--replicas must be at least 1, got {args.replicas}")
    if args.batch_size < 1:
        raise UsageError(f"--batch_size must be at least 1, got {args.batch_size}")
    source, output = _absolute(args.input_file), _absolute(args.output)     # Ray's workers run elsewhere
    if not is_url(source) and not os.path.exists(source):
        raise InputError(f"input file not found: {args.input_file}")
    target = ShardFolder(output, args.overwrite, shown=args.output)
    ray = _ray()
    import time
    started = time.perf_counter()
    with _ray_quiet():
        _run_pipeline(ray, args, name, options, source, target)
    print(json.dumps({"output": safe_url(args.output), "format": args.output_format, "replicas": args.replicas,
                      "seconds": round(time.perf_counter() - started, 3)}))


def _run_pipeline(ray, args, name, options, source, target):
    """Join the cluster, read, predict and write the shards of :func:`run`; an error is one ``UserError``."""
    _join(ray, args.address)
    context = ray.data.DataContext.get_current()
    context.execution_options.verbose_progress = False
    cpus = int(ray.cluster_resources().get("CPU", 1))
    try:
        # a block as long as the in-process path's sorting window: as little padding, and few tasks to schedule
        ds = read_lines(source, encoding=args.encoding,
                        block_lines=max(args.batch_size * WINDOW_BATCHES, 256), num_cpus=0)
        # the pool starts with the actors the cluster's CPUs hold and grows to --replicas as CPUs join, so more
        # replicas than cores never waits forever; Ray restarts a dead actor and redoes its batch by default
        ds = ds.map_batches(Predictor, fn_constructor_kwargs=dict(
            name_or_dir=name, batch_size=args.batch_size, runtime=args.runtime, device=args.device,
            static=not args.eager, as_json=True, **options),
            batch_size=None, num_cpus=1,
            compute=ray.data.ActorPoolStrategy(min_size=max(1, min(args.replicas, cpus)), max_size=args.replicas))
        ds = ds.map_batches(_keep_order, batch_size=None, num_cpus=0)
        with target.staged() as folder:
            if args.output_format == "parquet":
                ds.write_parquet(folder, ray_remote_args={"num_cpus": 0})
            else:
                ds.write_datasink(_jsonl_datasink(folder), ray_remote_args={"num_cpus": 0})
    except Exception as exc:                          # Ray wraps the actors' errors; say the cause in one line
        cause = _root_cause(exc)
        if isinstance(cause, UserError):
            raise cause from None
        if isinstance(cause, (FileNotFoundError, OSError)):
            raise UserError(f"--engine ray: {type(cause).__name__}: {str(cause).splitlines()[0]}") from None
        raise


@contextlib.contextmanager
def _ray_quiet():
    """Hold back what Ray's own processes and C++ core write to stderr (notes on actor restarts, task
    tracebacks that the run raises again as one line) while the block runs; ``OAR_DEBUG=1`` shows it all."""
    if os.environ.get("OAR_DEBUG", "") not in ("", "0"):
        yield
        return
    sys.stderr.flush()
    saved = os.dup(2)
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 2)
    os.close(devnull)
    try:
        yield
    finally:
        sys.stderr.flush()
        os.dup2(saved, 2)
        os.close(saved)


def _absolute(path):
    """``path`` made absolute when it is a local path (a URL is kept)."""
    return path if is_url(path) else os.path.abspath(path)


def _join(ray, address):
    """Start or join the Ray cluster (``address``: None starts a local one), quietly; an address where no
    cluster answers is one line within ``$OAR_NETWORK_TIMEOUT`` seconds, not a wait without end."""
    if ray.is_initialized():
        return
    if address and address not in ("auto", "local"):
        _check_reachable(address)
    init = {"address": address} if address else {}
    try:
        ray.init(log_to_driver=False, configure_logging=True, logging_level="ERROR",
                 runtime_env={"env_vars": {"OAR_NUM_THREADS": os.environ.get("OAR_NUM_THREADS", "1")}}, **init)
    except (ConnectionError, RuntimeError, ValueError) as exc:
        raise ClusterError(f"--address {redact(address)}: cannot join the Ray cluster ({type(exc).__name__}; "
                         f"'auto' joins the one started on this machine, RAY_AUTH_TOKEN gives a cluster's "
                         f"token)") from None
    logging.getLogger("ray.data").setLevel(logging.CRITICAL)   # a failure is raised here and shown in one line


def _check_reachable(address):
    """Refuse ``address`` (``host:port``, ``ray://host:port``) in one line when nothing listens there."""
    host, _, port = address.split("://", 1)[-1].rstrip("/").rpartition(":")
    if not host or not port.isdigit():
        raise UsageError(f"--address {redact(address)}: give host:port of a Ray cluster's head, or auto")
    seconds = network_timeout()
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=seconds).close()
    except OSError as err:
        reason = f"no answer within {seconds:g} s" if isinstance(err, TimeoutError) else err.strerror or str(err)
        raise ClusterError(f"--address {redact(address)}: cannot join the Ray cluster ({reason}; 'auto' joins the "
                         f"one started on this machine)") from None


def fsspec_root(url):
    """The path of ``url`` (a path or URL) inside its fsspec filesystem."""
    import fsspec
    return fsspec.core.url_to_fs(url)[1]


class ShardFolder:
    """The ``--output`` folder (a path or URL) of :func:`run`: checked before any work, written whole.

    A file, or a folder that already holds files, is refused in one line (``--overwrite``: the folder is
    replaced); the shards are written to a folder beside it and moved into place once all are written, so
    a failed run leaves the output as it was.
    """

    def __init__(self, output, overwrite=False, shown=None):
        import fsspec
        self.output, self.overwrite, shown = output.rstrip("/") or output, overwrite, shown or output
        self.fs, self.root = fsspec.core.url_to_fs(self.output)
        if not self.fs.exists(self.root):
            return
        if not self.fs.isdir(self.root):
            raise OutputError(f"--output {safe_url(shown)} is a file; --engine ray writes a folder of shards "
                              f"(give a folder that does not exist yet, or an empty one)")
        if self.fs.ls(self.root) and not overwrite:
            raise OutputError(f"--output {safe_url(shown)} already holds results; give --overwrite to replace "
                              f"them, or another folder")

    @contextlib.contextmanager
    def staged(self):
        """A context giving the folder to write the shards to; on a clean exit they replace ``--output``."""
        suffix = uuid.uuid4().hex[:8]
        staging, old = f"{self.output}.oar-partial-{suffix}", f"{self.output}.oar-old-{suffix}"
        staging_root = fsspec_root(staging)
        try:
            yield staging
        except BaseException:
            if self.fs.exists(staging_root):
                self.fs.rm(staging_root, recursive=True)
            raise
        if not self.fs.exists(staging_root):
            self.fs.makedirs(staging_root, exist_ok=True)           # no input line: an empty result folder
        old_root = fsspec_root(old)
        replaced = self.fs.exists(self.root)
        if replaced:
            self.fs.mv(self.root, old_root, recursive=True)
        self.fs.mv(staging_root, self.root, recursive=True)
        if replaced:
            self.fs.rm(old_root, recursive=True)


def _root_cause(exc):
    """The exception behind what Ray raised: the first oar error (or else the first error of neither Ray nor
    its wrappers) along the chain of causes, Ray's ``cause`` first."""
    seen, chain, pending = set(), [], [exc]
    while pending:
        current = pending.pop(0)
        if current is None or id(current) in seen:
            continue
        seen.add(id(current))
        chain.append(current)
        pending += [getattr(current, "cause", None), current.__cause__, current.__context__]
    own = [e for e in chain if isinstance(e, BaseException) and not type(e).__module__.startswith("ray")]
    return next((e for e in own if isinstance(e, UserError)), own[0] if own else exc)


def read_results(output, format="jsonl"):
    """The rows that :func:`run` wrote to ``output`` (a folder or URL), in input order (sorted by ``path`` and
    ``position``), as dicts ``{"path", "position", "input", **result}`` whichever the format; for a result set
    that fits in memory (use Ray's ``sort`` past that)."""
    import fsspec
    fs, root = fsspec.core.url_to_fs(output)
    rows = []
    for name in sorted(fs.find(root)):
        if format == "jsonl" and name.endswith(".jsonl"):
            with fs.open(name, "rb") as f:
                rows += [json.loads(line) for line in f if line.strip()]
        elif format == "parquet" and name.endswith(".parquet"):
            import pyarrow.parquet
            with fs.open(name, "rb") as f:
                rows += [_row(row) for row in pyarrow.parquet.read_table(f).to_pylist()]
    rows.sort(key=lambda row: (row["path"], row["position"]))
    return rows
