"""What ``oar train``, ``oar eval`` and ``oar infer`` share: the config flags, the run directory, the
checkpoint to use."""
import os

from framework import set_device
from framework.config import load_config
from framework.engine import runner

from ..registration import register_everything
from ..resolver import run_weights
from ..usage import UsageError
from . import flags

__all__ = ["config_arguments", "run_dir_arguments", "setup", "weights_of"]


def config_arguments(parser, config_required=True):
    """``-c``, ``-o``, ``--device`` and ``--output_dir``."""
    flags.config(parser, config_required)
    flags.overrides(parser)
    flags.device(parser)
    flags.output_dir(parser)


def run_dir_arguments(parser):
    """The flags of a command that reads a finished run (``eval``, ``infer``)."""
    config_arguments(parser, config_required=False)
    parser.add_argument("--checkpoint", help="weights to use (default: <output_dir>/best.npz, else last.npz)")


def _load_run_config(args):
    """The config of ``-c`` (or, without it, the one the run saved in ``--output_dir``), with ``-o`` applied."""
    path = args.config
    if path is None:
        if not args.output_dir:
            raise UsageError("give the config with -c, or a run directory with --output_dir")
        path = os.path.join(args.output_dir, "config.yaml")
        if not os.path.isfile(path):
            raise UsageError(f"{args.output_dir} holds no config.yaml (not a run directory of `oar train`); "
                             f"give the config with -c")
    return load_config(path, args.override)


def setup(args, for_inference):
    """Registers every package, selects the device and returns ``(config, run directory)``; for inference
    the config is the run's (:func:`framework.engine.runner.run_config`)."""
    register_everything()
    set_device(args.device)
    cfg = _load_run_config(args) if for_inference else load_config(args.config, args.override)
    output_dir = args.output_dir or runner.default_output_dir(cfg)
    if for_inference:
        cfg = runner.run_config(cfg, output_dir)
    return cfg, output_dir


def weights_of(args, output_dir):
    """``(weights file, kind)`` to predict or evaluate with: ``--checkpoint`` (plain weights), else the run
    directory's (:func:`zoo.resolver.run_weights`: ``best.npz`` or ``last.npz`` of ``oar train``, the
    compressed ``weights.npz`` of ``oar compress``)."""
    return (args.checkpoint, "trained") if args.checkpoint else run_weights(output_dir)
