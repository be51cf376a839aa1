"""``oar eval``: metrics of a run's checkpoint on a data split, or on a labelled file of yours, as one JSON line."""
import json

from framework.config import parse_overrides
from framework.engine import runner

from ..build import load_compressed_weights
from .rundir import run_dir_arguments, setup, weights_of

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
    weights, kind = weights_of(args, output_dir)
    metrics = runner.evaluate_config(tested, weights, split=split, device=args.device,
                                     load=load_compressed_weights if kind == "compressed" else None)
    print(json.dumps(metrics))
