"""The ``oar`` commands: a lazy table of one module per command.

Each :class:`Command` names its one-line help and the module under
``zoo.commands`` that declares its flags (``add_arguments(parser)``) and does
the work (``run(args)``); :func:`zoo.cli.build_parser` imports only the module
of the command being run (as pip's ``commands_dict`` does), so ``oar --help``
and ``oar list`` do not import what ``oar serve`` needs. Flags several commands
share are declared once, in :mod:`zoo.commands.flags`. ``zoo.cli`` owns the
exit status; ``tools/train.py`` and the other tools call ``zoo.cli.main`` with
their command name, so ``python tools/train.py -c X`` ≡ ``oar train -c X``. A
command returns normally on success, raises a ``framework.errors.UserError`` for
a user's mistake (exit 1) or ``UsageError`` for arguments that cannot go
together (exit 2).
"""
import dataclasses
import importlib

from ..usage import UsageError

__all__ = ["COMMANDS", "Command", "UsageError", "command_named"]


@dataclasses.dataclass(frozen=True)
class Command:
    """One ``oar`` command: its ``name``, one-line ``help`` and the ``module`` (under ``zoo.commands``) with
    its ``add_arguments(parser)`` and ``run(args)``."""
    name: str
    help: str
    module: str

    def load(self):
        """The command's module (imported on first use)."""
        return importlib.import_module(f"{__name__}.{self.module}")


COMMANDS = [
    Command("list", "list the zoo's models with their test metrics", "listing"),
    Command("show", "print one model card (config, weights, sha256, metrics, source)", "show"),
    Command("run", "predict with a zoo model on texts, a file, stdin or video/image paths", "run"),
    Command("train", "train a model from a YAML config", "train"),
    Command("eval", "evaluate a run's checkpoint on a data split (metrics as JSON)", "evaluate"),
    Command("infer", "predict with a run's checkpoint (same inputs and outputs as run)", "infer"),
    Command("reproduce", "retrain zoo models, rewrite their cards and docs/RESULTS.md", "reproduce"),
    Command("bench", "run a benchmark suite (JSON on stdout)", "bench"),
    Command("export", "write a zoo model's traced program (and ONNX model) with its task files", "export"),
    Command("serve", "serve zoo models over HTTP (batching, health, metrics)", "serve"),
    Command("compress", "prune, quantise (int8) or distil a model from a config; --report counts FLOPs and "
                        "parameters", "compress"),
    Command("warmup", "compile the CPU kernels ahead into the cache (first runs then start warm)", "warmup"),
]


def command_named(name):
    """The :class:`Command` called ``name``, or None."""
    return next((command for command in COMMANDS if command.name == name), None)
