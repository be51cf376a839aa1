"""Write a config's dataset as tar shards: ``python tools/write_shards.py -c CONFIG --split train --prefix P``.

Builds ``data.<split>`` of the config (``-o`` overrides apply) and writes its
samples, in order, as WebDataset-layout shards ``P000000.tar``, ``P000001.tar``
… plus ``Pindex.json`` with each shard's sample count and sha256, which every
read checks (see :mod:`framework.io.shards`); ``P`` is a path or a
URL prefix fsspec writes (``s3://bucket/train-``). Prints the index as JSON. A
training config then reads them with ``data.train: {type: ShardDataset, index:
P…index.json}`` from wherever they are served.
"""
import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from framework.config import load_config  # noqa: E402
from framework.engine.runner import build_dataset  # noqa: E402
from framework.io.shards import write_shards  # noqa: E402
from zoo.api import register_everything  # noqa: E402
from zoo.cli import run_tool  # noqa: E402


def main(argv=None):
    """Parse the options, build the dataset, write its shards and print the index; returns it."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-c", "--config", required=True, help="the YAML config whose data section to write")
    parser.add_argument("-o", "--override", nargs="+", action="extend", default=[], metavar="KEY=VALUE")
    parser.add_argument("--split", default="train", choices=["train", "eval", "test"])
    parser.add_argument("--prefix", required=True, help="path or URL prefix of the shards (e.g. shards/train-)")
    parser.add_argument("--per_shard", type=int, default=1000, help="samples per shard (default 1000)")
    args = parser.parse_args(argv)
    if args.per_shard < 1:
        parser.error("--per_shard must be >= 1")
    register_everything()
    dataset = build_dataset(load_config(args.config, args.override), args.split)
    if dataset is None:
        parser.error(f"{args.config} has no data.{args.split}")
    index = write_shards((dataset[i] for i in range(len(dataset))), args.prefix, max_count=args.per_shard)
    print(json.dumps(index))
    return index


if __name__ == "__main__":
    sys.exit(run_tool(main))
