"""``oar train -c CONFIG``: train a model from a YAML config; the summary as one JSON line."""
import json
import os

from framework import distributed
from framework.engine import runner

from ..launch import launch_training
from . import flags
from .rundir import config_arguments, setup

__all__ = ["add_arguments", "run"]


def add_arguments(parser):
    config_arguments(parser)
    parser.add_argument("--resume", nargs="?", const=True, default=None,
                        help="continue from the last checkpoint in the output dir, or from PATH")
    parser.add_argument("--seed", type=int, help="override train.seed")
    parser.add_argument("--plot", action="store_true", help="write loss/metric curves to <output_dir>/curves.png")
    flags.quiet(parser)
    parser.add_argument("--nproc", type=int, default=1,
                        help="data-parallel processes started through mpiexec (train.batch_size stays global)")


def run(args):
    """Train from a config; prints the summary (best metric, checkpoints) as one JSON line.

    ``--nproc N`` runs N data-parallel processes through ``mpiexec``; a run
    already started by an MPI launcher trains on the processes it started.
    """
    launched = distributed.launched_by_mpi()
    if args.nproc > 1 and not launched:
        return launch_training(args.nproc, args.argv)
    if launched and args.nproc not in (1, launched):
        raise distributed.DistributedError(f"--nproc {args.nproc} but the MPI launcher started {launched} processes")
    cfg, output_dir = setup(args, for_inference=False)
    trainer, summary = runner.train(cfg, output_dir=output_dir, resume=args.resume, device=args.device,
                                    seed=args.seed, progress=not args.quiet)
    if trainer.rank == 0:
        if args.plot:
            from framework.engine.plot import plot_curves
            plot_curves(os.path.join(output_dir, "metrics.jsonl"), os.path.join(output_dir, "curves.png"))
        print(json.dumps({k: v for k, v in summary.items() if k != "history"}))
    return 0

