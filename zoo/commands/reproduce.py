"""``oar reproduce TARGET``: retrain and re-measure zoo models, rewrite their cards and RESULTS.md blocks."""
import json

from framework import set_device

from ..registration import register_everything
from ..reproduce.options import add_arguments, from_args

__all__ = ["add_arguments", "run"]


def run(args):
    """Retrain and re-measure zoo models; rewrite their cards and RESULTS.md blocks. One JSON line per model."""
    options = from_args(args)
    register_everything()
    set_device(options.device)
    from ..reproduce import reproduce
    for entry in reproduce(options.target, options):
        print(json.dumps({"name": entry.name, "metrics": entry.to_mapping().get("metrics")}, ensure_ascii=False))
