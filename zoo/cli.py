"""The ``oar`` command: parses ``oar COMMAND …``, runs it and turns the outcome into an exit status.

Exit status 0 on success, 1 on a failed run (a ``UserError``: bad input,
config, file, weights or model name — printed as one line ``oar: error: …``),
2 on a usage error (argparse's, or a ``UsageError``), 130 on Ctrl-C. Results
go to stdout, everything else to stderr; every error and warning line passes
through ``framework.redact.redact``, so no credential a message quotes is
shown. A traceback is printed only for a bug, or for any error with
``--debug`` (or ``OAR_DEBUG=1``). Every process-wide setting is read when a
command starts (:func:`check_settings`), so a value it cannot take fails any
command at once, not only the runs that reach it.
"""
import argparse
import os
import sys
import warnings
from importlib import metadata

from framework import distributed, progress, threadpool
from framework.errors import UserError, describe_os_error
from framework.kernels import choice, providers
from framework.redact import redact
from framework.settings import SettingError, env_flag
from framework.timeouts import network_timeout

from .commands import COMMANDS, UsageError

__all__ = ["main", "build_parser", "guarded", "check_settings", "run_tool", "console", "one_line_warnings"]

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_INTERRUPTED, EXIT_BROKEN_PIPE = 0, 1, 2, 130, 141


def _version():
    try:
        return metadata.version("oar")
    except metadata.PackageNotFoundError:
        return "unknown (not installed)"


class _HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """argparse's, with room for the longest command name beside its help line."""

    def __init__(self, prog):
        super().__init__(prog, max_help_position=32, width=100)
        self._action_max_length = 14


def build_parser(prog="oar", argv=None):
    """The ``oar`` parser: one subcommand per entry of ``zoo.commands.COMMANDS``. With ``argv``, only the
    command it names has its module imported and its flags declared (the others show their help line);
    without, every command's are."""
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--debug", action="store_true", default=argparse.SUPPRESS,
                        help="show the full traceback of an error (also OAR_DEBUG=1)")
    parser = argparse.ArgumentParser(
        prog=prog, parents=[common],
        formatter_class=_HelpFormatter,
        description="oar: train, evaluate, run and benchmark the models of the oar zoo.",
        epilog="`oar COMMAND -h` shows a command's options; `oar run -h` lists the zoo's models.")
    parser.add_argument("--version", action="version", version=f"oar {_version()}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", title="commands")
    commands.required = True
    chosen = None if argv is None else next((a for a in argv if not a.startswith("-")), "")
    for command in COMMANDS:
        sub = commands.add_parser(command.name, help=command.help, description=command.help, parents=[common])
        if chosen is None or chosen == command.name:
            module = command.load()
            module.add_arguments(sub)
            sub.set_defaults(run=module.run)
    return parser


def _report(message, parser_prog="oar"):
    if distributed.is_initialized() and distributed.get_world_size() > 1:
        message = f"[rank {distributed.get_rank()}/{distributed.get_world_size()}] {message}"
    print(f"{parser_prog}: error: {redact(message)}", file=sys.stderr)


def _stop_distributed(code):
    if distributed.is_initialized() and distributed.get_world_size() > 1:
        distributed.abort(code)


def check_settings():
    """Read each process-wide setting once: ``OAR_KERNELS``, ``OAR_GEMM_PROVIDER``, the thread counts
    (``OAR_NUM_THREADS``, ``OMP_NUM_THREADS``, ``OPENBLAS_NUM_THREADS``), ``OAR_PROGRESS``,
    ``OAR_NETWORK_TIMEOUT`` and ``OAR_DIST_TIMEOUT``. A value its setting cannot take raises its one-line
    UserError here, whether or not the command would have reached the setting."""
    for read in (choice.requested, providers.wanted, threadpool.requested_threads, progress.disabled,
                 network_timeout, distributed.timeout_setting):
        read()


def guarded(function, prog="oar", debug=False, usage_prog=None):
    """Call ``function()`` and turn its outcome into an exit status (the rule of every ``oar`` command and tool).

    The settings are checked first (:func:`check_settings`). A ``UserError`` (or an ``OSError`` naming a
    path) prints one line ``PROG: error: …`` and gives 1, a ``UsageError`` gives 2, Ctrl-C 130, a closed
    stdout 141; with ``debug`` (or ``OAR_DEBUG=1``) the error is raised with its traceback instead. Any other
    exception is a bug and propagates.
    """
    try:
        debug = debug or env_flag("OAR_DEBUG")
        check_settings()
        code = function()
        sys.stdout.flush()
        return code if isinstance(code, int) and not isinstance(code, bool) else EXIT_OK
    except UsageError as err:
        if debug:
            raise
        _report(str(err), usage_prog or prog)
        return EXIT_USAGE
    except UserError as err:
        if debug:
            raise
        _report(str(err), prog)
        _stop_distributed(EXIT_FAILED)
        return EXIT_FAILED
    except BrokenPipeError:
        return _broken_pipe()
    except OSError as err:
        if debug or not getattr(err, "filename", None):
            raise
        _report(describe_os_error(err), prog)
        _stop_distributed(EXIT_FAILED)
        return EXIT_FAILED
    except KeyboardInterrupt:
        print(f"{prog}: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED


def main(argv=None, prog="oar"):
    """Run ``oar`` with ``argv`` (default ``sys.argv[1:]``); returns the exit status (never raises SystemExit)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        args = build_parser(prog, argv).parse_args(argv)
    except SystemExit as stop:          # --help, --version (0) or a usage error (2), already printed
        return int(stop.code or 0)
    args.argv = argv[argv.index(args.command) + 1:]
    return guarded(lambda: args.run(args), prog, getattr(args, "debug", False), usage_prog=f"{prog} {args.command}")


def run_tool(function, prog=None):
    """Exit status of a ``tools/*.py`` script's ``function()`` under the same rule as ``oar`` (for ``sys.exit``)."""
    prog = prog or os.path.basename(sys.argv[0])
    one_line_warnings(prog)
    try:
        return guarded(function, prog)
    except SystemExit as stop:
        return stop.code if isinstance(stop.code, int) else (print(stop.code, file=sys.stderr) or EXIT_FAILED)


def _broken_pipe():
    """The reader of stdout went away (``oar run … | head``): stop quietly, as a Unix tool killed by SIGPIPE."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    return EXIT_BROKEN_PIPE


def one_line_warnings(prog="oar"):
    """Show warnings as one line ``PROG: warning: …`` on stderr (what the command's user reads), unless
    ``OAR_DEBUG`` asks for the full form."""
    if not _debug_asked():
        warnings.formatwarning = (lambda message, category, filename, lineno, line=None:
                                  f"{prog}: warning: {redact(str(message))}\n")


def _debug_asked():
    """Whether ``OAR_DEBUG`` asks for the full forms (a value it cannot take counts as no: :func:`guarded`
    reports it in one line)."""
    try:
        return env_flag("OAR_DEBUG")
    except SettingError:
        return False


def console():
    """The ``oar`` console script."""
    one_line_warnings()
    sys.exit(main())


if __name__ == "__main__":
    console()
