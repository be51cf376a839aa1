"""``oar export NAME --output DIR``: a zoo model's traced program (and ONNX model) with its task files."""
import os
import sys

from .. import exported
from ..api import export
from ..usage import UsageError

__all__ = ["add_arguments", "run"]


def add_arguments(parser):
    parser.add_argument("name", help="a zoo model (see `oar list`)")
    parser.add_argument("--output", required=True, metavar="DIR", help="the directory to write (created)")
    parser.add_argument("--format", choices=["oar", "onnx"], default="oar",
                        help="oar: the traced program (JSON + npz); onnx: also model.onnx (needs the export extra)")


def run(args):
    """Write a zoo model's export directory: its traced program, task files, weights and a manifest."""
    if os.path.exists(args.output) and os.listdir(args.output) and not exported.is_export(args.output):
        raise UsageError(f"{args.output} exists and is not an export directory; give a new or empty one")
    manifest = export(args.name, args.output, formats=("oar", args.format))
    written = ", ".join(f for f in ("program", manifest["onnx"], manifest["weights"], "manifest.json") if f)
    print(f"{args.name}: wrote {written} into {args.output}; run it with `oar run {args.output} …` "
          f"or zoo.load({args.output!r})", file=sys.stderr)
