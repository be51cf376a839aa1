"""``oar bench cli``: ``oar run lac_pku --input_file`` beside the batched task API, in one command.

Both tag the same 1,000 People's Daily test sentences (``quick``: 200):

- ``api``: ``zoo.load("lac_pku").predict(lines)`` in this process, one call over
  every line (the task sorts by length and runs 64 at a time): sentences/s of
  the ``predict`` call alone, model already loaded;
- ``cli``: the installed ``oar`` console script as a separate process, the lines
  in a file: sentences/s over the whole process (start, imports, model load,
  reading, batching, writing), and over the process less the same command's
  time on a one-line file (its fixed start-up cost).

``ratio`` is ``api / cli`` (1.0: the command is as fast as the API; the target is
at most 1.2), for the whole process and for the part after start-up. Each figure
is the best of ``repeat`` runs.
"""
import os
import shutil
import subprocess
import sys
import tempfile

from framework.timing import best_time

from .lac import peoples_daily_test_texts

__all__ = ["run_all"]


def _best_process_time(command, repeat):
    """Shortest wall time of running ``command`` as a process (no warm-up run)."""
    return best_time(lambda: subprocess.run(command, check=True, stdout=subprocess.DEVNULL,
                                            stderr=subprocess.DEVNULL), repeat=repeat, warmup=0)


def run_all(quick=False, repeat=3):
    """``{"lines", "api", "cli", "ratio"}``; see the module docstring."""
    import zoo
    lines = peoples_daily_test_texts(200 if quick else 1000)
    task = zoo.load("lac_pku")
    task.predict(lines[:64])                                   # warm-up
    api = best_time(lambda: task.predict(lines), repeat=repeat, warmup=0)
    oar = shutil.which("oar", path=os.path.dirname(sys.executable)) or shutil.which("oar")
    with tempfile.TemporaryDirectory() as folder:
        many, one = os.path.join(folder, "lines.txt"), os.path.join(folder, "one.txt")
        with open(many, "w", encoding="utf-8") as f:
            f.write("\n".join(lines) + "\n")
        with open(one, "w", encoding="utf-8") as f:
            f.write(lines[0] + "\n")
        whole = _best_process_time([oar, "run", "lac_pku", "--input_file", many], repeat)
        startup = _best_process_time([oar, "run", "lac_pku", "--input_file", one], repeat)
    n = len(lines)
    rates = {"api": n / api, "cli_process": n / whole, "cli_after_startup": n / max(whole - startup, 1e-9)}
    return {"lines": n,
            "api": {"sentences_per_s": round(rates["api"], 1), "seconds": round(api, 3)},
            "cli": {"sentences_per_s": round(rates["cli_process"], 1), "seconds": round(whole, 3),
                    "startup_seconds": round(startup, 3),
                    "sentences_per_s_after_startup": round(rates["cli_after_startup"], 1)},
            "ratio": {"process": round(rates["api"] / rates["cli_process"], 3),
                      "after_startup": round(rates["api"] / rates["cli_after_startup"], 3)}}
