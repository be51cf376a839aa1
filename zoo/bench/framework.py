"""Framework micro-benchmarks: GEMM, conv2d, bidirectional GRU, per-op overhead.

Each function returns a dict of measured figures; ``run_all`` gathers them for
``oar bench framework``. When PyTorch is importable, the same workloads run in
it too, side by side (it is never a dependency).
"""
import time

import numpy

import framework
from framework import nn
import framework.nn.functional as F
from framework.timing import best_time

from .torch_twins import torch_or_none

__all__ = ["bench_matmul", "bench_conv2d", "bench_gru", "bench_op_overhead", "run_all"]

RESNET50_3X3 = [  # (batch, channels in = out, height = width)
    (8, 64, 56),
    (8, 256, 14),
]


def bench_matmul(sizes=((1024, 1024, 1024), (64, 576, 25088), (256, 2304, 1568)), repeat=10):
    """framework.matmul vs numpy.matmul (float32) on (M, K) @ (K, N); GFLOP/s each."""
    rng = numpy.random.default_rng(0)
    rows = []
    for m, k, n in sizes:
        a = rng.standard_normal((m, k), dtype=numpy.float32)
        b = rng.standard_normal((k, n), dtype=numpy.float32)
        ta, tb = framework.to_tensor(a), framework.to_tensor(b)
        flops = 2.0 * m * k * n
        t_np = best_time(lambda: numpy.matmul(a, b), repeat)
        t_fw = best_time(lambda: framework.matmul(ta, tb), repeat)
        rows.append({"shape": [m, k, n], "numpy_gflops": flops / t_np / 1e9, "oar_gflops": flops / t_fw / 1e9,
                     "ratio": t_np / t_fw})
    return rows


def bench_conv2d(shapes=RESNET50_3X3, repeat=10):
    """3x3 stride-1 pad-1 conv2d forward and forward+backward GFLOP/s, beside NumPy sgemm on the
    equivalent GEMM, weight (C_out, C*9) @ columns (C*9, N*H*W); PyTorch beside when installed.

    Forward+backward counts three GEMMs' worth of flops (output, input and weight gradients).
    """
    rng = numpy.random.default_rng(0)
    torch = torch_or_none()
    rows = []
    for n, c, hw in shapes:
        x = rng.standard_normal((n, c, hw, hw), dtype=numpy.float32)
        w = (rng.standard_normal((c, c, 3, 3), dtype=numpy.float32) * 0.05).astype(numpy.float32)
        flops = 2.0 * n * hw * hw * c * c * 9
        gemm_a = rng.standard_normal((c, c * 9), dtype=numpy.float32)
        gemm_b = rng.standard_normal((c * 9, n * hw * hw), dtype=numpy.float32)
        t_gemm = best_time(lambda: numpy.matmul(gemm_a, gemm_b), repeat)
        tx = framework.to_tensor(x, requires_grad=True)
        tw = framework.to_tensor(w, requires_grad=True)
        with framework.no_grad():
            t_fwd = best_time(lambda: F.conv2d(tx, tw, padding=1), repeat)

        def fwd_bwd():
            tx.grad = tw.grad = None
            y = F.conv2d(tx, tw, padding=1)
            y.backward(numpy.ones(y.shape, numpy.float32))

        t_fb = best_time(fwd_bwd, repeat)
        row = {"shape": {"batch": n, "channels": c, "hw": hw, "kernel": 3},
               "numpy_sgemm_gflops": flops / t_gemm / 1e9,
               "oar_forward_gflops": flops / t_fwd / 1e9,
               "oar_forward_backward_gflops": 3 * flops / t_fb / 1e9,
               "forward_backward_vs_sgemm": (3 * flops / t_fb) / (flops / t_gemm)}
        if torch is not None:
            px = torch.from_numpy(x).requires_grad_()
            pw = torch.from_numpy(w).requires_grad_()

            def torch_fb():
                px.grad = pw.grad = None
                torch.nn.functional.conv2d(px, pw, padding=1).sum().backward()

            row["torch_forward_backward_gflops"] = 3 * flops / best_time(torch_fb, repeat) / 1e9
        rows.append(row)
    return rows


def bench_gru(batch=64, length=64, input_size=128, hidden=128, repeat=5):
    """Bidirectional GRU forward+backward time (ms) on a padded batch of full lengths."""
    rng = numpy.random.default_rng(0)
    framework.seed(0)
    gru = nn.GRU(input_size, hidden, direction="bidirect")
    x = framework.to_tensor(rng.standard_normal((batch, length, input_size), dtype=numpy.float32))
    lengths = framework.to_tensor(numpy.full(batch, length, numpy.int64))

    def step():
        gru.clear_gradients()
        out, _ = gru(x, lengths)
        out.sum().backward()

    row = {"batch": batch, "length": length, "input": input_size, "hidden": hidden,
           "oar_forward_backward_ms": best_time(step, repeat) * 1e3}
    torch = torch_or_none()
    if torch is not None:
        tgru = torch.nn.GRU(input_size, hidden, batch_first=True, bidirectional=True)
        tx = torch.from_numpy(x.numpy())

        def torch_step():
            tgru.zero_grad()
            tgru(tx)[0].sum().backward()

        row["torch_forward_backward_ms"] = best_time(torch_step, repeat) * 1e3
    return row


def bench_op_overhead(iterations=20000):
    """Mean time (µs) of a tiny add, with and without graph recording, beside NumPy's own add."""
    a = framework.to_tensor(numpy.ones(4, numpy.float32), requires_grad=True)
    b = framework.to_tensor(numpy.ones(4, numpy.float32))
    an, bn = a.numpy(), b.numpy()

    def timed(fn):
        start = time.perf_counter()
        for _ in range(iterations):
            fn()
        return (time.perf_counter() - start) / iterations * 1e6

    with_grad = timed(lambda: a + b)
    with framework.no_grad():
        without_grad = timed(lambda: a + b)
    return {"add_with_grad_us": with_grad, "add_no_grad_us": without_grad, "numpy_add_us": timed(lambda: an + bn)}


def run_all(quick=False):
    """Every framework benchmark; ``quick`` uses fewer repeats and smaller shapes (for tests)."""
    if quick:
        return {"matmul": bench_matmul(sizes=((64, 64, 64),), repeat=1),
                "conv2d": bench_conv2d(shapes=((1, 8, 8),), repeat=1),
                "gru": bench_gru(batch=2, length=4, input_size=8, hidden=8, repeat=1),
                "op_overhead": bench_op_overhead(iterations=100)}
    return {"matmul": bench_matmul(), "conv2d": bench_conv2d(), "gru": bench_gru(),
            "op_overhead": bench_op_overhead()}
