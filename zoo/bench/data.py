"""Data-loading throughput (``oar bench data``): samples/s of CPU-heavy pipelines for several worker counts,
threads and processes.

Two pipelines, both built from data generated here:

- ``image``: JPEG decode + resize to 224x224 + normalise to (3, 224, 224)
  float32 with OpenCV, from 480x640 JPEG bytes held in memory (skipped when
  OpenCV is not installed);
- ``tokenize``: pure-Python tokenisation (greedy longest match against a
  vocabulary) of 512-word lines, padded by :class:`SequenceCollator`.

``run_all`` gives, per pipeline, one row per ``(worker_type, num_workers)``
with samples/s and the speed-up over one worker of the same type (and the
``num_workers=0`` baseline); each setting reads a number of samples
proportional to its worker count. OpenCV's own thread pool is set to one thread
while measuring, so that the scaling comes from the loader's workers.
"""
import os
import time

import numpy

from framework.io import DataLoader, Dataset
from framework.io.collate import SequenceCollator, default_collate

__all__ = ["JpegDataset", "TokenizeDataset", "Cycled", "bench_loader", "run_all"]

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

    def __init__(self, n, words_per_line=512, seed=0):
        rng = numpy.random.default_rng(seed)
        letters = "abcdefghijklmnopqrstuvwxyz"
        pieces = {_random_word(rng, letters, k) for k in (2, 3, 4, 5) for _ in range(800)}
        self.vocab = {piece: i + len(letters) for i, piece in enumerate(sorted(pieces))}
        self.vocab.update({c: i for i, c in enumerate(letters)})
        self.max_piece = 5
        ends = numpy.cumsum(rng.integers(3, 12, size=n * words_per_line))
        text = "".join(rng.choice(list(letters), size=int(ends[-1])))
        words = [text[a:b] for a, b in zip(numpy.concatenate([[0], ends[:-1]]).tolist(), ends.tolist())]
        self.lines = [" ".join(words[i:i + words_per_line]) for i in range(0, len(words), words_per_line)]

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


def _random_word(rng, letters, length):
    return "".join(letters[i] for i in rng.integers(0, len(letters), size=length))


class Cycled(Dataset):
    """The first ``n`` samples of ``dataset`` repeated endlessly: sample ``i`` is ``dataset[i % len(dataset)]``."""

    def __init__(self, dataset, n):
        self.dataset, self.n = dataset, n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return self.dataset[i % len(self.dataset)]


def bench_loader(dataset, collate_fn=None, workers=(1, 2, 4), worker_types=("thread", "process"), batch_size=32,
                 samples_per_worker=384, repeat=3):
    """Samples/s (median of ``repeat`` epochs) for ``num_workers=0`` and each ``(worker_type, num_workers)``.

    Each epoch reads ``samples_per_worker * max(1, num_workers)`` samples
    (``dataset`` cycled), so every run lasts about as long and the start-up of
    the workers is included but amortised. Returns rows ``{"worker_type",
    "num_workers", "samples_per_s", "speedup"}``; ``speedup`` is relative to one
    worker of the same type (to the main thread for 0).
    """
    settings = [("main", 0)] + [(kind, w) for kind in worker_types for w in workers]
    rows = []
    for kind, num_workers in settings:
        data = Cycled(dataset, samples_per_worker * max(1, num_workers))
        loader = DataLoader(data, batch_size=batch_size, num_workers=num_workers,
                            worker_type="thread" if kind == "main" else kind, collate_fn=collate_fn)
        rate = numpy.median([len(data) / _epoch_seconds(loader) for _ in range(repeat)])
        rows.append({"worker_type": kind, "num_workers": num_workers, "samples_per_s": round(float(rate), 1)})
    for row in rows:
        one = next(r for r in rows if r["worker_type"] == row["worker_type"] and r["num_workers"] <= 1)
        row["speedup"] = round(row["samples_per_s"] / one["samples_per_s"], 2)
    return rows


def _epoch_seconds(loader):
    start = time.perf_counter()
    for _ in loader:
        pass
    return time.perf_counter() - start


def _worker_counts(quick):
    if quick:
        return (1, 2)
    return tuple(sorted({1, 2, 4, os.cpu_count() or 1}))


def run_all(quick=False):
    """Both pipelines for worker counts 1, 2, 4 and the core count (1, 2 and few samples when ``quick``)."""
    workers = _worker_counts(quick)
    per_worker, repeat = (32, 1) if quick else (384, 3)
    results = {"cores": os.cpu_count(), "workers": list(workers), "samples_per_worker": per_worker}
    try:
        import cv2
    except ImportError:
        results["image"] = {"skipped": "OpenCV is not installed (pip install opencv-python-headless)"}
    else:
        cv2_threads = cv2.getNumThreads()
        cv2.setNumThreads(1)
        try:
            results["image"] = bench_loader(JpegDataset(16), default_collate, workers, samples_per_worker=per_worker,
                                            repeat=repeat)
        finally:
            cv2.setNumThreads(cv2_threads)
    results["tokenize"] = bench_loader(TokenizeDataset(256), SequenceCollator("ids"), workers,
                                       samples_per_worker=per_worker, repeat=repeat)
    return results
