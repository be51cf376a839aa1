"""Build the text-matching pairs from People's Daily: ``python tools/make_match_pairs.py --out DIR [--seed S]``.

Writes ``train.tsv``, ``dev.tsv``, ``test.tsv`` (``text_a<TAB>text_b<TAB>label<TAB>neg_type``),
``{split}_triples.tsv`` (``query<TAB>pos<TAB>neg``) and ``stats.json`` into DIR,
and prints the stats as JSON. The same seed always gives the same files; see
:mod:`nlp.simnet.builder` for how pairs are made. The training configs build
the same files into the cache by themselves; this tool writes them where you
want them (to read, or to train on with ``-o data.train.path=DIR/train.tsv``).
"""
import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from nlp.simnet.builder import build_pairs  # noqa: E402
from zoo.cli import run_tool  # noqa: E402


def main(argv=None):
    """Parse the options, build the pairs and print the stats; returns them."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, help="folder to write the files to (replaced when it exists)")
    parser.add_argument("--seed", type=int, default=0, help="seed of every random choice (default 0)")
    parser.add_argument("--train_copies", type=int, default=2,
                        help="rewrites and negatives drawn per train sentence (default 2)")
    parser.add_argument("--corpus_file", help="another corpus file in the format of People's Daily 199801.txt")
    args = parser.parse_args(argv)
    if args.train_copies < 1:
        parser.error("--train_copies must be >= 1")
    stats = build_pairs(args.out, seed=args.seed, train_copies=args.train_copies, path=args.corpus_file)
    print(json.dumps(stats, ensure_ascii=False))
    return stats


if __name__ == "__main__":
    sys.exit(run_tool(main))
