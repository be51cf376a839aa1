"""Senta benchmarks (``oar bench senta``): the time of one training step of BiLSTM and CNN.

One step is forward, cross-entropy, backward and an Adam update on a batch of
``batch`` full-length sequences of random ids. When PyTorch is importable the
same networks (:func:`zoo.bench.torch_twins.torch_senta`: embedding,
bidirectional LSTM or window-3 convolution, max over time, tanh head) run
beside ours on the same ids, with as many threads as ``OPENBLAS_NUM_THREADS``
gives ours. Timings are medians after a warm-up; nothing here is asserted.
"""
import numpy

import framework
import framework.nn.functional as F
from framework.optimizer import Adam
from framework.timing import median_time

from nlp.senta.model import SentaBiLSTM, SentaCNN, SentaGRU, SentaLSTM

from .torch_twins import match_blas_threads, torch_or_none, torch_senta

__all__ = ["oar_train_step", "torch_train_step", "bench_train_step", "run_all"]


_RNNS = {"bilstm": SentaBiLSTM, "lstm": SentaLSTM, "gru": SentaGRU}


def oar_train_step(kind, ids_np, labels_np, vocab_size, emb_dim, hidden, hidden2, device="cpu"):
    """A function running one oar training step of ``kind`` on ids (N, L) and labels (N,); it returns the loss.

    ``device``: 'cpu' or 'gpu', where the model and the batch live.
    """
    if kind in _RNNS:
        model = _RNNS[kind](vocab_size, emb_dim=emb_dim, hidden=hidden, hidden2=hidden2)
    else:
        model = SentaCNN(vocab_size, emb_dim=emb_dim, filters=hidden, hidden2=hidden2)
    model.to(device)
    optimizer = Adam(learning_rate=1e-3, parameters=model.parameters())
    ids, labels = framework.to_tensor(ids_np, device=device), framework.to_tensor(labels_np, device=device)
    lengths = framework.to_tensor(numpy.full(len(ids_np), ids_np.shape[1], dtype=numpy.int64), device=device)

    def step():
        loss = F.cross_entropy(model(ids, lengths), labels)
        loss.backward()
        optimizer.step()
        optimizer.clear_grad()
        return loss
    return step


def torch_train_step(torch, kind, ids_np, labels_np, vocab_size, emb_dim, hidden, hidden2, device="cpu"):
    """The same step for the PyTorch twin; it returns the loss. ``device``: a torch device ('cpu', 'cuda')."""
    twin = torch_senta(kind, vocab_size, emb_dim, hidden, hidden2).to(device)
    twin_optimizer = torch.optim.Adam(twin.parameters(), lr=1e-3)
    t_ids, t_labels = torch.from_numpy(ids_np).to(device), torch.from_numpy(labels_np).to(device)

    def torch_step():
        loss = torch.nn.functional.cross_entropy(twin(t_ids), t_labels)
        loss.backward()
        twin_optimizer.step()
        twin_optimizer.zero_grad()
        return loss
    return torch_step


def batch_arrays(batch, length, vocab_size):
    """Random ids (batch, length) in [1, vocab_size) and labels (batch,) in {0, 1}, both int64 (seed 0)."""
    rng = numpy.random.default_rng(0)
    return (rng.integers(1, vocab_size, size=(batch, length)).astype(numpy.int64),
            rng.integers(0, 2, size=batch).astype(numpy.int64))


def bench_train_step(kind="bilstm", batch=64, length=100, vocab_size=3707, emb_dim=128, hidden=128, hidden2=96,
                     repeat=5):
    """Median time (ms) of one training step of ``kind`` ('bilstm' or 'cnn'), ours and PyTorch's.

    Returns ``{"model", "batch", "length", "emb", "hidden", "oar_step_ms", "oar_samples_per_s"}`` and
    ``"torch_step_ms"``, ``"torch_threads"``, ``"torch_vs_oar"`` (> 1: ours is faster) when torch is importable.
    """
    ids_np, labels_np = batch_arrays(batch, length, vocab_size)
    sizes = (vocab_size, emb_dim, hidden, hidden2)
    framework.seed(0)
    seconds = median_time(oar_train_step(kind, ids_np, labels_np, *sizes), repeat)
    row = {"model": kind, "batch": batch, "length": length, "emb": emb_dim, "hidden": hidden,
           "oar_step_ms": seconds * 1e3, "oar_samples_per_s": batch / seconds}
    torch = torch_or_none()
    if torch is not None:
        match_blas_threads(torch)
        torch.manual_seed(0)
        torch_seconds = median_time(torch_train_step(torch, kind, ids_np, labels_np, *sizes), repeat)
        row.update({"torch_step_ms": torch_seconds * 1e3, "torch_threads": torch.get_num_threads(),
                    "torch_vs_oar": seconds and torch_seconds / seconds})
    return row


def run_all(quick=False):
    """BiLSTM and CNN train steps (batch 64, length 100, emb 128, hidden 128); ``quick``: tiny shapes, for tests."""
    if quick:
        shape = {"batch": 4, "length": 6, "vocab_size": 50, "emb_dim": 8, "hidden": 8, "hidden2": 4, "repeat": 1}
    else:
        shape = {}
    return {"bilstm": bench_train_step("bilstm", **shape), "cnn": bench_train_step("cnn", **shape)}
