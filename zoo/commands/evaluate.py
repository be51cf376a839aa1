"""``oar eval``: metrics of a run's checkpoint on a data split, as one JSON line."""
import json

from framework.engine import runner

from .rundir import checkpoint, run_dir_arguments, setup

__all__ = ["add_arguments", "run"]


def add_arguments(parser):
    run_dir_arguments(parser)
    parser.add_argument("--split", default="eval", choices=["train", "eval", "test"])


def run(args):
    """Metrics of a run's checkpoint on a data split, as one JSON line."""
    cfg, output_dir = setup(args, for_inference=True)
    metrics = runner.evaluate_config(cfg, checkpoint(args, output_dir), split=args.split, device=args.device)
    print(json.dumps(metrics))
