"""``oar run MODEL``: predict with a zoo model, a run directory or an export directory, one line per input."""
import argparse
import os

from ..api import RUNTIMES, load, resolve
from ..catalog import cards
from ..ray import add_arguments as engine_arguments, run as run_on_ray
from ..tasks import TASK_TABLE
from ..usage import UsageError
from . import flags
from .predicting import check_user_dict, input_arguments, inputs, predict_and_write, predict_options, use_user_dict

__all__ = ["add_arguments", "run"]


def _models_by_task():
    """``task: name, name, …`` lines of the catalog, for ``oar run -h``."""
    grouped = {}
    for entry in cards().values():
        grouped.setdefault(entry.task, []).append(entry.name)
    return "\n".join(f"  {task}: {', '.join(names)}" for task, names in grouped.items())


def add_arguments(parser):
    parser.add_argument("name", metavar="MODEL", help="a zoo model (see below, or `oar list`), a run directory of "
                        "`oar train` or `oar compress`, or an export directory of `oar export`")
    input_arguments(parser)
    flags.device(parser)
    parser.add_argument("--runtime", choices=list(RUNTIMES), default="oar",
                        help="run the network on oar's traced program (default) or on ONNX Runtime "
                             "(exported once; needs the export extra)")
    parser.add_argument("--eager", action="store_true", help="run the model eagerly instead of its traced program")
    parser.add_argument("--user_dict", metavar="FILE",
                        help="a user dictionary in LAC's format (lexical analysis models that apply one: lac, "
                             "lac_seg, ...), one phrase a line: 春天/SEASON, 花开, 花/n 开/v")
    parser.add_argument("--score_threshold", type=float, metavar="S",
                        help="the least score of a box listed (detection models; default: the model's)")
    parser.add_argument("--output_dir", dest="draw_dir", metavar="DIR",
                        help="also write each input image with its boxes drawn into DIR (detection models)")
    engine_arguments(parser)
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.epilog = "models, by task:\n" + _models_by_task() + \
        "\n\nexamples:\n  oar run lac_pku --input_text \"今天是个好日子\"\n  oar run senta_bilstm --input_file - < reviews.txt\n" \
        "  oar run ssd_mobilenet_v1_shapes --input_path a.jpg b.jpg --output_dir drawn"


def _check_input_kind(card, args):
    """Refuse text for a model that reads files, and files for one that reads text, before loading it."""
    spec = TASK_TABLE.get(card.task)
    wants_paths = spec is not None and spec.kind == "file"
    if wants_paths and not args.input_path:
        given = "--input_text" if args.input_text else "--input_file"
        raise UsageError(f"{card.name} is a {card.task} model: give files with --input_path, not {given}")
    if not wants_paths and args.input_path:
        raise UsageError(f"{card.name} is a {card.task} model: give text with --input_text or "
                         f"--input_file, not --input_path")


def run(args):
    """Predict with a model: one line per input (``--json``: one JSON object that echoes the input)."""
    card = resolve(args.name)
    if args.eager and args.runtime != "oar":
        raise UsageError("--eager runs oar's eager model; it does not go with --runtime onnxruntime")
    check_user_dict(card, args)
    if args.engine == "ray":                # Ray Data reads the lines (texts, or paths for a path model) and writes
        if not args.input_file:             # the shards (zoo/ray.py)
            raise UsageError("--engine ray reads --input_file (a path or URL with one input per line)")
        args.json = True                    # rows are JSON: the model's own whitespace rule, as with --json
        model = os.path.abspath(args.name) if card.origin != "zoo" else args.name    # the actors' cwd may differ
        return run_on_ray(args, model, {} if args.top_k is None else
                          predict_options(load(card, static=False), args, card.name))
    _check_input_kind(card, args)
    given = inputs(args)                    # a missing or unreadable input file fails before the model loads
    task = load(card, device=args.device, static=not args.eager, runtime=args.runtime)
    use_user_dict(task, args)
    predict_and_write(task, args, card.name, given)
