"""``oar bench predict``: the task API at any size — peak memory and seconds of ``predict`` on 100 to 100,000 inputs.

For every LAC, Senta and SimNet zoo model, through ``zoo.load(name).predict``
(static, the default, and ``static=False``), on real inputs: People's Daily
test sentences for LAC, test reviews for Senta, the matching builder's test
pairs for SimNet, repeated in order up to the size and given as a generator
(so the inputs themselves take no memory), on one thread. Seconds are the
process's CPU seconds (steady on a shared machine; ``*_wall_s`` beside them
are wall seconds). Each size runs in a fresh process,
so its ``first`` call pays for what a new process pays (tracing, or loading
the traced program from ``$OAR_HOME/programs``, and first touches), and
``peak_rss_mb`` is that process's peak resident memory
(``VmHWM``, see ``framework.timing.peak_rss_mb``); ``later`` is a second call in the same process
(sizes up to 10,000). Figures per model:

- ``sizes``: ``{n: {"static"|"eager": {"first_s", "later_s", "loaded_rss_mb", "peak_rss_mb"}}}``;
- ``batch1_ms`` / ``batch64_ms``: one input at a time (``batch_size=1``, 200
  inputs, best of 3 passes) and one batch of 64 (the later 1,000-input call, best of 3, over its 16
  batches);
- ``largest``: the largest size's seconds against ``batches x one batch's
  time`` (``scaling``: 1.0 means no cost grows with the number of inputs);
  ``first_over_later_10000``; ``static_over_eager`` at batch 1 and 64.

``quick``: sizes 100 and 1,000 and three models. ``$OAR_BENCH_PREDICT_SIZES``
(e.g. ``100,1000``; 1,000 is always run, the per-batch figures come from it) and
``$OAR_BENCH_PREDICT_ONLY`` (a comma list of models) narrow a full run;
``models`` (``oar bench predict --model M``) measures any models :func:`zoo.load`
takes — zoo names, run or export directories of a text task — instead of the
zoo's. Nothing here is asserted.
"""
import itertools
import json
import math
import os
import subprocess
import sys
import time

from framework.settings import env_counts, env_list
from framework.timing import peak_rss_mb

__all__ = ["run_all", "measure_in_this_process"]

SIZES = (100, 1_000, 10_000, 100_000)
SIZES_ENV, ONLY_ENV = "OAR_BENCH_PREDICT_SIZES", "OAR_BENCH_PREDICT_ONLY"
LATER_UP_TO = 10_000            # sizes that also time a second call
BATCH1_INPUTS = 200


def _lac_texts():
    from .lac import peoples_daily_test_texts
    return peoples_daily_test_texts()


def _reviews():
    from nlp.senta.data import load_reviews
    return [text for text, _ in load_reviews("test")]


def _pairs():
    from nlp.simnet.builder import builder_file
    from nlp.simnet.pairs import read_pair_file
    return [(pair.text_a, pair.text_b) for pair in read_pair_file(builder_file("test.tsv"))]


# Real raw inputs of each text task: its test split.
CORPORA = {"lexical_analysis": _lac_texts, "sentiment": _reviews, "matching": _pairs}


def _peak_rss_mb():
    return round(peak_rss_mb(), 1)


def measure_in_this_process(name, static, size, later, batch1):
    """Load ``name`` and time ``predict`` on ``size`` inputs (a generator), once or twice (``later``); with
    ``batch1``, then ``BATCH1_INPUTS`` calls of one input. Returns the figures as a dict."""
    import zoo
    corpus = CORPORA[zoo.resolve(name).task]()
    task = zoo.load(name, static=static)
    figures = {"loaded_rss_mb": _peak_rss_mb()}

    def timed(work):
        """(CPU seconds, wall seconds) of ``work()``."""
        cpu, wall = time.process_time(), time.perf_counter()
        work()
        return round(time.process_time() - cpu, 4), round(time.perf_counter() - wall, 4)

    def call():
        count = sum(1 for _ in task.predict_iter(itertools.islice(itertools.cycle(corpus), size)))
        assert count == size
    figures["first_s"], figures["first_wall_s"] = timed(call)
    if later:                       # the batch-64 figure comes from the 1,000-input call: best of 3 there
        figures["later_s"], figures["later_wall_s"] = min(timed(call) for _ in range(3 if batch1 else 1))
    if batch1:
        seconds = min(timed(lambda: [task.predict([item], batch_size=1) for item in corpus[:BATCH1_INPUTS]])[0]
                      for _ in range(3))                                               # best of 3 passes
        figures["batch1_ms"] = round(1000 * seconds / BATCH1_INPUTS, 3)
    figures["peak_rss_mb"] = _peak_rss_mb()
    return figures


def _in_a_new_process(name, static, size, later, batch1=False):
    arguments = json.dumps([name, static, size, later, batch1])
    done = subprocess.run([sys.executable, "-m", "zoo.bench.predict", arguments], check=True,
                          stdout=subprocess.PIPE, text=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def _model_figures(name, sizes):
    rows = {}
    for size in sizes:
        rows[size] = {mode: _in_a_new_process(name, mode == "static", size, size <= LATER_UP_TO,
                                              batch1=size == 1_000)
                      for mode in ("static", "eager") if mode == "static" or size <= LATER_UP_TO}
    batches = {size: math.ceil(size / 64) for size in sizes}
    one = {mode: rows[1_000][mode]["later_s"] / batches[1_000] for mode in ("static", "eager")}
    largest = max(sizes)
    figures = {
        "sizes": rows,
        "batch1_ms": {mode: rows[1_000][mode]["batch1_ms"] for mode in ("static", "eager")},
        "batch64_ms": {mode: round(1000 * one[mode], 3) for mode in ("static", "eager")},
        "largest": {"inputs": largest, "seconds": rows[largest]["static"]["first_s"],
                    "batches_x_one_batch_s": round(batches[largest] * one["static"], 3),
                    "scaling": round(rows[largest]["static"]["first_s"] / (batches[largest] * one["static"]), 3),
                    "peak_rss_mb": rows[largest]["static"]["peak_rss_mb"]},
        "static_over_eager": {"batch1": round(rows[1_000]["static"]["batch1_ms"] / rows[1_000]["eager"]["batch1_ms"], 3),
                              "batch64": round(one["static"] / one["eager"], 3)},
    }
    if 10_000 in rows:
        static = rows[10_000]["static"]
        figures["first_over_later_10000"] = round(static["first_s"] / static["later_s"], 3)
    return figures


def run_all(quick=False, models=None):
    """``{model: figures}`` for every text model of the zoo, or for ``models`` (module docstring)."""
    import zoo
    from zoo.catalog import cards
    from zoo.usage import UsageError
    names = [name for name, entry in cards().items() if entry.task in CORPORA]
    only = env_list(ONLY_ENV)
    if models:
        for model in models:
            task = zoo.resolve(model).task
            if task not in CORPORA:
                raise UsageError(f"--model {model}: a {task} model; oar bench predict measures "
                                 f"{', '.join(CORPORA)} models")
        names, only = [os.path.abspath(m) if os.path.isdir(m) else m for m in models], []
    elif quick or only:
        names = [n for n in names if n in (only or ("lac_pku", "senta_bow", "simnet_bow_pointwise"))]
    sizes = SIZES[:2] if quick else SIZES
    asked = env_counts(SIZES_ENV)
    if asked:
        sizes = tuple(sorted(set(asked) | {1_000}))
    return {name: _model_figures(name, sizes) for name in names}


if __name__ == "__main__":
    print(json.dumps(measure_in_this_process(*json.loads(sys.argv[1]))))
