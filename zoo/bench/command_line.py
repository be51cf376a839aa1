"""``oar bench cli``: ``oar run lac_pku --input_file`` beside the batched task API, in one command.

Both tag the same 1,000 People's Daily test sentences (``quick``: 200):

- ``api``: ``zoo.load("lac_pku").predict(lines)`` in this process, one call over
  every line (the task sorts by length and runs 64 at a time): sentences/s of
  the ``predict`` call alone, model already loaded;
- ``cli``: the installed ``oar`` console script as a separate process, the lines
  in a file: sentences/s over the whole process (start, imports, model load,
  reading, batching, writing), and over the process less the same command's
  time on a one-line file (its fixed start-up cost).

``ratio_*`` is the command's time over the API's for the same lines (1.0: as
fast as the API; the target is at most 1.2), for the whole process and for the
part after start-up; in wall time and in CPU time (this process's for the API,
the child's for the command: the steadier figure on a shared machine). Each
figure is the best of ``repeat`` runs.
"""
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time

from framework.timing import best_times

from .lac import peoples_daily_test_texts

__all__ = ["run_all"]


def _children_cpu():
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _best_process_times(command, repeat):
    """(shortest wall time, shortest CPU time) of running ``command`` as a process (no warm-up run)."""
    walls, cpus = [], []
    for _ in range(repeat):
        wall, cpu = time.perf_counter(), _children_cpu()
        subprocess.run(command, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        walls.append(time.perf_counter() - wall)
        cpus.append(_children_cpu() - cpu)
    return min(walls), min(cpus)


def _figures(n, api, whole, startup):
    """Rates and api/cli ratios from (api, whole process, start-up) seconds."""
    after = max(whole - startup, 1e-9)
    return {"api_sentences_per_s": round(n / api, 1), "cli_sentences_per_s": round(n / whole, 1),
            "cli_seconds": round(whole, 3), "cli_startup_seconds": round(startup, 3),
            "cli_sentences_per_s_after_startup": round(n / after, 1),
            "ratio_process": round(whole / api, 3), "ratio_after_startup": round(after / api, 3)}


def run_all(quick=False, repeat=3):
    """``{"lines", "wall": {…}, "cpu": {…}}``; see the module docstring."""
    import zoo
    lines = peoples_daily_test_texts(200 if quick else 1000)
    task = zoo.load("lac_pku")
    task.predict(lines[:64])                                   # warm-up
    api = best_times(lambda: task.predict(lines), repeat=repeat, warmup=0)
    oar = shutil.which("oar", path=os.path.dirname(sys.executable)) or shutil.which("oar")
    with tempfile.TemporaryDirectory() as folder:
        many, one = os.path.join(folder, "lines.txt"), os.path.join(folder, "one.txt")
        with open(many, "w", encoding="utf-8") as f:
            f.write("\n".join(lines) + "\n")
        with open(one, "w", encoding="utf-8") as f:
            f.write(lines[0] + "\n")
        whole = _best_process_times([oar, "run", "lac_pku", "--input_file", many], repeat)
        startup = _best_process_times([oar, "run", "lac_pku", "--input_file", one], repeat)
    n = len(lines)
    return {"lines": n, "wall": _figures(n, api[0], whole[0], startup[0]),
            "cpu": _figures(n, api[1], whole[1], startup[1])}
