"""Data-loading throughput: samples/s of CPU-heavy pipelines for several worker counts, threads and processes.

Two pipelines, both built from data generated here:

- ``image``: JPEG decode + resize to 224x224 + normalise to (3, 224, 224)
  float32 with OpenCV, from 480x640 JPEG bytes held in memory (skipped when
  OpenCV is not installed);
- ``tokenize``: pure-Python tokenisation (greedy longest match against a
  vocabulary) of 200-word lines, padded by :class:`SequenceCollator`.

``run_all`` gives, per pipeline, one row per ``(worker_type, num_workers)``
with samples/s and the speed-up over one worker of the same type (and the
``num_workers=0`` baseline). OpenCV's own thread pool is set to one thread
while measuring, so that the scaling comes from the loader's workers.
"""
import os
import time

import numpy

from .collate import SequenceCollator, default_collate
from .dataset import Dataset
from .loader import DataLoader

__all__ = ["JpegDataset", "TokenizeDataset", "bench_loader", "run_all"]

_MEAN = numpy.array([0.485, 0.456, 0.406], dtype=numpy.float32) * 255
_STD = numpy.array([0.229, 0.224, 0.225], dtype=numpy.float32) * 255


class JpegDataset(Dataset):
    """``n`` samples ``{"image": (3, size, size) float32, "label": int}`` decoded from in-memory JPEGs."""

    def __init__(self, n, size=224, distinct=16, seed=0):
        import cv2
        rng = numpy.random.default_rng(seed)
        y, x = numpy.mgrid[0:480, 0:640].astype(numpy.float32)
        self.jpegs = []
        for _ in range(distinct):
            fx, fy, phase = rng.uniform(0.005, 0.05, size=3)
            base = 127 + 100 * numpy.sin(fx * x + fy * y + 10 * phase)
            image = numpy.stack([base, base[::-1], base[:, ::-1]], axis=-1) + rng.normal(0, 8, (480, 640, 3))
            ok, encoded = cv2.imencode(".jpg", numpy.clip(image, 0, 255).astype(numpy.uint8),
                                       [cv2.IMWRITE_JPEG_QUALITY, 90])
            self.jpegs.append(encoded.tobytes())
        self.n, self.size = n, size

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        import cv2
        data = numpy.frombuffer(self.jpegs[i % len(self.jpegs)], dtype=numpy.uint8)
        image = cv2.imdecode(data, cv2.IMREAD_COLOR)
        image = cv2.resize(image, (self.size, self.size), interpolation=cv2.INTER_LINEAR)
        image = (image.astype(numpy.float32) - _MEAN) / _STD
        return {"image": image.transpose(2, 0, 1), "label": i % 10}


class TokenizeDataset(Dataset):
    """``n`` samples ``{"ids": list of token ids, "label": int}`` tokenised in pure Python from generated text."""

    def __init__(self, n, words_per_line=200, seed=0):
        rng = numpy.random.default_rng(seed)
        letters = numpy.array(list("abcdefghijklmnopqrstuvwxyz"))
        pieces = {"".join(rng.choice(letters, size=k)) for k in (2, 3, 4, 5) for _ in range(800)}
        self.vocab = {piece: i + len(letters) for i, piece in enumerate(sorted(pieces))}
        self.vocab.update({c: i for i, c in enumerate(letters)})
        self.max_piece = 5
        lengths = rng.integers(3, 12, size=(n, words_per_line))
        self.lines = [" ".join("".join(rng.choice(letters, size=k)) for k in row) for row in lengths]

    def __len__(self):
        return len(self.lines)

    def __getitem__(self, i):
        ids = []
        for word in self.lines[i].split():
            start = 0
            while start < len(word):
                for stop in range(min(len(word), start + self.max_piece), start, -1):
                    piece = self.vocab.get(word[start:stop])
                    if piece is not None:
                        ids.append(piece)
                        start = stop
                        break
        return {"ids": ids, "label": i % 2}


def bench_loader(dataset, collate_fn=None, workers=(1, 2, 4), worker_types=("thread", "process"), batch_size=32,
                 repeat=1):
    """Samples/s of one full epoch (median of ``repeat``) for ``num_workers=0`` and each worker setting.

    Returns rows ``{"worker_type", "num_workers", "samples_per_s", "speedup"}``;
    ``speedup`` is relative to one worker of the same type (to the main thread for 0).
    """
    settings = [("main", 0)] + [(kind, w) for kind in worker_types for w in workers]
    rows = []
    for kind, num_workers in settings:
        loader = DataLoader(dataset, batch_size=batch_size, num_workers=num_workers,
                            worker_type="thread" if kind == "main" else kind, collate_fn=collate_fn)
        rate = len(dataset) / _median_epoch_time(loader, repeat)
        rows.append({"worker_type": kind, "num_workers": num_workers, "samples_per_s": round(rate, 1)})
    for row in rows:
        one = next(r for r in rows if r["worker_type"] == row["worker_type"] and r["num_workers"] <= 1)
        row["speedup"] = round(row["samples_per_s"] / one["samples_per_s"], 2)
    return rows


def _median_epoch_time(loader, repeat):
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        for _ in loader:
            pass
        times.append(time.perf_counter() - start)
    return float(numpy.median(times))


def _worker_counts(quick):
    if quick:
        return (1, 2)
    return tuple(sorted({1, 2, 4, os.cpu_count() or 1}))


def run_all(quick=False):
    """Both pipelines for worker counts 1, 2, 4 and the core count (1, 2 and tiny data when ``quick``)."""
    workers = _worker_counts(quick)
    results = {"cores": os.cpu_count(), "workers": list(workers)}
    n_images, n_lines = (64, 64) if quick else (768, 768)
    try:
        import cv2
    except ImportError:
        results["image"] = {"skipped": "OpenCV is not installed (pip install opencv-python-headless)"}
    else:
        cv2_threads = cv2.getNumThreads()
        cv2.setNumThreads(1)
        try:
            results["image"] = bench_loader(JpegDataset(n_images), default_collate, workers)
        finally:
            cv2.setNumThreads(cv2_threads)
    results["tokenize"] = bench_loader(TokenizeDataset(n_lines), SequenceCollator("ids"), workers)
    return results
