"""``oar export MODEL --output DIR``: a model's traced program (and ONNX model) with its task files."""
import os
import sys

from .. import exported
from ..api import export
from ..resolver import ACCEPTED
from ..usage import UsageError

__all__ = ["add_arguments", "run"]


def add_arguments(parser):
    parser.add_argument("name", metavar="MODEL", help=f"what to export: {ACCEPTED}")
    parser.add_argument("--output", required=True, metavar="DIR", help="the directory to write (created)")
    parser.add_argument("--format", choices=["oar", "onnx"], default="oar",
                        help="oar: the traced program (JSON + npz); onnx: also model.onnx (needs the export extra)")


def run(args):
    """Write a model's export directory: its traced program, task files, weights and a manifest."""
    if os.path.exists(args.output) and not os.path.isdir(args.output):
        raise UsageError(f"--output {args.output} exists and is not a directory; give a new or empty directory")
    if os.path.isdir(args.output) and os.listdir(args.output) and not exported.is_export(args.output):
        raise UsageError(f"--output {args.output} exists and is not an export directory; give a new or empty one")
    if os.path.isdir(args.name) and os.path.abspath(args.output) == os.path.abspath(args.name):
        raise UsageError(f"--output {args.output} is the model being exported; give another directory")
    manifest = export(args.name, args.output, formats=("oar", args.format))
    card = manifest["card"]
    written = ", ".join(f for f in ("program", card.get("onnx"), (card.get("weights") or {}).get("path"),
                                    exported.MANIFEST) if f)
    print(f"{card['name']}: wrote {written} into {args.output}; run it with `oar run {args.output} …` "
          f"or zoo.load({args.output!r})", file=sys.stderr)
