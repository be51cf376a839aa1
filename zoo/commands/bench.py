"""``oar bench SUITE``: run a benchmark suite; its JSON on stdout."""
__all__ = ["add_arguments", "run"]


def add_arguments(parser):
    from .. import bench
    parser.add_argument("name", choices=sorted(bench.SUITES))
    parser.add_argument("--quick", action="store_true", help="small sizes, few repeats")
    parser.add_argument("--out", help="also write the JSON here")
    parser.add_argument("--model", action="append", metavar="MODEL",
                        help="predict: measure this model (a zoo name, a run or an export directory; repeatable)")


def run(args):
    """Run a benchmark suite; prints its JSON."""
    from .. import bench
    bench.run(args.name, quick=args.quick, out=args.out, models=args.model)
