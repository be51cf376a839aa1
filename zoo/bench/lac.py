"""LAC speed for ``oar bench lac``: the training step beside PyTorch, and official-model inference.

:func:`run_all` returns a dict with two parts:

- ``train_step``: tokens per second of one training step of our BiGRU-CRF
  (embedding 128, hidden 128, 2 bidirectional GRU layers, the People's Daily
  tag set of 85 labels and a 4,034-character vocabulary as in ``lac_pku``;
  batch 64 of length 64, CRF negative log-likelihood, backward, Adam), and of a
  PyTorch model of the same sizes (:func:`zoo.bench.torch_twins.torch_lac`:
  ``nn.Embedding``, ``nn.GRU``, ``nn.Linear`` and the CRF forward algorithm)
  when ``torch`` is importable, with as many PyTorch threads as
  ``OPENBLAS_NUM_THREADS`` (else 1).
- ``inference``: sentences per second of ``lac`` (the official weights) and
  ``lac_pku`` from ``zoo.load``, text in -> words and tags out, on the People's
  Daily test split (one corpus line per sentence), through the traced program
  and eagerly (and with ``runtime="onnxruntime"`` when onnx and onnxruntime are
  installed): batch 1 (one call per sentence) and batch 64 (one call over all
  sentences, which the task sorts by length and runs 64 at a time), beside the
  official Paddle engine (the ``LAC`` package) when it is importable, else the
  figures measured once on this machine (:data:`PADDLE_ENGINE_QUOTED`).

Every timing is the best of ``repeat`` runs after a warm-up, as wall time and
as this process's CPU time (``time.process_time``): on a shared machine the CPU
time is the steadier figure, the wall time what a user waits.
"""
import importlib.util
import json
import os
import subprocess
import tempfile

import numpy

from framework.timing import best_times

from .torch_twins import match_blas_threads, torch_lac, torch_or_none

__all__ = ["oar_train_step", "torch_train_step", "bench_train_step", "bench_inference", "peoples_daily_test_texts", "run_all", "PADDLE_ENGINE_QUOTED"]

VOCAB_SIZE, NUM_TAGS = 4034, 85


def _rates(count, times, unit):
    """``{unit}_per_s`` (wall) and ``{unit}_per_cpu_s`` for ``count`` items done in ``times`` (wall, cpu)."""
    return {f"{unit}_per_s": round(count / times[0], 1), f"{unit}_per_cpu_s": round(count / times[1], 1)}


def _batch(rng, batch, length):
    """Random token ids (N, T), labels (N, T) and full lengths (N,) as NumPy int64 arrays."""
    return (rng.integers(2, VOCAB_SIZE, (batch, length)), rng.integers(0, NUM_TAGS, (batch, length)),
            numpy.full(batch, length, dtype=numpy.int64))


def oar_train_step(tokens, labels, lengths, device="cpu"):
    """A function running one oar training step (loss, backward, Adam) on the given batch; it returns the loss.

    ``device``: 'cpu' or 'gpu', where the model and the batch live.
    """
    import framework
    from framework.optimizer import Adam
    from nlp.lac.model import BiGRUCRF
    from nlp.lac.task import LexicalAnalysis
    task = LexicalAnalysis(BiGRUCRF(VOCAB_SIZE, NUM_TAGS).to(device))
    optimizer = Adam(learning_rate=1e-3, parameters=task.model.parameters())
    batch = {"tokens": framework.to_tensor(tokens, device=device),
             "tokens_lengths": framework.to_tensor(lengths, device=device),
             "labels": framework.to_tensor(labels, device=device)}
    task.model.train()

    def step():
        loss = task.loss(batch)
        loss.backward()
        optimizer.step()
        optimizer.clear_grad()
        return loss
    return step


def torch_train_step(torch, tokens, labels, device="cpu"):
    """A function running one PyTorch training step of the same network and loss on the given batch; it returns
    the loss. ``device``: a torch device ('cpu', 'cuda')."""
    model = torch_lac(VOCAB_SIZE, NUM_TAGS, emb_dim=128, hidden=128, num_layers=2, device=device)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    x, y = torch.as_tensor(tokens, device=device), torch.as_tensor(labels, device=device)

    def step():
        loss = model.nll(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        return loss
    return step


def bench_train_step(batch=64, length=64, repeat=5):
    """Tokens/s of one training step, oar and (when importable) PyTorch; see the module docstring."""
    rng = numpy.random.default_rng(0)
    tokens, labels, lengths = _batch(rng, batch, length)
    result = {"batch": batch, "length": length, "emb": 128, "hidden": 128, "layers": 2, "tags": NUM_TAGS,
              "oar": _rates(batch * length, best_times(oar_train_step(tokens, labels, lengths), repeat), "tokens")}
    torch = torch_or_none()
    if torch is None:
        return result
    torch.manual_seed(0)
    threads = match_blas_threads(torch, default=1)
    result["torch"] = {"version": torch.__version__, "threads": threads,
                       **_rates(batch * length, best_times(torch_train_step(torch, tokens, labels), repeat), "tokens")}
    return result


def peoples_daily_test_texts(limit=None):
    """The first ``limit`` sentences (all when None) of the People's Daily test split, as plain text."""
    from nlp.data.peoples_daily import read_sentences
    return ["".join(sentence.words) for sentence in read_sentences("test")[:limit]]


# Measured on this machine, one thread, in one run against the official Paddle inference engine (LAC 2.1.2 on
# paddlepaddle), text in -> words and tags out on People's Daily sentences; quoted when it is not importable here.
PADDLE_ENGINE_QUOTED = {"batch1": 575, "batch64": 1040}


def _tagger_rates(task, texts, subset, repeat):
    """Sentences/s of ``task.predict`` at batch 1 (one call per sentence of ``subset``) and batch 64 (one call
    over ``texts``, which the task sorts by length and runs 64 at a time)."""
    batch1 = best_times(lambda: [task.predict([t], batch_size=1) for t in subset], repeat)
    batch64 = best_times(lambda: task.predict(texts, batch_size=64), repeat)
    return {"batch1": _rates(len(subset), batch1, "sentences"), "batch64": _rates(len(texts), batch64, "sentences")}


def _engine_script():
    """The reference engine's timing script: ``$PADDLE_LAC_BENCH``, else ``../shared/reference/paddle_lac/bench.py``
    beside the repository."""
    here = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    return os.environ.get("PADDLE_LAC_BENCH") or os.path.join(here, os.pardir, "shared", "reference", "paddle_lac",
                                                              "bench.py")


def _paddle_engine_process(texts, subset, repeat):
    """Baidu's LAC timed by the reference script under the Python ``$PADDLE_PY`` (its own venv), with the
    thread count oar runs with; None when ``PADDLE_PY`` is unset. Batch 1 on ``subset``, batch 64 on ``texts``."""
    python = os.environ.get("PADDLE_PY")
    if not python:
        return None
    from framework import parallel
    threads = str(parallel.num_threads())
    env = {**os.environ, "OMP_NUM_THREADS": threads, "CPU_NUM": threads, "OPENBLAS_NUM_THREADS": threads}
    figures = {}
    with tempfile.TemporaryDirectory() as folder:
        for key, lines, field in (("batch1", subset, "b1_sent_per_s"), ("batch64", texts, "b64_sent_per_s")):
            path = os.path.join(folder, f"{key}.txt")
            with open(path, "w", encoding="utf-8") as f:
                f.write("\n".join(lines) + "\n")
            done = subprocess.run([python, _engine_script(), path, "--repeat", str(repeat)], env=env, check=True,
                                  capture_output=True, text=True)
            report = json.loads(done.stdout.strip().splitlines()[-1])
            figures[key] = {"sentences_per_s": round(report[field], 1)}
            figures["engine"] = report["engine"]
    figures["threads"] = int(threads)
    return figures


def _paddle_engine(texts, subset, repeat):
    """The official LAC package on the Paddle inference engine: through ``$PADDLE_PY`` when set, else in this
    process when ``LAC`` and ``paddle`` are importable here."""
    measured = _paddle_engine_process(texts, subset, repeat)
    if measured is not None:
        return measured
    try:
        from LAC import LAC
    except ImportError:
        return None
    lac = LAC(mode="lac")
    batch1 = best_times(lambda: [lac.run(t) for t in subset], repeat)
    batch64 = best_times(lambda: [lac.run(texts[i:i + 64]) for i in range(0, len(texts), 64)], repeat)
    return {"batch1": _rates(len(subset), batch1, "sentences"), "batch64": _rates(len(texts), batch64, "sentences")}


def bench_inference(texts=None, batch1_sentences=300, repeat=3, models=("lac", "lac_pku")):
    """Sentences/s of ``zoo.load(model)`` text in -> words and tags out on ``texts`` (default: the People's
    Daily test split), through the traced program (``static``) and eagerly (``eager``), at batch 1 over the
    first ``batch1_sentences`` texts and batch 64 over all; beside the official Paddle engine (measured when
    importable, else quoted) and each model's static/eager and static/engine ratios."""
    import zoo
    from framework.kernels import cpu
    texts = peoples_daily_test_texts() if texts is None else texts
    subset = texts[:batch1_sentences]
    engine = _paddle_engine(texts, subset, repeat)
    result = {"sentences": len(texts), "mean_chars": round(sum(map(len, texts)) / max(len(texts), 1), 1),
              "kernels": "numba" if cpu.enabled() else "numpy",
              "paddle_engine": engine or {"quoted": PADDLE_ENGINE_QUOTED}}
    reference = {k: (engine[k]["sentences_per_s"] if engine else PADDLE_ENGINE_QUOTED[k]) for k in ("batch1", "batch64")}
    runtimes = {"static": {}, "eager": {"static": False}}
    if importlib.util.find_spec("onnxruntime") and importlib.util.find_spec("onnx"):
        runtimes["onnxruntime"] = {"runtime": "onnxruntime"}
    for name in models:
        rates = {mode: _tagger_rates(zoo.load(name, **options), texts, subset, repeat)
                 for mode, options in runtimes.items()}
        for mode in runtimes:
            if mode != "eager":
                rates[f"{mode}_over_eager"] = {k: round(rates[mode][k]["sentences_per_s"] /
                                                        rates["eager"][k]["sentences_per_s"], 2) for k in reference}
            rates[f"{mode}_over_paddle_engine"] = {k: round(rates[mode][k]["sentences_per_s"] / reference[k], 2)
                                                   for k in reference}
        result[name] = rates
    again = _paddle_engine_process(texts, subset, repeat) if engine and "threads" in engine else None
    if again:                                   # the engine timed again after oar: best of both windows
        for key in ("batch1", "batch64"):
            engine[key]["sentences_per_s"] = max(engine[key]["sentences_per_s"], again[key]["sentences_per_s"])
        for name in models:
            for mode in runtimes:
                result[name][f"{mode}_over_paddle_engine"] = {
                    k: round(result[name][mode][k]["sentences_per_s"] / engine[k]["sentences_per_s"], 2)
                    for k in reference}
    return result


def run_all(quick=False):
    """Both benchmarks (``quick``: batch 8 x length 16 training, 200 test sentences, one timed run)."""
    if quick:
        return {"train_step": bench_train_step(batch=8, length=16, repeat=1),
                "inference": bench_inference(peoples_daily_test_texts(200), batch1_sentences=50, repeat=1)}
    return {"train_step": bench_train_step(), "inference": bench_inference()}
