"""``oar compress``: its arguments and what it prints.

``oar compress -c configs/slim/X.yaml --model NAME_OR_CONFIG [--output_dir D]``
compresses and prints the report as one JSON line; ``oar compress --report
--model NAME_OR_CONFIG`` prints the model's multiply-adds and parameters (one
JSON line; ``--layers`` adds each layer's multiply-adds).
"""
import json
import os
import sys

from ..usage import UsageError
from . import flags

__all__ = ["add_arguments", "run"]


def add_arguments(parser):
    """The flags of ``oar compress``."""
    parser.add_argument("-c", "--config", help="a compression config (configs/slim/*.yaml)")
    parser.add_argument("--model", required=True, help="a zoo model name, or a model config file")
    parser.add_argument("--weights", help="weights for a model given as a config (default: as built)")
    parser.add_argument("--from_scratch", action="store_true",
                        help="start the model from its initial weights (a distillation student)")
    flags.overrides(parser, help="override compression settings, e.g. -o prune.flops_target=0.6")
    flags.output_dir(parser, help="where to write (default: outputs/compress/<model>-<config name>)")
    parser.add_argument("--report", action="store_true", help="only count multiply-adds and parameters")
    parser.add_argument("--layers", action="store_true", help="with --report: each layer's multiply-adds")
    flags.device(parser)
    flags.quiet(parser)


def run(args):
    """Run ``oar compress`` on parsed ``args`` (see the module docstring)."""
    from framework import set_device
    from ..slim.run import compress, report
    set_device(args.device)
    if args.report:
        counted = report(args.model, args.weights)
        if not args.layers:
            counted.pop("layers")
        print(json.dumps(counted))
        return 0
    if not args.config:
        raise UsageError("give a compression config with -c (or --report to count FLOPs and parameters)")
    name = os.path.splitext(os.path.basename(args.model))[0]
    output_dir = args.output_dir or os.path.join(
        "outputs", "compress", f"{name}-{os.path.splitext(os.path.basename(args.config))[0]}")
    result = compress(args.config, args.model, output_dir, args.override, args.weights, args.from_scratch,
                      args.device if args.device != "cpu" else None, progress=not args.quiet)
    print(f"compress: wrote {output_dir}", file=sys.stderr)
    print(json.dumps({k: result[k] for k in ("strategy", "model", "before", "after")}, default=float))
    return 0
