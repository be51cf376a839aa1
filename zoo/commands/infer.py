"""``oar infer``: predict with a run's checkpoint (the inputs and outputs of ``oar run``)."""
import os

from ..build import weighted_task
from .predicting import input_arguments, inputs, predict_and_write
from .rundir import run_dir_arguments, setup, weights_of

__all__ = ["add_arguments", "run"]


def add_arguments(parser):
    run_dir_arguments(parser)
    input_arguments(parser)


def run(args):
    """Predict with a run's checkpoint: one line per input (``--json``: one JSON object)."""
    given = inputs(args)                    # a missing or unreadable input file fails before the model loads
    cfg, output_dir = setup(args, for_inference=True)
    task = weighted_task(cfg, *weights_of(args, output_dir))
    if args.device and args.device != "cpu":
        task.model.to(args.device)
    task.device = args.device
    predict_and_write(task, args, os.path.basename(output_dir.rstrip(os.sep)) or output_dir, given)
