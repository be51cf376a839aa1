"""``oar show MODEL``: one model card (YAML, or ``--json``): a zoo model's, a run's or an export's."""
import json

from ..resolver import ACCEPTED, resolve

__all__ = ["add_arguments", "run"]


def add_arguments(parser):
    parser.add_argument("name", metavar="MODEL", help=ACCEPTED)
    parser.add_argument("--json", action="store_true", help="the card as one JSON object")


def run(args):
    """One model card (YAML, or ``--json``)."""
    import yaml
    entry = resolve(args.name).to_mapping()
    if args.json:
        print(json.dumps(entry, ensure_ascii=False))
    else:
        print(yaml.safe_dump(entry, sort_keys=False, allow_unicode=True), end="")
