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
- ``inference``: sentences per second of the official LAC model on oar, text
  in -> words and tags out (``LexicalAnalysis.predict_raw``), on the People's
  Daily test split (one corpus line per sentence): batch 1 (one call per
  sentence) and batch 64 (one call over all sentences, which the task sorts by
  length and runs 64 at a time, at most 64 x 512 ids per pass), plus the
  pure-Python preprocessing alone.
  The official Paddle engine's figures on one core of a 2-core x86-64 machine
  were about 430 sentences/s at batch 1 and 1,470/s at batch 64.

Every timing is the best of ``repeat`` runs after a warm-up, as wall time and
as this process's CPU time (``time.process_time``): on a shared machine the CPU
time is the steadier figure, the wall time what a user waits.
"""
import numpy

from framework.timing import best_times

from .torch_twins import match_blas_threads, torch_lac, torch_or_none

__all__ = ["bench_train_step", "bench_inference", "peoples_daily_test_texts", "run_all"]

VOCAB_SIZE, NUM_TAGS = 4034, 85


def _rates(count, times, unit):
    """``{unit}_per_s`` (wall) and ``{unit}_per_cpu_s`` for ``count`` items done in ``times`` (wall, cpu)."""
    return {f"{unit}_per_s": round(count / times[0], 1), f"{unit}_per_cpu_s": round(count / times[1], 1)}


def _batch(rng, batch, length):
    """Random token ids (N, T), labels (N, T) and full lengths (N,) as NumPy int64 arrays."""
    return (rng.integers(2, VOCAB_SIZE, (batch, length)), rng.integers(0, NUM_TAGS, (batch, length)),
            numpy.full(batch, length, dtype=numpy.int64))


def _oar_step(tokens, labels, lengths, device="cpu"):
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


def _torch_step(torch, tokens, labels, device="cpu"):
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
              "oar": _rates(batch * length, best_times(_oar_step(tokens, labels, lengths), repeat), "tokens")}
    torch = torch_or_none()
    if torch is None:
        return result
    torch.manual_seed(0)
    threads = match_blas_threads(torch, default=1)
    result["torch"] = {"version": torch.__version__, "threads": threads,
                       **_rates(batch * length, best_times(_torch_step(torch, tokens, labels), repeat), "tokens")}
    return result


def peoples_daily_test_texts(limit=None):
    """The first ``limit`` sentences (all when None) of the People's Daily test split, as plain text."""
    from nlp.data.peoples_daily import read_sentences
    return ["".join(sentence.words) for sentence in read_sentences("test")[:limit]]


def bench_inference(texts=None, batch1_sentences=300, repeat=3):
    """Sentences/s of the official LAC task on ``texts`` (default: the People's Daily test split).

    Batch 1 runs over the first ``batch1_sentences`` texts, one call each;
    batch 64 runs over all texts in one call.
    """
    from nlp.lac.task import load_official_task
    texts = peoples_daily_test_texts() if texts is None else texts
    task = load_official_task(max_batch_tokens=64 * 512)
    segmenter, preprocessor = task.preprocessor.segmenter, task.preprocessor
    chars = sum(map(len, texts))
    result = {"sentences": len(texts), "mean_chars": round(chars / max(len(texts), 1), 1),
              "segment": _rates(chars, best_times(lambda: [segmenter.cut(t) for t in texts], repeat), "chars"),
              "preprocess": _rates(len(texts), best_times(lambda: [preprocessor.encode(t) for t in texts], repeat),
                                   "sentences")}
    subset = texts[:batch1_sentences]
    task.batch_size = 1
    result["batch1"] = {"sentences": len(subset),
                        **_rates(len(subset), best_times(lambda: [task.predict_raw([t]) for t in subset], repeat),
                                 "sentences")}
    task.batch_size = 64
    result["batch64"] = {"sentences": len(texts),
                         **_rates(len(texts), best_times(lambda: task.predict_raw(texts), repeat), "sentences")}
    result["official_paddle_sentences_per_s"] = {"batch1": 430, "batch64": 1470}
    return result


def run_all(quick=False):
    """Both benchmarks (``quick``: batch 8 x length 16 training, 200 test sentences, one timed run)."""
    if quick:
        return {"train_step": bench_train_step(batch=8, length=16, repeat=1),
                "inference": bench_inference(peoples_daily_test_texts(200), batch1_sentences=50, repeat=1)}
    return {"train_step": bench_train_step(), "inference": bench_inference()}
