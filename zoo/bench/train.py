"""One table of CPU training speed for every zoo family (``oar bench train``): oar beside PyTorch, 1 and 2 threads.

For each family one training step (forward, loss, backward, optimizer update)
of oar's model and of its PyTorch twin (:mod:`zoo.bench.torch_twins`) runs on
the same batch, at each thread count in its own process: ``OAR_NUM_THREADS``,
``OMP_NUM_THREADS`` and ``OPENBLAS_NUM_THREADS`` (oar's thread pool and BLAS)
and ``torch.set_num_threads`` all set to that count. Each figure is the best
wall time of three steps (two for the :data:`HEAVY` families) after a warm-up step. Per family the table gives
both times and their ratio (oar / PyTorch: at most 1.0 is the target) at each
count, and each side's speed-up from 1 to 2 threads, and ``oar_1t_profile``
splits one more 1-thread oar step by op family. The BLAS that ran
(threadpoolctl's report) is in ``blas``; ``gemms`` gives, at each count, the
GFLOP/s of the matrix products a Senta RNN step is made of (its recurrent step
forward and backward, the input projection, the weight gradient) in NumPy's BLAS
and in PyTorch's, on the same arrays. Nothing here is asserted.

Families and batches (the sizes of the 2019 models): Senta BiLSTM, LSTM, GRU and CNN
(64 reviews of 100 characters), LAC (64 sentences of 64 characters), SimNet BOW
(64 pairs of 32 characters), Attention Cluster, Attention LSTM and NeXtVLAD (32
YouTube-8M videos of 300 frames), TSN-R50 and TSM-R50 (one 8-frame clip at
224²) and ResNet-50 (8 images at 224²).

Run as ``python -m zoo.bench.train --threads N [--quick] [--only NAME,…]`` it
measures one thread count and prints its rows as JSON (what :func:`run_all`
starts once per count).
"""
import argparse
import json
import os
import subprocess
import sys

import numpy

from framework.settings import env_list
from framework.timing import best_time

from . import lac, senta, video_feature_models, video_models
from .op_profile import seconds_by_op
from .torch_twins import blas_info, torch_or_none, torch_resnet, torch_simnet_bow

__all__ = ["FAMILIES", "GEMMS", "run_all", "measure", "gemm_rates"]

THREAD_COUNTS = (1, 2)
#: families whose step takes seconds: timed twice after the warm-up step instead of three times
HEAVY = ("attention_cluster", "attention_lstm", "nextvlad", "tsn_r50", "tsm_r50", "resnet50")


def _senta(kind, quick):
    shape = (4, 6, 50, 8, 8, 4) if quick else (64, 100, 3707, 128, 128, 96)
    batch, length, vocab, emb, hidden, hidden2 = shape
    ids, labels = senta.batch_arrays(batch, length, vocab)
    sizes = (vocab, emb, hidden, hidden2)
    return (senta.oar_train_step(kind, ids, labels, *sizes),
            lambda torch: senta.torch_train_step(torch, kind, ids, labels, *sizes))


def _lac(quick):
    tokens, labels, lengths = lac.batch_arrays(numpy.random.default_rng(0), *((2, 5) if quick else (64, 64)))
    return lac.oar_train_step(tokens, labels, lengths), lambda torch: lac.torch_train_step(torch, tokens, labels)


def _simnet_bow(quick):
    import framework
    import framework.nn.functional as F
    from framework.optimizer import Adam
    from nlp.simnet.model import SimNetBOW
    batch, length, vocab = (4, 5, 30) if quick else (64, 32, 3000)
    rng = numpy.random.default_rng(0)
    sides = [(rng.integers(1, vocab, (batch, length)), rng.integers(1, length + 1, batch)) for _ in range(2)]
    labels = rng.integers(0, 2, batch)
    framework.seed(0)
    model = SimNetBOW(vocab)
    optimizer = Adam(learning_rate=1e-3, parameters=model.parameters())
    inputs = [framework.to_tensor(a) for side in sides for a in side]
    target = framework.to_tensor(labels)

    def step():
        F.cross_entropy(model(*inputs), target).backward()
        optimizer.step()
        optimizer.clear_grad()

    def torch_step(torch):
        twin = torch_simnet_bow(vocab)
        twin_optimizer = torch.optim.Adam(twin.parameters(), lr=1e-3)
        twin_inputs = [torch.from_numpy(a) for side in sides for a in side]
        twin_target = torch.from_numpy(labels)

        def run():
            torch.nn.functional.cross_entropy(twin(*twin_inputs), twin_target).backward()
            twin_optimizer.step()
            twin_optimizer.zero_grad()
        return run
    return step, torch_step


def _feature_model(name, quick):
    batch, frames = (2, 6) if quick else (32, 300)
    return (video_feature_models.oar_train_step(name, batch, frames),
            lambda torch: video_feature_models.torch_train_step(name, batch, frames))


def _frame_model(shift, quick):
    from video.models import TSM, TSN
    size = 32 if quick else 224
    model = (TSM(num_classes=400, depth=50, num_segments=video_models.SEGMENTS, dropout=0.0) if shift else
             TSN(num_classes=400, depth=50, num_segments=video_models.SEGMENTS))
    return (video_models.oar_train_step(model, 1, size),
            lambda torch: video_models.torch_train_step(shift, 1, size))


def _resnet50(quick):
    import framework
    import framework.nn.functional as F
    from framework.optimizer import Momentum
    from vision.models import resnet50
    batch, size = (2, 32) if quick else (8, 224)
    rng = numpy.random.default_rng(0)
    x = rng.standard_normal((batch, 3, size, size), dtype=numpy.float32)
    labels = rng.integers(0, 1000, batch).astype(numpy.int64)
    framework.seed(0)
    model = resnet50()
    model.train()
    optimizer = Momentum(learning_rate=0.001, momentum=0.9, parameters=model.parameters())
    tx, tl = framework.to_tensor(x), framework.to_tensor(labels)
    weights = {k: v.numpy() for k, v in model.state_dict().items()}

    def step():
        F.cross_entropy(model(tx), tl).backward()
        optimizer.step()
        optimizer.clear_grad()

    def torch_step(torch):
        twin = torch_resnet("bottleneck", (3, 4, 6, 3))
        twin.load_state_dict({k: torch.from_numpy(v) for k, v in weights.items()}, strict=False)
        twin.train()
        twin_optimizer = torch.optim.SGD(twin.parameters(), lr=0.001, momentum=0.9)
        px, pl = torch.from_numpy(x), torch.from_numpy(labels)

        def run():
            torch.nn.functional.cross_entropy(twin(px), pl).backward()
            twin_optimizer.step()
            twin_optimizer.zero_grad()
        return run
    return step, torch_step


#: family -> builder(quick) returning (oar step, torch twin's step builder taking the torch module)
FAMILIES = {
    "senta_bilstm": lambda quick: _senta("bilstm", quick),
    "senta_lstm": lambda quick: _senta("lstm", quick),
    "senta_gru": lambda quick: _senta("gru", quick),
    "senta_cnn": lambda quick: _senta("cnn", quick),
    "lac": _lac,
    "simnet_bow": _simnet_bow,
    "attention_cluster": lambda quick: _feature_model("attention_cluster_youtube8m", quick),
    "attention_lstm": lambda quick: _feature_model("attention_lstm_youtube8m", quick),
    "nextvlad": lambda quick: _feature_model("nextvlad_youtube8m", quick),
    "tsn_r50": lambda quick: _frame_model(False, quick),
    "tsm_r50": lambda quick: _frame_model(True, quick),
    "resnet50": _resnet50,
}


# a Senta RNN step's products (64 x 100 reviews, hidden 128): name -> (M, K, N, B transposed)
GEMMS = {"lstm_step (64x128)x(128x512)": (64, 128, 512, False),
         "lstm_step_grad (64x512)x(512x128)T": (64, 512, 128, True),
         "gru_step (64x128)x(128x256)": (64, 128, 256, False),
         "projection (6400x128)x(128x512)": (6400, 128, 512, False),
         "weight_grad (128x6400)x(6400x512)": (128, 6400, 512, False)}


def gemm_rates(torch, quick=False):
    """``{product: {"numpy_gflops", "torch_gflops"}}`` of :data:`GEMMS` (best of 5 rounds; PyTorch's None without
    it), in this process's thread setting."""
    rng = numpy.random.default_rng(0)
    result = {}
    for name, (m, k, n, transposed) in GEMMS.items():
        a = rng.standard_normal((m, k), dtype=numpy.float32)
        b = rng.standard_normal((n, k) if transposed else (k, n), dtype=numpy.float32)
        b = b.T if transposed else b
        out = numpy.empty((m, n), dtype=numpy.float32)
        inner = 1 if quick else max(1, int(2e8 // (m * k * n)))            # about 0.4 GFLOP a round
        runs = {"numpy": lambda: [numpy.matmul(a, b, out=out) for _ in range(inner)]}
        if torch is not None:
            ta, tb, tout = torch.from_numpy(a), torch.from_numpy(b), torch.from_numpy(out)
            runs["torch"] = lambda: [torch.matmul(ta, tb, out=tout) for _ in range(inner)]
        result[name] = {f"{side}_gflops": None for side in ("numpy", "torch")}
        for side, run in runs.items():
            result[name][f"{side}_gflops"] = round(2 * m * k * n * inner / best_time(run, repeat=5) / 1e9, 1)
    return result


def measure(threads, quick=False, only=None, repeat=3, profile=False):
    """In this process (its thread variables already set to ``threads``): seconds per step of each family,
    oar's and PyTorch's (None without PyTorch), and with ``profile`` where one more oar step's time goes
    (:func:`zoo.bench.op_profile.seconds_by_op`). Returns ``{"threads", "blas", "torch_threads", "rows"}``."""
    from framework import threadpool
    torch = torch_or_none()
    if torch is not None:
        torch.set_num_threads(threads)
    rows = {}
    for name in only or FAMILIES:
        ours, theirs = FAMILIES[name](quick)
        runs = repeat if quick or name not in HEAVY else 2
        rows[name] = {"oar_s": best_time(ours, repeat=runs),
                      "torch_s": None if torch is None else best_time(theirs(torch), repeat=runs)}
        if profile:
            rows[name]["profile"] = seconds_by_op(ours)
    return {"threads": threads, "oar_threads": threadpool.num_threads(), "blas": blas_info(),
            "torch_threads": None if torch is None else torch.get_num_threads(), "rows": rows,
            "gemms": gemm_rates(torch, quick)}


def _ratio(a, b):
    return None if a is None or b is None else round(a / b, 3)


ONLY_ENV = "OAR_BENCH_TRAIN_ONLY"     # comma list of families for ``oar bench train`` (default: every one)


def run_all(quick=False, only=None):
    """Every family (``only``, else ``$OAR_BENCH_TRAIN_ONLY``, else all) at 1 and 2 threads, each count in its own
    process; see the module docstring."""
    only = only or env_list(ONLY_ENV) or None
    unknown = [name for name in only or () if name not in FAMILIES]
    if unknown:
        raise SystemExit(f"{ONLY_ENV}: unknown family {unknown[0]!r}; known: {', '.join(FAMILIES)}")
    runs = {}
    for threads in THREAD_COUNTS:
        env = {**os.environ, **{name: str(threads) for name in ("OAR_NUM_THREADS", "OMP_NUM_THREADS",
                                                               "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")}}
        command = [sys.executable, "-m", "zoo.bench.train", "--threads", str(threads)]
        command += ["--quick"] if quick else []
        command += ["--profile"] if threads == 1 else []
        command += ["--only", ",".join(only)] if only else []
        done = subprocess.run(command, env=env, check=True, stdout=subprocess.PIPE, text=True)
        runs[threads] = json.loads(done.stdout)
    one, two = (runs[t] for t in THREAD_COUNTS)
    table = []
    for name in one["rows"]:
        a, b = one["rows"][name], two["rows"][name]
        table.append({"family": name, "oar_1t_s": _round(a["oar_s"]), "torch_1t_s": _round(a["torch_s"]),
                      "ratio_1t": _ratio(a["oar_s"], a["torch_s"]), "oar_2t_s": _round(b["oar_s"]),
                      "torch_2t_s": _round(b["torch_s"]), "ratio_2t": _ratio(b["oar_s"], b["torch_s"]),
                      "oar_speedup_2t": _ratio(a["oar_s"], b["oar_s"]),
                      "torch_speedup_2t": _ratio(a["torch_s"], b["torch_s"]), "oar_1t_profile": a["profile"]})
    return {"quick": quick, "blas": {f"{t}t": runs[t]["blas"] for t in THREAD_COUNTS},
            "gemms": {f"{t}t": runs[t]["gemms"] for t in THREAD_COUNTS},
            "threads": {f"{t}t": {"oar": runs[t]["oar_threads"], "torch": runs[t]["torch_threads"]}
                        for t in THREAD_COUNTS}, "table": table}


def _round(value):
    return None if value is None else round(value, 6)


def main(argv=None):
    parser = argparse.ArgumentParser(description="one thread count of oar bench train")
    parser.add_argument("--threads", type=int, required=True)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--only", default="", help="comma-separated families (default: all)")
    parser.add_argument("--profile", action="store_true", help="also split one oar step by op family")
    args = parser.parse_args(argv)
    only = [name for name in args.only.split(",") if name] or None
    print(json.dumps(measure(args.threads, args.quick, only, profile=args.profile)))


if __name__ == "__main__":
    main()
