"""Train-step times on the GPU beside PyTorch eager (``oar bench gpu``), and the matmul peak.

Every row times one training step (forward, loss, backward, optimizer update)
of oar and, when ``torch`` is importable, of a PyTorch model of the same
architecture on the same batch: ``oar_ms`` and ``torch_ms`` (best of a few
steps after warm-up steps, each step ended by a device synchronisation),
``torch_over_oar`` (> 1: oar is faster), and the loss of each framework's
last step (``oar_loss``, ``torch_loss``; the initial weights differ, so they
are not equal) next to the sizes. The rows:

- ``lac``: the LAC BiGRU-CRF of :mod:`zoo.bench.lac`, batch 256 x length 64, Adam.
- ``senta_bilstm_b64``, ``senta_bilstm_b256``: Senta's BiLSTM of :mod:`zoo.bench.senta`
  (length 100), Adam.
- ``tsm_r50``: TSM-R50, 400 classes, batch 8 videos x 8 segments x 3 x 224 x 224, Momentum SGD; the
  PyTorch twin is :func:`zoo.bench.torch_twins.torch_tsm` (the ResNet-50 of
  :func:`zoo.bench.torch_twins.torch_resnet` with the residual shift, average consensus).
  ``tsm_r50_amp``: the same step under float16 autocast with a gradient scaler
  (``framework.amp``; ``torch.autocast`` + ``torch.amp.GradScaler`` on the GPU
  only), with ``oar_amp_speedup`` / ``torch_amp_speedup`` = float32 ms / AMP ms.
- ``nextvlad``: NeXtVLAD at the 2019 YouTube-8M size (rgb 1024 + audio 128, 300 frames (YouTube-8M's longest), 3,862
  classes), batch 160, sigmoid cross entropy summed over classes, Adam; twin
  :func:`zoo.bench.torch_twins.torch_nextvlad`.
- ``matmul_float32``, ``matmul_float16``, ``matmul_bfloat16``: an 8192³ matmul in TFLOP/s, with
  the fraction of the datasheet peak (known GPUs only) and of PyTorch's rate, the practical
  ceiling. NumPy and CuPy have no bfloat16, so that row is PyTorch's only; the half-precision
  rows run on the GPU only.

PyTorch runs with its defaults (cuDNN may use TF32 for float32 convolutions;
``torch_settings`` records them). ``quick`` shrinks every size so the whole
suite runs in seconds on a CPU. Nothing here is asserted.
"""
import gc

import numpy

import framework
import framework.nn.functional as F
from framework import backend
from framework.optimizer import Adam, Momentum
from framework.timing import best_time
from video.models import TSM, NeXtVLAD
from video.tasks.feature_recognition import FeatureRecognition

from . import lac as lac_benchmarks
from . import senta as senta_benchmarks
from .torch_twins import match_blas_threads, torch_nextvlad, torch_or_none, torch_tsm

__all__ = ["DATASHEET_PEAK_TFLOPS", "SIZES", "run_all", "bench_lac", "bench_senta", "bench_tsm", "bench_nextvlad",
           "bench_matmul"]

DATASHEET_PEAK_TFLOPS = {"H200": {"float32": 67.0, "float16": 989.0, "bfloat16": 989.0}}  # dense, no sparsity

SIZES = {  # full and quick sizes of every row
    False: {"lac": {"batch": 256, "length": 64},
            "senta": {"batches": (64, 256), "length": 100, "vocab_size": 3707, "emb_dim": 128, "hidden": 128,
                      "hidden2": 96},
            "tsm": {"batch": 8, "segments": 8, "size": 224},
            "nextvlad": {"batch": 160, "frames": 300, "feature_dims": [1024, 128], "num_clusters": 128,
                         "expansion": 2, "groups": 8, "hidden_size": 2048, "gating_reduction": 8,
                         "num_classes": 3862},
            "matmul": 8192, "warmup": 2, "repeat": 5},
    True: {"lac": {"batch": 8, "length": 16},
           "senta": {"batches": (4, 8), "length": 6, "vocab_size": 50, "emb_dim": 8, "hidden": 8, "hidden2": 4},
           "tsm": {"batch": 1, "segments": 2, "size": 32},
           "nextvlad": {"batch": 4, "frames": 6, "feature_dims": [16, 8], "num_clusters": 4, "expansion": 2,
                        "groups": 2, "hidden_size": 16, "gating_reduction": 4, "num_classes": 10},
           "matmul": 256, "warmup": 1, "repeat": 1},
}
TSM_CLASSES = 400
HALF_ON_GPU_ONLY = "half precision is timed on the GPU only"


def _torch_device(device):
    return "cuda" if device == "gpu" else "cpu"


def _synchronizer(device, torch=None):
    """A function that waits for the queued work of oar (``torch`` None) or PyTorch on ``device``."""
    if device != "gpu":
        return lambda: None
    if torch is not None:
        return torch.cuda.synchronize
    return backend.array_module("gpu").cuda.Device().synchronize


def _release(device, torch):
    """Hand cached GPU memory back after each measurement, so the two frameworks' pools never compete."""
    if device != "gpu":
        return
    gc.collect()  # a model caught in a reference cycle would keep its blocks
    backend.array_module("gpu").get_default_memory_pool().free_all_blocks()
    if torch is not None:
        torch.cuda.empty_cache()


def _measure(step, sync, plan):
    """(best milliseconds, loss of the last step) of ``step()`` (which returns the loss), synchronised."""
    last = [None]

    def run():
        last[0] = step()
        sync()
    seconds = best_time(run, repeat=plan["repeat"], warmup=plan["warmup"])
    return seconds * 1e3, float(last[0].item())


def _compare(config, device, plan, make_oar, make_torch):
    """A row: ``config`` plus oar's and PyTorch's timings and last losses.

    ``make_oar()`` / ``make_torch(torch)`` build a step function returning the loss; either may be None (not
    run), and PyTorch's also does not run when torch is not importable. Both frameworks start from seed 0.
    """
    row = dict(config)
    torch = torch_or_none()
    if make_oar is not None:
        framework.seed(0)
        row["oar_ms"], row["oar_loss"] = _measure(make_oar(), _synchronizer(device), plan)
        _release(device, torch)
    if make_torch is not None and torch is not None:
        torch.manual_seed(0)
        row["torch_ms"], row["torch_loss"] = _measure(make_torch(torch), _synchronizer(device, torch), plan)
        if "oar_ms" in row:
            row["torch_over_oar"] = row["torch_ms"] / row["oar_ms"]
    _release(device, torch)
    return row


def bench_lac(device, plan, batch, length):
    """The LAC BiGRU-CRF train step (batch, length) row; see the module docstring."""
    tokens, labels, lengths = lac_benchmarks.batch_arrays(numpy.random.default_rng(0), batch, length)
    config = {"batch": batch, "length": length, "emb": 128, "hidden": 128, "layers": 2,
              "tags": lac_benchmarks.NUM_TAGS}
    return _compare(config, device, plan, lambda: lac_benchmarks.oar_train_step(tokens, labels, lengths, device),
                    lambda torch: lac_benchmarks.torch_train_step(torch, tokens, labels, _torch_device(device)))


def bench_senta(device, plan, batch, length, vocab_size, emb_dim, hidden, hidden2):
    """The Senta BiLSTM train step row at ``batch``; see the module docstring."""
    ids, labels = senta_benchmarks.batch_arrays(batch, length, vocab_size)
    sizes = (vocab_size, emb_dim, hidden, hidden2)
    config = {"model": "bilstm", "batch": batch, "length": length, "emb": emb_dim, "hidden": hidden}
    return _compare(config, device, plan,
                    lambda: senta_benchmarks.oar_train_step("bilstm", ids, labels, *sizes, device=device),
                    lambda torch: senta_benchmarks.torch_train_step(torch, "bilstm", ids, labels, *sizes,
                                                               device=_torch_device(device)))


def _oar_amp():
    """``framework.amp`` when it offers ``autocast`` and ``GradScaler``, else None."""
    try:
        from framework import amp
    except ImportError:
        return None
    return amp if hasattr(amp, "autocast") and hasattr(amp, "GradScaler") else None


def _oar_tsm_step(clips, labels, device, amp=None):
    """One oar TSM-R50 step on clips (B, T, 3, H, W) and labels (B,); float16 autocast when ``amp`` is given."""
    model = TSM(num_classes=TSM_CLASSES, depth=50, num_segments=clips.shape[1], dropout=0.0).to(device)
    model.train()
    optimizer = Momentum(learning_rate=0.001, momentum=0.9, parameters=model.parameters())
    x, y = framework.to_tensor(clips, device=device), framework.to_tensor(labels, device=device)
    scaler = amp.GradScaler() if amp is not None else None

    def step():
        if scaler is None:
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            optimizer.step()
        else:
            with amp.autocast(dtype="float16"), numpy.errstate(over="ignore", invalid="ignore"):
                loss = F.cross_entropy(model(x), y)
                scaler.scale(loss).backward()  # inf gradients are expected at first: the scaler skips those steps
            scaler.step(optimizer)
            scaler.update()
        optimizer.clear_grad()
        return loss
    return step


def _torch_tsm_step(torch, clips, labels, device, amp=False):
    """The same step for the PyTorch twin; float16 autocast with a gradient scaler when ``amp``."""
    model = torch_tsm(True, segments=clips.shape[1]).to(device).train()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.001, momentum=0.9)
    x, y = torch.from_numpy(clips).to(device), torch.from_numpy(labels).to(device)
    scaler = torch.amp.GradScaler(device) if amp else None

    def step():
        if scaler is None:
            loss = torch.nn.functional.cross_entropy(model(x), y)
            loss.backward()
            optimizer.step()
        else:
            with torch.autocast(device, dtype=torch.float16):
                loss = torch.nn.functional.cross_entropy(model(x), y)
            scaler.scale(loss).backward()
            scaler.step(optimizer)
            scaler.update()
        optimizer.zero_grad()
        return loss
    return step


def bench_tsm(device, plan, batch, segments, size):
    """The ``tsm_r50`` (float32) and ``tsm_r50_amp`` (float16 autocast) rows; see the module docstring."""
    rng = numpy.random.default_rng(0)
    clips = rng.standard_normal((batch, segments, 3, size, size), dtype=numpy.float32)
    labels = rng.integers(0, TSM_CLASSES, batch)
    config = {"batch": batch, "segments": segments, "size": size, "classes": TSM_CLASSES}
    tdev = _torch_device(device)
    fp32 = _compare(config, device, plan, lambda: _oar_tsm_step(clips, labels, device),
                    lambda torch: _torch_tsm_step(torch, clips, labels, tdev))
    amp = _oar_amp()
    make_oar = (lambda: _oar_tsm_step(clips, labels, device, amp)) if amp is not None else None
    make_torch = (lambda torch: _torch_tsm_step(torch, clips, labels, tdev, amp=True)) if device == "gpu" else None
    amp_row = _compare({**config, "dtype": "float16"}, device, plan, make_oar, make_torch)
    if amp is None:
        amp_row["skipped"] = "framework.amp (autocast, GradScaler) is not available"
    if device != "gpu":
        amp_row["torch_skipped"] = HALF_ON_GPU_ONLY
    for who in ("oar", "torch"):
        if f"{who}_ms" in amp_row:
            amp_row[f"{who}_amp_speedup"] = fp32[f"{who}_ms"] / amp_row[f"{who}_ms"]
    return {"tsm_r50": fp32, "tsm_r50_amp": amp_row}


def bench_nextvlad(device, plan, batch, frames, **model_args):
    """The NeXtVLAD train step row at ``batch`` videos of ``frames`` frames; see the module docstring."""
    rng = numpy.random.default_rng(0)
    features = [rng.standard_normal((batch, frames, d), dtype=numpy.float32) for d in model_args["feature_dims"]]
    labels = (rng.random((batch, model_args["num_classes"])) < 0.002).astype(numpy.float32)
    labels[numpy.arange(batch), rng.integers(0, model_args["num_classes"], batch)] = 1.0  # >= 1 label each

    def make_oar():
        task = FeatureRecognition(NeXtVLAD(**model_args).to(device), modalities=["rgb", "audio"])
        task.model.train()
        optimizer = Adam(learning_rate=2e-4, parameters=task.model.parameters())
        data = {name: framework.to_tensor(f, device=device) for name, f in zip(task.modalities, features)}
        data["label"] = framework.to_tensor(labels, device=device)

        def step():
            loss = task.loss(data)
            loss.backward()
            optimizer.step()
            optimizer.clear_grad()
            return loss
        return step

    def make_torch(torch):
        tdev = _torch_device(device)
        model = torch_nextvlad(**model_args).to(tdev).train()
        optimizer = torch.optim.Adam(model.parameters(), lr=2e-4)
        xs, y = [torch.from_numpy(f).to(tdev) for f in features], torch.from_numpy(labels).to(tdev)

        def step():
            loss = torch.nn.functional.binary_cross_entropy_with_logits(model(xs), y, reduction="none").sum(1).mean()
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
            return loss
        return step

    return _compare({"batch": batch, "frames": frames, **model_args}, device, plan, make_oar, make_torch)


def _gpu_name(device):
    if device != "gpu":
        return None
    cupy = backend.array_module("gpu")
    name = cupy.cuda.runtime.getDeviceProperties(cupy.cuda.Device().id)["name"]
    return name.decode() if isinstance(name, bytes) else str(name)


def _peak(gpu_name, dtype):
    """The datasheet dense peak TFLOP/s of ``dtype`` on ``gpu_name``, or None when it is not in the table."""
    for key, peaks in DATASHEET_PEAK_TFLOPS.items():
        if gpu_name and key in gpu_name:
            return peaks[dtype]
    return None


def bench_matmul(device, plan, n, dtype, gpu_name=None):
    """An (n, n) @ (n, n) matmul in ``dtype``: oar's and PyTorch's ms and TFLOP/s, and fractions of peak."""
    flop = 2.0 * n ** 3
    oar_dtype = dtype if dtype != "bfloat16" else None  # NumPy and CuPy have no bfloat16
    rng = numpy.random.default_rng(0)

    def make_oar():
        a, b = (framework.to_tensor(rng.standard_normal((n, n), dtype=numpy.float32).astype(oar_dtype),
                                    device=device) for _ in range(2))

        def product():
            with framework.no_grad():
                return framework.matmul(a, b)[0, 0]
        return product

    def make_torch(torch):
        a, b = (torch.randn(n, n, device=_torch_device(device)).to(getattr(torch, dtype)) for _ in range(2))

        def product():
            with torch.no_grad():
                return (a @ b)[0, 0]
        return product

    row = _compare({"n": n, "dtype": dtype}, device, plan, make_oar if oar_dtype else None, make_torch)
    if oar_dtype is None:
        row["skipped"] = "oar has no bfloat16 (NumPy and CuPy lack it)"
    peak = _peak(gpu_name, dtype)
    row["peak_tflops"] = peak
    for who in ("oar", "torch"):
        if f"{who}_ms" in row:
            row.pop(f"{who}_loss")
            row[f"{who}_tflops"] = flop / row[f"{who}_ms"] / 1e9
            row[f"{who}_fraction_of_peak"] = peak and row[f"{who}_tflops"] / peak
    if "oar_tflops" in row and "torch_tflops" in row:
        row["oar_fraction_of_torch"] = row["oar_tflops"] / row["torch_tflops"]
    return row


def _torch_settings(torch, device):
    """PyTorch's version and the defaults that matter here; on the CPU it gets as many threads as NumPy's BLAS."""
    if torch is None:
        return None
    if device == "cpu":
        match_blas_threads(torch, default=1)
    settings = {"version": torch.__version__, "threads": torch.get_num_threads(),
                "float32_matmul_precision": torch.get_float32_matmul_precision()}
    if device == "gpu":
        settings.update(cudnn_allow_tf32=torch.backends.cudnn.allow_tf32,
                        cudnn_benchmark=torch.backends.cudnn.benchmark)
    return settings


def run_all(quick=False, device=None):
    """Every row (see the module docstring) on ``device`` ('gpu' when a GPU is usable, else 'cpu').

    ``quick``: tiny sizes and one timed step after one warm-up, for smoke runs and tests.
    Returns ``{"device", "gpu", "torch_settings", <row name>: row, ...}``.
    """
    device = device or ("gpu" if framework.is_gpu_available() else "cpu")
    if device not in ("cpu", "gpu"):
        raise ValueError(f"run_all: device must be 'cpu' or 'gpu', got {device!r}")
    sizes = SIZES[bool(quick)]
    plan = {"warmup": sizes["warmup"], "repeat": sizes["repeat"]}
    gpu_name = _gpu_name(device)
    result = {"device": device, "gpu": gpu_name, "torch_settings": _torch_settings(torch_or_none(), device)}
    rows = [("lac", lambda: {"lac": bench_lac(device, plan, **sizes["lac"])})]
    senta = dict(sizes["senta"])
    for batch in senta.pop("batches"):
        rows.append((f"senta_bilstm_b{batch}",
                     lambda batch=batch: {f"senta_bilstm_b{batch}": bench_senta(device, plan, batch, **senta)}))
    rows.append(("tsm_r50", lambda: bench_tsm(device, plan, **sizes["tsm"])))
    rows.append(("nextvlad", lambda: {"nextvlad": bench_nextvlad(device, plan, **sizes["nextvlad"])}))
    for dtype in ("float32", "float16", "bfloat16"):
        if dtype == "float32" or device == "gpu":
            rows.append((f"matmul_{dtype}", lambda dtype=dtype: {
                f"matmul_{dtype}": bench_matmul(device, plan, sizes["matmul"], dtype, gpu_name)}))
        else:
            result[f"matmul_{dtype}"] = {"n": sizes["matmul"], "dtype": dtype, "skipped": HALF_ON_GPU_ONLY}
    for name, measure in rows:      # a row that fails records its error; the others still run
        try:
            result.update(measure())
        except Exception as error:  # noqa: BLE001  (a benchmark reports, it does not stop)
            result[name] = {"error": f"{type(error).__name__}: {error}"}
        gc.collect()
    return result
