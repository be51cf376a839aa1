"""``LAC.train`` beside Baidu's: :class:`zoo.lac.LAC`'s fine-tuning and LAC 2.1.2's own ``LAC.train`` on the same
``word/tag`` lines and passes, timed in one command::

    PADDLE_PY=$(../shared/reference/paddle_lac/setup.sh) python -m zoo.bench.lac_train [--lines 1000] [--iter_num 10]

The lines are the first ``--lines`` People's Daily train-split sentences written in LAC's ``word/tag`` format
(PKU tags; those LAC's ``tag.dic`` does not name train as ``O`` on both sides), or ``--train_data FILE``.
Baidu's side runs :mod:`zoo.bench.lac_train_engine` under ``$PADDLE_PY`` first, then oar's ``LAC().train``
runs in this process; both on one thread (``OMP_NUM_THREADS``, ``CPU_NUM``, ``OPENBLAS_NUM_THREADS`` and
``OAR_NUM_THREADS`` set to 1 for the engine; set them for this process when you start it). One JSON line:
each side's wall and CPU seconds and oar's time over Baidu's (below 1: oar is faster).
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

from nlp.data.peoples_daily import read_sentences

from ..lac import LAC

__all__ = ["write_training_lines", "time_oar", "time_engine", "main"]

ENGINE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "lac_train_engine.py")


def write_training_lines(path, lines):
    """Write the first ``lines`` People's Daily train sentences to ``path`` as ``word/tag`` lines; returns path."""
    with open(path, "w", encoding="utf-8") as f:
        for sentence in read_sentences("train")[:lines]:
            f.write(" ".join(f"{w}/{t}" for w, t in zip(sentence.words, sentence.tags)) + "\n")
    return path


def time_oar(train_data, iter_num, output_dir):
    """``{"train_s", "train_cpu_s"}`` of ``LAC().train(output_dir, train_data, iter_num=iter_num)``."""
    lac = LAC()
    start, cpu = time.perf_counter(), time.process_time()
    lac.train(output_dir, train_data, iter_num=iter_num)
    return {"train_s": round(time.perf_counter() - start, 2), "train_cpu_s": round(time.process_time() - cpu, 2)}


def time_engine(python, train_data, iter_num):
    """The JSON report of :mod:`zoo.bench.lac_train_engine` run by ``python`` on one thread."""
    env = {**os.environ, "OMP_NUM_THREADS": "1", "CPU_NUM": "1", "OPENBLAS_NUM_THREADS": "1"}
    done = subprocess.run([python, ENGINE, train_data, "--iter_num", str(iter_num), "--thread_num", "1"],
                          env=env, check=True, capture_output=True, text=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--train_data", help="a word/tag file (default: People's Daily train lines)")
    parser.add_argument("--lines", type=int, default=1000)
    parser.add_argument("--iter_num", type=int, default=10)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="oar-lac-train-") as folder:
        train_data = args.train_data or write_training_lines(os.path.join(folder, "train.txt"), args.lines)
        python = os.environ.get("PADDLE_PY")
        engine = time_engine(python, train_data, args.iter_num) if python else None
        oar = time_oar(train_data, args.iter_num, os.path.join(folder, "run"))
    report = {"train_data": args.train_data or f"the first {args.lines} People's Daily train lines",
              "iter_num": args.iter_num, "oar": oar, "engine": engine}
    if engine:
        report["oar_over_engine"] = {"wall": round(oar["train_s"] / engine["train_s"], 3),
                                     "cpu": round(oar["train_cpu_s"] / engine["train_cpu_s"], 3)}
    print(json.dumps(report, ensure_ascii=False))


if __name__ == "__main__":
    sys.exit(main())
