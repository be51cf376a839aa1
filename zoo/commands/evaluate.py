"""``oar eval``: metrics of a run's checkpoint on a data split, or on a labelled file of yours, as one JSON line."""
import json

from framework.config import parse_overrides
from framework.engine import runner

from .rundir import checkpoint, run_dir_arguments, setup

__all__ = ["add_arguments", "run"]


def add_arguments(parser):
    run_dir_arguments(parser)
    parser.add_argument("--split", default="eval", choices=["train", "eval", "test"])
    parser.add_argument("--test_file", metavar="F",
                        help="evaluate on every example of your labelled file (or image folder) F, in the "
                             "training format of the run (implies --split test)")


def run(args):
    """Metrics of a run's checkpoint on a data split (or all of ``--test_file``), as one JSON line."""
    cfg, output_dir = setup(args, for_inference=True)
    given = ((parse_overrides(args.override).get("data") or {}).get("test") or {})
    tested = runner.with_test_file(cfg, args.test_file, given if isinstance(given, dict) else {})
    split = "test" if tested is not cfg else args.split
    metrics = runner.evaluate_config(tested, checkpoint(args, output_dir), split=split, device=args.device)
    print(json.dumps(metrics))
