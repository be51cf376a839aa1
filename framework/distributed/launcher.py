"""Starting N processes of one command through the MPI launcher (``mpiexec``).

``oar train --nproc N …`` calls :func:`launch`, which runs ``mpiexec -n N``
on the same Python and arguments. The launcher is looked for next to the
running Python first (the ``mpich`` wheel of ``pip install 'oar[dist]'``
puts ``mpiexec`` in the environment's ``bin/``), then on ``PATH``. Unless the
caller set them, each process gets ``OMP_NUM_THREADS`` and
``OPENBLAS_NUM_THREADS`` of ``cores // N``, so N processes do not fight over
the cores with N full BLAS thread pools.
"""
import os
import shutil
import subprocess
import sys

from .comm import DistributedError

__all__ = ["find_mpiexec", "mpiexec_command", "launch", "THREAD_VARIABLES"]

THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


def find_mpiexec():
    """Path of ``mpiexec`` (or ``mpirun``) beside this Python or on PATH; None when there is none."""
    here = os.path.dirname(sys.executable)
    for name in ("mpiexec", "mpirun"):
        candidate = os.path.join(here, name)
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    for name in ("mpiexec", "mpirun"):
        found = shutil.which(name)
        if found:
            return found
    return None


def _is_open_mpi(mpiexec):
    try:
        version = subprocess.run([mpiexec, "--version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return False
    return "Open MPI" in version.stdout or "OpenRTE" in version.stdout


def mpiexec_command(nproc, command, mpiexec=None):
    """The argument list that runs ``command`` (a list) as ``nproc`` MPI processes.

    Open MPI also gets ``--oversubscribe``, so more processes than cores start
    (MPICH allows that by default).
    """
    if not isinstance(nproc, int) or nproc < 1:
        raise DistributedError(f"nproc must be a positive integer, got {nproc!r}")
    mpiexec = mpiexec or find_mpiexec()
    if mpiexec is None:
        raise DistributedError("no mpiexec found beside this Python or on PATH: pip install 'oar[dist]' "
                               "(mpi4py and the MPICH runtime) or install an MPI")
    extra = ["--oversubscribe"] if _is_open_mpi(mpiexec) else []
    return [mpiexec, "-n", str(nproc), *extra, *command]


def launch(nproc, command, env=None, mpiexec=None):
    """Run ``command`` (a list, e.g. ``[sys.executable, "-m", "zoo.cli", "train", …]``) as ``nproc``
    MPI processes and wait; returns the launcher's exit status (non-zero when any rank failed)."""
    env = dict(os.environ if env is None else env)
    threads = str(max(1, (os.cpu_count() or 1) // nproc))
    for name in THREAD_VARIABLES:
        env.setdefault(name, threads)
    return subprocess.run(mpiexec_command(nproc, command, mpiexec), env=env).returncode
