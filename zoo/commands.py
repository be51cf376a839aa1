"""The ``oar`` commands: one ``Command`` each (its one-line help, its arguments, the function that runs it).

``zoo.cli`` builds the parser from ``COMMANDS`` and owns the exit status;
``tools/train.py`` and the other tools call ``zoo.cli.main`` with their command
name, so ``python tools/train.py -c X`` ≡ ``oar train -c X``. A command
returns normally on success, raises a ``framework.errors.UserError`` for a
user's mistake (exit 1) or ``UsageError`` for arguments that cannot go
together (exit 2).
"""
import argparse
import inspect
import json
import os
import sys
from dataclasses import dataclass
from typing import Callable

from framework import distributed, set_device
from framework.config import load_config
from framework.engine import runner
from framework.engine.run_dir import best_checkpoint

from . import exported
from .api import RUNTIMES, export, load, model_card, register_everything
from .catalog import card, cards
from .tasks import TASK_TABLE
from .inputs import count_lines, predict_in_order, read_lines, result_writer
from .usage import UsageError
from .ray import add_arguments as engine_arguments, run as run_on_ray

__all__ = ["COMMANDS", "Command", "UsageError"]


@dataclass
class Command:
    """One ``oar`` command: ``add_arguments(parser)`` declares its options, ``run(args)`` does the work."""
    name: str
    help: str
    add_arguments: Callable
    run: Callable


# ---------------------------------------------------------------------------------------------- shared options

def _add_config_arguments(parser, config_required=True):
    parser.add_argument("-c", "--config", required=config_required,
                        help="YAML config file" + ("" if config_required else
                                                   " (default: the config.yaml the run saved in --output_dir)"))
    parser.add_argument("-o", "--override", nargs="+", action="extend", default=[], metavar="KEY=VALUE",
                        help="override config values, e.g. -o train.epochs=3 model.hidden=64 (repeatable)")
    parser.add_argument("--device", choices=["cpu", "gpu"], default="cpu")
    parser.add_argument("--output_dir", help="the run directory (default: outputs/<config name>)")


def _add_input_arguments(parser):
    """The input and output flags ``oar run`` and ``oar infer`` share."""
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--input_text", "--input", nargs="+", metavar="TEXT",
                        help="texts to predict on (a matching pair: 'text_a<TAB>text_b')")
    source.add_argument("--input_file", metavar="FILE",
                        help="a text file with one input per line; - reads stdin (one output line per input line)")
    source.add_argument("--input_path", nargs="+", metavar="PATH", help="files to predict on (videos, images)")
    parser.add_argument("--json", action="store_true", help="one JSON object per input, echoing it as \"input\"")
    parser.add_argument("--output", metavar="FILE", help="write the results here instead of stdout")
    parser.add_argument("--batch_size", type=int, default=64, help="inputs per batch, grouped by length (default 64)")
    parser.add_argument("--top_k", type=int, help="classes listed per input (classification models)")
    parser.add_argument("--encoding", default="utf-8", help="encoding of --input_file (default utf-8; e.g. gbk)")


def _inputs(args):
    """``(iterable of inputs, count or None, where)`` from the input flags; ``where(n)`` names input ``n``."""
    if args.input_file:
        name = "stdin" if args.input_file == "-" else args.input_file
        lines = read_lines(args.input_file, args.encoding)         # checks the file now, reads it as predicted
        return lines, count_lines(args.input_file, args.encoding), lambda n: f"{name}, line {n}"
    flag = "--input_text" if args.input_text else "--input_path"
    given = args.input_text or args.input_path
    return given, len(given), lambda n: f"{flag} value {n} ({given[n - 1]!r})"


def _predict_options(task, args, model_name):
    """Keyword options for ``task.predict`` from the flags (``top_k``, refused when the model takes none), and
    for lexical analysis ``whitespace="split"`` in the ``word/TAG`` text output, which splits on spaces
    (``--json`` keeps the model's own rule)."""
    accepted = inspect.signature(task.predict).parameters
    options = {"whitespace": "split"} if "whitespace" in accepted and not args.json else {}
    if args.top_k is None:
        return options
    if "top_k" not in accepted:
        raise UsageError(f"{model_name} answers one label per input; --top_k is for models that rank classes")
    if args.top_k < 1:
        raise UsageError(f"--top_k must be at least 1, got {args.top_k}")
    return {**options, "top_k": args.top_k}


def _predict_and_write(task, args, model_name, given):
    """Predict every input of ``given`` (from :func:`_inputs`) and write one line each."""
    inputs, count, where = given
    options = _predict_options(task, args, model_name)
    with result_writer(args.output, as_json=args.json) as write:
        for item, result in predict_in_order(task, inputs, args.batch_size, total=count, where=where, **options):
            write(item, result)


def _run_dir(args, cfg):
    return args.output_dir or runner.default_output_dir(cfg)


def _load_run_config(args):
    """The config of ``-c`` (or, without it, the one the run saved in ``--output_dir``), with ``-o`` applied."""
    path = args.config
    if path is None:
        if not args.output_dir:
            raise UsageError("give the config with -c, or a run directory with --output_dir")
        path = os.path.join(args.output_dir, "config.yaml")
        if not os.path.isfile(path):
            raise UsageError(f"{args.output_dir} holds no config.yaml (not a run directory of `oar train`); "
                             f"give the config with -c")
    return load_config(path, args.override)


def _checkpoint(args, output_dir):
    """``--checkpoint``, else ``best.npz`` of the run, else its ``last.npz``."""
    return args.checkpoint or best_checkpoint(output_dir)


def _setup(args, for_inference):
    """Registers every package, selects the device and returns ``(config, run directory)``."""
    register_everything()
    set_device(args.device)
    cfg = _load_run_config(args) if for_inference else load_config(args.config, args.override)
    output_dir = _run_dir(args, cfg)
    if for_inference:
        cfg = runner.run_config(cfg, output_dir)
    return cfg, output_dir


# ---------------------------------------------------------------------------------------------- train/eval/infer

def _train_arguments(parser):
    _add_config_arguments(parser)
    parser.add_argument("--resume", nargs="?", const=True, default=None,
                        help="continue from the last checkpoint in the output dir, or from PATH")
    parser.add_argument("--seed", type=int, help="override train.seed")
    parser.add_argument("--plot", action="store_true", help="write loss/metric curves to <output_dir>/curves.png")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    parser.add_argument("--nproc", type=int, default=1,
                        help="data-parallel processes started through mpiexec (train.batch_size stays global)")


def train(args):
    """Train from a config; prints the summary (best metric, checkpoints) as one JSON line.

    ``--nproc N`` runs N data-parallel processes through ``mpiexec``; a run
    already started by an MPI launcher trains on the processes it started.
    """
    launched = distributed.launched_by_mpi()
    if args.nproc > 1 and not launched:
        return _launch_train(args.nproc, args.argv)
    if launched and args.nproc not in (1, launched):
        raise distributed.DistributedError(f"--nproc {args.nproc} but the MPI launcher started {launched} processes")
    cfg, output_dir = _setup(args, for_inference=False)
    trainer, summary = runner.train(cfg, output_dir=output_dir, resume=args.resume, device=args.device,
                                    seed=args.seed, progress=not args.quiet)
    if trainer.rank == 0:
        if args.plot:
            from framework.engine.plot import plot_curves
            plot_curves(os.path.join(output_dir, "metrics.jsonl"), os.path.join(output_dir, "curves.png"))
        print(json.dumps({k: v for k, v in summary.items() if k != "history"}))
    return 0


def _launch_train(nproc, argv):
    """Run ``oar train argv`` as ``nproc`` MPI processes; their exit status becomes this one's."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH")) if p))
    return distributed.launch(nproc, [sys.executable, "-m", "zoo.cli", "train", *argv], env=env)


def _run_dir_arguments(parser):
    _add_config_arguments(parser, config_required=False)
    parser.add_argument("--checkpoint", help="weights to use (default: <output_dir>/best.npz, else last.npz)")


def _eval_arguments(parser):
    _run_dir_arguments(parser)
    parser.add_argument("--split", default="eval", choices=["train", "eval", "test"])


def evaluate(args):
    """Metrics of a run's checkpoint on a data split, as one JSON line."""
    cfg, output_dir = _setup(args, for_inference=True)
    metrics = runner.evaluate_config(cfg, _checkpoint(args, output_dir), split=args.split, device=args.device)
    print(json.dumps(metrics))


def _infer_arguments(parser):
    _run_dir_arguments(parser)
    _add_input_arguments(parser)


def infer(args):
    """Predict with a run's checkpoint: one line per input (``--json``: one JSON object)."""
    given = _inputs(args)                   # a missing or unreadable input file fails before the model loads
    cfg, output_dir = _setup(args, for_inference=True)
    task = runner.load_task(cfg, _checkpoint(args, output_dir), args.device)
    _predict_and_write(task, args, os.path.basename(output_dir.rstrip(os.sep)) or output_dir, given)


# ---------------------------------------------------------------------------------------------- the zoo

def _models_by_task():
    """``task: name, name, …`` lines of the catalog, for ``oar run -h``."""
    grouped = {}
    for entry in cards().values():
        grouped.setdefault(entry["task"], []).append(entry["name"])
    return "\n".join(f"  {task}: {', '.join(names)}" for task, names in grouped.items())


def _run_arguments(parser):
    parser.add_argument("name", help="a zoo model (see below, or `oar list`), or a directory `oar export` wrote")
    _add_input_arguments(parser)
    parser.add_argument("--device", choices=["cpu", "gpu"], default="cpu")
    parser.add_argument("--runtime", choices=list(RUNTIMES), default="oar",
                        help="run the network on oar's traced program (default) or on ONNX Runtime "
                             "(exported once; needs the export extra)")
    parser.add_argument("--eager", action="store_true", help="run the model eagerly instead of its traced program")
    engine_arguments(parser)
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.epilog = "models, by task:\n" + _models_by_task() + \
        "\n\nexamples:\n  oar run lac_pku --input_text \"今天是个好日子\"\n  oar run senta_bilstm --input_file - < reviews.txt"


def _check_input_kind(entry, args):
    """Refuse text for a model that reads files, and files for one that reads text, before loading it."""
    spec = TASK_TABLE.get(entry["task"])
    wants_paths = spec is not None and spec.kind == "file"
    if wants_paths and not args.input_path:
        given = "--input_text" if args.input_text else "--input_file"
        raise UsageError(f"{entry['name']} is a {entry['task']} model: give files with --input_path, not {given}")
    if not wants_paths and args.input_path:
        raise UsageError(f"{entry['name']} is a {entry['task']} model: give text with --input_text or "
                         f"--input_file, not --input_path")


def run(args):
    """Predict with a zoo model: one line per input (``--json``: one JSON object that echoes the input)."""
    entry = model_card(args.name)
    if args.eager and args.runtime != "oar":
        raise UsageError("--eager runs oar's eager model; it does not go with --runtime onnxruntime")
    if args.engine == "ray":                # Ray Data reads the lines (texts, or paths for a path model) and writes
        if not args.input_file:             # the shards (zoo/ray.py)
            raise UsageError("--engine ray reads --input_file (a path or URL with one input per line)")
        args.json = True                    # rows are JSON: the model's own whitespace rule, as with --json
        return run_on_ray(args, args.name, {} if args.top_k is None else
                          _predict_options(load(args.name, static=False), args, args.name))
    _check_input_kind(entry, args)
    given = _inputs(args)                   # a missing or unreadable input file fails before the model loads
    task = load(args.name, device=args.device, static=not args.eager, runtime=args.runtime)
    _predict_and_write(task, args, args.name, given)


def _list_arguments(parser):
    shape = parser.add_mutually_exclusive_group()
    shape.add_argument("--wide", action="store_true", help="every column, including where the weights came from")
    shape.add_argument("--json", action="store_true", help="one JSON object per card (the whole card)")


def _headline(entry, digits):
    metrics = entry.get("metrics") or {}
    spec = TASK_TABLE.get(entry["task"])
    keys = [k for k in (spec.headline if spec else ()) if k in metrics] or \
        [k for k in metrics if k != "split" and isinstance(metrics[k], (int, float))][:3]    # no headline: the first three
    shown = " ".join(f"{k} {metrics[k]:.{digits}f}" for k in keys) or "-"
    if not keys or "split" not in metrics:
        return shown
    split = str(metrics["split"]) if digits > 3 else str(metrics["split"]).split(",")[0]   # narrow: the split's name
    return f"{shown} ({split})"


def list_models(args):
    """The zoo's models: name, task and headline test metrics (``--wide``: and source; ``--json``: whole cards)."""
    entries = list(cards().values())
    if args.json:
        for entry in entries:
            print(json.dumps(entry, ensure_ascii=False))
        return
    rows = [("name", "task", "metrics")] + [(e["name"], e["task"], _headline(e, 4 if args.wide else 3))
                                            for e in entries]
    if args.wide:
        rows = [row + (source,) for row, source in zip(rows, ["source"] + [e.get("source", "-") for e in entries])]
    widths = [max(len(str(row[i])) for row in rows) for i in range(len(rows[0]) - 1)]
    for row in rows:
        print("  ".join(str(v).ljust(w) for v, w in zip(row, widths)) + "  " + str(row[-1]))


def _show_arguments(parser):
    parser.add_argument("name")
    parser.add_argument("--json", action="store_true", help="the card as one JSON object")


def show(args):
    """One model card (YAML, or ``--json``)."""
    import yaml
    entry = card(args.name)
    if args.json:
        print(json.dumps(entry, ensure_ascii=False))
    else:
        print(yaml.safe_dump(entry, sort_keys=False, allow_unicode=True), end="")


def _reproduce_arguments(parser):
    parser.add_argument("target", help="a card name, or a group: nlp, senta, simnet, video, all")
    parser.add_argument("-o", "--override", dest="overrides", nargs="+", action="extend", default=[],
                        metavar="KEY=VALUE", help="config overrides for every model (e.g. a smaller budget)")
    parser.add_argument("--device", choices=["cpu", "gpu"], default="cpu")
    parser.add_argument("--output_root", default=os.path.join("outputs", "reproduce"))
    parser.add_argument("--dry_run", action="store_true",
                        help="write weights, catalog and RESULTS.md under <output_root>/dry_run/, not the repository")
    parser.add_argument("--quiet", action="store_true")


def reproduce(args):
    """Retrain and re-measure zoo models; rewrite their cards and RESULTS.md blocks. One JSON line per model."""
    register_everything()
    set_device(args.device)
    from .reproduce import reproduce as run_reproduce
    for entry in run_reproduce(args.target, args):
        print(json.dumps({"name": entry["name"], "metrics": entry.get("metrics")}, ensure_ascii=False))


def _bench_arguments(parser):
    from . import bench
    parser.add_argument("name", choices=sorted(bench.SUITES))
    parser.add_argument("--quick", action="store_true", help="small sizes, few repeats")
    parser.add_argument("--out", help="also write the JSON here")


def benchmark(args):
    """Run a benchmark suite; prints its JSON."""
    from . import bench
    bench.run(args.name, quick=args.quick, out=args.out)


def _export_arguments(parser):
    parser.add_argument("name", help="a zoo model (see `oar list`)")
    parser.add_argument("--output", required=True, metavar="DIR", help="the directory to write (created)")
    parser.add_argument("--format", choices=["oar", "onnx"], default="oar",
                        help="oar: the traced program (JSON + npz); onnx: also model.onnx (needs the export extra)")


def export_model(args):
    """Write a zoo model's export directory: its traced program, task files, weights and a manifest."""
    if os.path.exists(args.output) and os.listdir(args.output) and not exported.is_export(args.output):
        raise UsageError(f"{args.output} exists and is not an export directory; give a new or empty one")
    manifest = export(args.name, args.output, formats=("oar", args.format))
    written = ", ".join(f for f in ("program", manifest["onnx"], manifest["weights"], "manifest.json") if f)
    print(f"{args.name}: wrote {written} into {args.output}; run it with `oar run {args.output} …` "
          f"or zoo.load({args.output!r})", file=sys.stderr)


def _serve_arguments(parser):
    from .serving.options import add_arguments
    add_arguments(parser)


def serve(args):
    """Serve zoo models over HTTP (``/v1/models/NAME:predict`` and the rest) until SIGTERM or Ctrl-C."""
    from .serving.options import ServeOptionError, from_args
    try:
        options = from_args(args)
    except ServeOptionError as err:
        raise UsageError(str(err)) from None
    from .serving.server import serve as run_server
    return run_server(args.names, options)


def _warmup_arguments(parser):
    pass


def warmup(args):
    """Compile every compiled CPU kernel ahead (for images and CI); prints what was compiled, as JSON."""
    from framework.kernels import cpu
    if not cpu.enabled():
        raise UsageError("the compiled CPU kernels are off (OAR_KERNELS=numpy, or Numba is not installed)")
    report = cpu.warmup(progress=lambda done: print(f"compiled {done}", file=sys.stderr, flush=True))
    print(json.dumps(report))


COMMANDS = [
    Command("list", "list the zoo's models with their test metrics", _list_arguments, list_models),
    Command("show", "print one model card (config, weights, sha256, metrics, source)", _show_arguments, show),
    Command("run", "predict with a zoo model on texts, a file, stdin or video/image paths", _run_arguments, run),
    Command("train", "train a model from a YAML config", _train_arguments, train),
    Command("eval", "evaluate a run's checkpoint on a data split (metrics as JSON)", _eval_arguments, evaluate),
    Command("infer", "predict with a run's checkpoint (same inputs and outputs as run)", _infer_arguments, infer),
    Command("reproduce", "retrain zoo models, rewrite their cards and docs/RESULTS.md", _reproduce_arguments,
            reproduce),
    Command("bench", "run a benchmark suite (JSON on stdout)", _bench_arguments, benchmark),
    Command("export", "write a zoo model's traced program (and ONNX model) with its task files", _export_arguments,
            export_model),
    Command("serve", "serve zoo models over HTTP (batching, health, metrics)", _serve_arguments, serve),
    Command("warmup", "compile the CPU kernels ahead into the cache (first runs then start warm)", _warmup_arguments,
            warmup),
]
