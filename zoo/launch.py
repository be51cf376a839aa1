"""Running ``oar train`` as N data-parallel processes: ``oar train --nproc N`` and a card whose
``reproduce.nproc`` is above one both start their training here."""
import os
import sys

from framework import distributed

from .catalog import ROOT

__all__ = ["launch_training"]


def launch_training(nproc, argv):
    """Run ``oar train *argv`` (a list of its arguments) as ``nproc`` MPI processes and wait; returns the
    launcher's exit status (non-zero when any rank failed). The checkout is put on ``PYTHONPATH`` so the
    processes import this copy of oar."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (ROOT, os.environ.get("PYTHONPATH")) if p))
    return distributed.launch(nproc, [sys.executable, "-m", "zoo.cli", "train", *argv], env=env)
