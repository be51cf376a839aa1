"""The implementations behind ``oar train|eval|infer`` and ``tools/train|eval|infer.py``.

Each ``*_main(argv)`` parses the shared options, loads the config (with
``-o key=value`` overrides) and calls ``framework.engine.runner``. Errors that
are the user's (config, data, checkpoint) print one line and exit with 2.
"""
import argparse
import json
import os
import sys

from framework import set_device
from framework.config import ConfigError, load_config
from framework.engine import CheckpointError, TrainingError, runner
from framework.io import DataLoaderError
from framework.backend import DeviceError

__all__ = ["train_main", "eval_main", "infer_main", "user_errors"]

USER_ERRORS = (ConfigError, CheckpointError, TrainingError, DataLoaderError, DeviceError, FileNotFoundError)


def _register_everything():
    """Import the packages that register models, datasets and tasks."""
    from . import toy  # noqa: F401


def _parser(description, checkpoint):
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("-c", "--config", required=True, help="YAML config file")
    parser.add_argument("-o", "--override", nargs="+", default=[], metavar="KEY=VALUE",
                        help="override config values, e.g. -o train.epochs=3 model.hidden=64")
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


def user_errors(main):
    """Run ``main(argv)``; a user error becomes one line on stderr and exit status 2."""
    def wrapped(argv=None):
        try:
            return main(argv)
        except USER_ERRORS as err:
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
    """``oar train -c CONFIG [-o k=v …] [--resume [PATH]] [--seed N] [--plot]``."""
    parser = _parser("Train a model from a config.", checkpoint=False)
    parser.add_argument("--resume", nargs="?", const=True, default=None,
                        help="continue from the last checkpoint in the output dir, or from PATH")
    parser.add_argument("--seed", type=int, help="override train.seed")
    parser.add_argument("--plot", action="store_true", help="write loss/metric curves to <output_dir>/curves.png")
    parser.add_argument("--quiet", action="store_true", help="no progress lines")
    args = parser.parse_args(argv)
    cfg, output_dir = _setup(args)
    trainer, summary = runner.train(cfg, output_dir=output_dir, resume=args.resume, device=args.device,
                                    seed=args.seed, progress=not args.quiet)
    if args.plot:
        from framework.engine.plot import plot_curves
        plot_curves(os.path.join(output_dir, "metrics.jsonl"), os.path.join(output_dir, "curves.png"))
    print(json.dumps({k: v for k, v in summary.items() if k != "history"}))
    return summary


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
    """``oar infer -c CONFIG (--input TEXT … | --input_file FILE) [--output FILE]``: JSON lines out."""
    parser = _parser("Predict on raw inputs; writes one JSON object per input.", checkpoint=True)
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--input", nargs="+", help="inputs given on the command line")
    source.add_argument("--input_file", help="a file with one input per line")
    parser.add_argument("--output", help="write JSON lines here instead of stdout")
    args = parser.parse_args(argv)
    cfg, output_dir = _setup(args)
    if args.input_file:
        if not os.path.isfile(args.input_file):
            raise FileNotFoundError(f"input file not found: {args.input_file}")
        with open(args.input_file, encoding="utf-8") as f:
            inputs = [line.rstrip("\n") for line in f if line.strip()]
    else:
        inputs = args.input
    results = runner.infer(cfg, _checkpoint(args, output_dir), inputs, device=args.device)
    lines = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in results)
    if args.output:
        with open(args.output, "w", encoding="utf-8") as f:
            f.write(lines)
    else:
        sys.stdout.write(lines)
    return results
