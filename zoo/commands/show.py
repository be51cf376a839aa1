"""``oar show NAME``: one model card (YAML, or ``--json``)."""
import json

from ..catalog import card

__all__ = ["add_arguments", "run"]


def add_arguments(parser):
    parser.add_argument("name")
    parser.add_argument("--json", action="store_true", help="the card as one JSON object")


def run(args):
    """One model card (YAML, or ``--json``)."""
    import yaml
    entry = card(args.name)
    if args.json:
        print(json.dumps(entry, ensure_ascii=False))
    else:
        print(yaml.safe_dump(entry, sort_keys=False, allow_unicode=True), end="")
