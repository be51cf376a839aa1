"""Print a benchmark's JSON: ``python tools/bench.py framework|data [--quick] [--out FILE]``."""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from zoo import bench  # noqa: E402


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("name", choices=sorted(bench.SUITES))
    parser.add_argument("--quick", action="store_true", help="tiny shapes, one repeat (smoke run)")
    parser.add_argument("--out", help="also write the JSON to this file")
    args = parser.parse_args(argv)
    bench.run(args.name, quick=args.quick, out=args.out)


if __name__ == "__main__":
    main()
