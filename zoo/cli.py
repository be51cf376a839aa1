"""The ``oar`` command: ``oar list|show|run|reproduce|train|eval|infer|bench …``."""
import argparse
import sys

from . import commands

__all__ = ["main"]


def _bench_main(argv):
    from . import bench
    parser = argparse.ArgumentParser(prog="oar bench", description="Run a benchmark; prints JSON.")
    parser.add_argument("name", choices=sorted(bench.SUITES))
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--out")
    args = parser.parse_args(argv)
    return bench.run(args.name, quick=args.quick, out=args.out)


COMMANDS = {
    "list": commands.list_main,
    "show": commands.show_main,
    "run": commands.run_main,
    "reproduce": commands.reproduce_main,
    "train": commands.train_main,
    "eval": commands.eval_main,
    "infer": commands.infer_main,
    "bench": _bench_main,
}


def main(argv=None):
    """Dispatch ``oar COMMAND …`` to the command's implementation."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help") or argv[0] not in COMMANDS:
        known = ", ".join(COMMANDS)
        if argv and argv[0] not in ("-h", "--help"):
            print(f"oar: unknown command {argv[0]!r} (commands: {known})", file=sys.stderr)
            raise SystemExit(2)
        print(f"usage: oar COMMAND [options]\ncommands: {known}\n`oar COMMAND -h` for a command's options")
        return None
    return COMMANDS[argv[0]](argv[1:])


if __name__ == "__main__":
    main()
