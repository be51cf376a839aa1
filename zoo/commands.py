"""The implementations behind ``oar train|eval|infer`` and ``tools/train|eval|infer.py``.

Each ``*_main(argv)`` parses the shared options, loads the config (with
``-o key=value`` overrides) and calls ``framework.engine.runner``. Errors that
are the user's (config, data, checkpoint) print one line and exit with 2.
"""
import argparse
import json
import os
import sys

from framework import distributed, set_device
from framework.config import ConfigError, load_config
from framework.engine import CheckpointError, TrainingError, runner
from framework.io import DataLoaderError
from framework.backend import DeviceError
from framework.fetch import FetchError
from nlp.data.text import TextFormatError

from .catalog import CatalogError

__all__ = ["train_main", "eval_main", "infer_main", "list_main", "show_main", "run_main", "reproduce_main",
           "user_errors", "format_result"]

USER_ERRORS = (ConfigError, CheckpointError, TrainingError, DataLoaderError, DeviceError, FileNotFoundError,
               CatalogError, FetchError, TextFormatError, distributed.DistributedError)
HEADLINE_METRICS = {  # task -> the metrics `oar list` shows
    "lexical_analysis": ("seg_f1", "pos_f1", "entity_f1"),
    "sentiment": ("acc", "macro_f1"),
    "matching": ("acc", "auc"),
    "video": ("motion_top1", "top1", "gap"),
}


def _register_everything():
    """Import the packages that register models, datasets and tasks."""
    from . import toy  # noqa: F401
    import nlp.data.matching  # noqa: F401
    import nlp.data.peoples_daily  # noqa: F401
    import nlp.data.reviews  # noqa: F401
    import nlp.metrics  # noqa: F401
    import nlp.models.lac  # noqa: F401
    import nlp.models.senta  # noqa: F401
    import nlp.models.simnet  # noqa: F401
    import nlp.tasks.lexical_analysis  # noqa: F401
    import nlp.tasks.matching  # noqa: F401
    import nlp.tasks.sentiment  # noqa: F401
    import video.data  # noqa: F401
    import video.metrics  # noqa: F401
    import vision.data  # noqa: F401
    import vision.metrics  # noqa: F401
    import vision.models  # noqa: F401
    import vision.tasks  # noqa: F401
    import video.models  # noqa: F401
    import video.tasks  # noqa: F401
    import video.feature_backbone  # noqa: F401


def _parser(description, checkpoint):
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("-c", "--config", required=True, help="YAML config file")
    parser.add_argument("-o", "--override", nargs="+", action="extend", default=[], metavar="KEY=VALUE",
                        help="override config values, e.g. -o train.epochs=3 model.hidden=64 (repeatable)")
    parser.add_argument("--device", choices=["cpu", "gpu"], default="cpu")
    parser.add_argument("--output_dir", help="checkpoints and logs (default: outputs/<config name>)")
    if checkpoint:
        parser.add_argument("--checkpoint", help="weights to use (default: <output_dir>/best.npz)")
    return parser


def _setup(args):
    _register_everything()
    set_device(args.device)
    cfg = load_config(args.config, args.override)
    output_dir = args.output_dir or runner.default_output_dir(cfg)
    return cfg, output_dir


def _checkpoint(args, output_dir):
    path = args.checkpoint or os.path.join(output_dir, "best.npz")
    if not os.path.isfile(path) and not args.checkpoint:
        last = os.path.join(output_dir, "last.npz")
        path = last if os.path.isfile(last) else path
    return path


def _read_inputs(path):
    """The non-empty lines of the UTF-8 file ``path`` (one input each), without their newlines."""
    if not os.path.isfile(path):
        raise FileNotFoundError(f"input file not found: {path}")
    with open(path, encoding="utf-8") as f:
        return [line.rstrip("\n") for line in f if line.strip()]


PATH_TASKS = ("video",)   # card tasks whose inputs are files; the others take text


def _check_inputs(entry, inputs, given):
    """Refuse what ``oar run`` cannot predict on: no inputs, an empty one, or the wrong kind for the card's task."""
    if not inputs:
        raise ConfigError(f"{given}: no inputs")
    empty = [str(i + 1) for i, value in enumerate(inputs) if not str(value).strip()]
    if empty:
        raise ConfigError(f"{given}: input {', '.join(empty)} is empty")
    wants_paths = entry["task"] in PATH_TASKS
    if wants_paths and given == "--input_text":
        raise ConfigError(f"{entry['name']} is a {entry['task']} model: give files with --input_path, not text")
    if not wants_paths and given == "--input_path":
        raise ConfigError(f"{entry['name']} is a {entry['task']} model: give text with --input_text or "
                          f"--input_file, not --input_path")


def user_errors(main):
    """Run ``main(argv)``; a user error becomes one line on stderr and exit status 2.

    In a distributed run the line names the rank, and the whole job ends.
    """
    def wrapped(argv=None):
        try:
            return main(argv)
        except USER_ERRORS as err:
            if distributed.is_initialized() and distributed.get_world_size() > 1:
                print(f"[rank {distributed.get_rank()}/{distributed.get_world_size()}] error: {err}", file=sys.stderr)
                distributed.abort(2)
            print(f"error: {err}", file=sys.stderr)
            raise SystemExit(2) from None
        except KeyboardInterrupt:
            print("interrupted", file=sys.stderr)
            raise SystemExit(130) from None
    wrapped.__name__ = main.__name__
    wrapped.__doc__ = main.__doc__
    return wrapped


@user_errors
def train_main(argv=None):
    """``oar train -c CONFIG [-o k=v …] [--resume [PATH]] [--seed N] [--plot] [--nproc N]``.

    ``--nproc N`` runs N data-parallel processes through ``mpiexec``; a run
    already started by an MPI launcher trains on the processes it started.
    """
    parser = _parser("Train a model from a config.", checkpoint=False)
    parser.add_argument("--resume", nargs="?", const=True, default=None,
                        help="continue from the last checkpoint in the output dir, or from PATH")
    parser.add_argument("--seed", type=int, help="override train.seed")
    parser.add_argument("--plot", action="store_true", help="write loss/metric curves to <output_dir>/curves.png")
    parser.add_argument("--quiet", action="store_true", help="no progress lines")
    parser.add_argument("--nproc", type=int, default=1,
                        help="data-parallel processes started through mpiexec (train.batch_size stays global)")
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parser.parse_args(argv)
    launched = distributed.launched_by_mpi()
    if args.nproc > 1 and not launched:
        return _launch_train(args.nproc, argv)
    if launched and args.nproc not in (1, launched):
        raise distributed.DistributedError(f"--nproc {args.nproc} but the MPI launcher started {launched} processes")
    cfg, output_dir = _setup(args)
    trainer, summary = runner.train(cfg, output_dir=output_dir, resume=args.resume, device=args.device,
                                    seed=args.seed, progress=not args.quiet)
    if trainer.rank == 0:
        if args.plot:
            from framework.engine.plot import plot_curves
            plot_curves(os.path.join(output_dir, "metrics.jsonl"), os.path.join(output_dir, "curves.png"))
        print(json.dumps({k: v for k, v in summary.items() if k != "history"}))
    return summary


def _launch_train(nproc, argv):
    """Run ``oar train argv`` as ``nproc`` MPI processes; exits with their status when one failed."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH")) if p))
    code = distributed.launch(nproc, [sys.executable, "-m", "zoo.cli", "train", *argv], env=env)
    if code:
        raise SystemExit(code)
    return None


@user_errors
def eval_main(argv=None):
    """``oar eval -c CONFIG [--checkpoint PATH] [--split eval|test]``: prints the metrics as JSON."""
    parser = _parser("Evaluate a checkpoint on a data split.", checkpoint=True)
    parser.add_argument("--split", default="eval", choices=["train", "eval", "test"])
    args = parser.parse_args(argv)
    cfg, output_dir = _setup(args)
    metrics = runner.evaluate_config(cfg, _checkpoint(args, output_dir), split=args.split, device=args.device)
    print(json.dumps(metrics))
    return metrics


@user_errors
def infer_main(argv=None):
    """``oar infer -c CONFIG (--input X … | --input_path P … | --input_file FILE) [--output FILE]``: JSON lines out."""
    parser = _parser("Predict on raw inputs; writes one JSON object per input.", checkpoint=True)
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--input", "--input_path", nargs="+", dest="input",
                        help="inputs given on the command line (texts, or video/image paths)")
    source.add_argument("--input_file", help="a file with one input per line")
    parser.add_argument("--output", help="write JSON lines here instead of stdout")
    args = parser.parse_args(argv)
    cfg, output_dir = _setup(args)
    inputs = _read_inputs(args.input_file) if args.input_file else args.input
    results = runner.infer(cfg, _checkpoint(args, output_dir), inputs, device=args.device)
    lines = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in results)
    if args.output:
        with open(args.output, "w", encoding="utf-8") as f:
            f.write(lines)
    else:
        sys.stdout.write(lines)
    return results


def format_result(result):
    """One readable line for a prediction dict (words/tags, label and score, top-k classes, or JSON)."""
    if "words" in result and "tags" in result:
        return " ".join(f"{w}/{t}" for w, t in zip(result["words"], result["tags"]))
    if "topk" in result:
        return ", ".join(f"{label} {prob:.3f}" for label, prob in result["topk"])
    if "label" in result and "score" in result:
        return f"{result['label']}\t{result['score']:.4f}"
    return json.dumps(result, ensure_ascii=False)


@user_errors
def list_main(argv=None):
    """``oar list``: the zoo's models as a table (the headline metrics of each task; ``oar show`` has all)."""
    argparse.ArgumentParser(prog="oar list", description="List the zoo's models.").parse_args(argv)
    from .catalog import cards
    rows = [("name", "task", "metrics", "source")]
    for entry in cards().values():
        metrics = entry.get("metrics") or {}
        keys = [k for k in HEADLINE_METRICS.get(entry["task"], ()) if k in metrics] or \
            [k for k in metrics if k != "split"]
        shown = ", ".join(f"{k} {metrics[k]}" for k in keys) or "-"
        if keys and "split" in metrics:
            shown += f" ({metrics['split']})"
        rows.append((entry["name"], entry["task"], shown, entry.get("source", "-")))
    widths = [max(len(str(r[i])) for r in rows) for i in range(3)]
    for row in rows:
        print("  ".join(str(v).ljust(w) for v, w in zip(row, widths)) + "  " + str(row[3]))
    return rows


@user_errors
def show_main(argv=None):
    """``oar show NAME``: one model card."""
    parser = argparse.ArgumentParser(prog="oar show", description="Print one model card.")
    parser.add_argument("name")
    args = parser.parse_args(argv)
    import yaml
    from .catalog import card
    entry = card(args.name)
    print(yaml.safe_dump(entry, sort_keys=False, allow_unicode=True), end="")
    return entry


@user_errors
def run_main(argv=None):
    """``oar run NAME (--input_text T … | --input_file F | --input_path P …) [--json]``."""
    parser = argparse.ArgumentParser(prog="oar run", description="Predict with a zoo model.")
    parser.add_argument("name")
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--input_text", nargs="+", help="texts")
    source.add_argument("--input_file", help="a file with one input per line")
    source.add_argument("--input_path", nargs="+", help="files to predict on (e.g. videos)")
    parser.add_argument("--json", action="store_true", help="one JSON object per input")
    parser.add_argument("--device", choices=["cpu", "gpu"], default="cpu")
    args = parser.parse_args(argv)
    from .api import load
    from .catalog import card
    inputs = _read_inputs(args.input_file) if args.input_file else (args.input_text or args.input_path)
    _check_inputs(card(args.name), inputs, "--input_path" if args.input_path else "--input_text"
                  if args.input_text else f"--input_file {args.input_file}")
    task = load(args.name, device=args.device)
    results = task.predict(inputs)
    for result in results:
        print(json.dumps(result, ensure_ascii=False) if args.json else format_result(result))
    return results


@user_errors
def reproduce_main(argv=None):
    """``oar reproduce NAME|nlp|video|all [-o k=v …] [--dry_run]``: retrain, re-measure, rewrite cards and RESULTS.md."""
    parser = argparse.ArgumentParser(prog="oar reproduce", description=reproduce_main.__doc__)
    parser.add_argument("target")
    parser.add_argument("-o", "--override", dest="overrides", nargs="+", action="extend", default=[],
                        metavar="KEY=VALUE",
                        help="config overrides for every model (e.g. a smaller budget)")
    parser.add_argument("--device", choices=["cpu", "gpu"], default="cpu")
    parser.add_argument("--output_root", default=os.path.join("outputs", "reproduce"))
    parser.add_argument("--dry_run", action="store_true",
                        help="write weights, catalog and RESULTS.md under <output_root>/dry_run/, not the repository")
    parser.add_argument("--quiet", action="store_true")
    args = parser.parse_args(argv)
    _register_everything()
    set_device(args.device)
    from .reproduce import reproduce
    updated = reproduce(args.target, args)
    for entry in updated:
        print(json.dumps({"name": entry["name"], "metrics": entry.get("metrics")}, ensure_ascii=False))
    return updated
