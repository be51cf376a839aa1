"""Video data throughput (``oar bench video_data``): clips/s of decode + sample + transform per worker setting.

The videos are generated here with :mod:`video.data.synthetic` (H.264 mp4,
keyframe every 12 frames). Pipelines, each read through a
:class:`~video.data.datasets.VideoDataset` and the DataLoader:

- ``tsn_112``: 112x112 videos of 32-48 frames; TSN training sampling (8
  segments), multi-scale crop to 112, flip, normalise, (1, 8, 3, 112, 112);
- ``tsn_224``: 320x240 videos of 64-96 frames; 8 segments, short side to 256,
  random 224 crop, flip, normalise, (1, 8, 3, 224, 224);
- ``nonlocal_224``: the same videos; a dense clip of 8 frames at interval 8,
  short side jittered in [256, 320], random 224 crop, flip, normalise;
- ``tsn_flow_112``: the 112x112 videos as TSN's flow stream reads them: 8 segments, a stack of 5 DIS flow
  fields each, (1, 8, 10, 112, 112), from the per-video flow cache (computed in the first epoch).

Each gives one row per ``(worker_type, num_workers)`` (from
:func:`zoo.bench.data.bench_loader`, ``samples_per_s`` = clips/s).
``decode`` compares reading the 8 TSN frames of one of the 320x240 videos by
seeking with decoding every frame. ``flow`` (:func:`bench_flow`) times the optical flow of whole
112x112 videos on one core for each OpenCV method (frames/s, decoding excluded) and its end-point error
on frames of the set shifted by known sub-pixel translations. ``quick`` uses only the 112x112 videos. The
machine's load average is reported before and after, since other work on a shared machine lowers the figures. OpenCV's own
threads are set to one while measuring; each reader decodes with one thread.
"""
import os
import tempfile

import numpy

from framework.io.collate import default_collate
from framework.timing import best_time
from video.data.datasets import VideoDataset
from video.data.decode import VideoReader
from video.data.flow import METHODS, FlowCache, FlowSettings, dense_flow, video_flow
from video.data.sampling import segment_indices
from video.data.synthetic import SyntheticSpec, make_synthetic_set

from .data import bench_loader

__all__ = ["PIPELINES", "FLOW", "make_videos", "bench_decode", "bench_flow", "run_all"]

_SMALL = SyntheticSpec(num_frames=(32, 48), width=(112, 112), height=(112, 112))
_LARGE = SyntheticSpec(num_frames=(64, 96), width=(320, 320), height=(240, 240), object_size=(0.15, 0.25))
_FLIP_NORM = [{"type": "RandomHorizontalFlip"}, {"type": "Normalize"}, {"type": "FormatClips"}]
PIPELINES = {
    "tsn_112": ("small", {"type": "SegmentSampler", "num_segments": 8, "mode": "train"},
                [{"type": "MultiScaleCrop", "size": 112}] + _FLIP_NORM),
    "tsn_224": ("large", {"type": "SegmentSampler", "num_segments": 8, "mode": "train"},
                [{"type": "Resize", "short_side": 256}, {"type": "RandomCrop", "size": 224}] + _FLIP_NORM),
    "nonlocal_224": ("large", {"type": "ClipSampler", "clip_len": 8, "frame_interval": 8, "mode": "train"},
                     [{"type": "RandomShortSideScale", "low": 256, "high": 320}, {"type": "RandomCrop", "size": 224}]
                     + _FLIP_NORM),
    "tsn_flow_112": ("small", {"type": "SegmentSampler", "num_segments": 8, "mode": "train"},
                     [{"type": "MultiScaleCrop", "size": 112}, {"type": "RandomFlip", "direction": "horizontal"},
                      {"type": "NormalizeModality"}, {"type": "FormatClips"}]),
}
FLOW = {"name": "flow", "stack": 5, "method": "dis", "bound": 8.0}   # the modality of tsn_flow_112


def make_videos(root, num, spec, workers=None):
    """Generate ``num`` videos under ``root`` (see :func:`make_synthetic_set`); returns the train list path."""
    make_synthetic_set(root, num, seed=0, spec=spec, workers=workers)
    return os.path.join(root, "motion_train.txt")


def bench_decode(path, repeat=3):
    """Seconds to read the 8 TSN test frames of ``path`` by seeking, and to decode every frame (best of ``repeat``)."""
    def seek():
        with VideoReader(path) as reader:
            reader.get_frames(segment_indices(len(reader), 8)[0])

    def everything():
        with VideoReader(path) as reader:
            reader.get_frames(numpy.arange(len(reader)))

    with VideoReader(path) as reader:
        frames, fps = len(reader), reader.fps
    times = {name: round(best_time(fn, repeat=repeat), 5)
             for name, fn in (("seek_8_frames_s", seek), ("all_frames_s", everything))}
    return {"frames": frames, "fps": fps, **times, "decoded_frames_per_s": round(frames / times["all_frames_s"], 1)}


def _decoded(paths):
    frames = []
    for path in paths:
        with VideoReader(path) as reader:
            frames.append(reader.get_frames(numpy.arange(len(reader))))
    return frames


def bench_flow(paths, repeat=3, shift=3.0):
    """Per flow method: ``frames_per_s`` of :func:`video.data.flow.video_flow` (quantised, every consecutive
    pair of the decoded videos ``paths``, best of ``repeat``) and ``epe_px``, the mean end-point error (pixels,
    8-pixel border left out) of the flow from every 4th frame to itself shifted by a random (dx, dy) in
    [-``shift``, ``shift``] (bilinear, reflected border)."""
    import cv2
    videos = _decoded(paths)
    pairs = sum(max(len(v) - 1, 1) for v in videos)
    rng = numpy.random.default_rng(0)
    frames = [v[i] for v in videos for i in range(0, len(v), 4)]
    shifts = rng.uniform(-shift, shift, size=(len(frames), 2))
    moved = [cv2.warpAffine(f, numpy.float32([[1, 0, dx], [0, 1, dy]]), (f.shape[1], f.shape[0]),
                            flags=cv2.INTER_LINEAR, borderMode=cv2.BORDER_REFLECT)
             for f, (dx, dy) in zip(frames, shifts)]
    rows = {}
    for method in METHODS:
        settings = FlowSettings(method=method)
        seconds = best_time(lambda: [video_flow(v, settings) for v in videos], repeat=repeat)
        errors = [numpy.hypot(*(dense_flow(a, b, method)[8:-8, 8:-8] - d).transpose(2, 0, 1)).mean()
                  for a, b, d in zip(frames, moved, shifts)]
        rows[method] = {"frames_per_s": round(pairs / seconds, 1), "epe_px": round(float(numpy.mean(errors)), 3)}
    return {"videos": len(videos), "frame_pairs": pairs, "size": list(videos[0].shape[1:3]),
            "translated_frames": len(frames), **rows}


def run_all(quick=False):
    """Every pipeline for 1, 2 and 4 workers, threads and processes (``quick``: tiny, 1 and 2 workers)."""
    import cv2
    workers = (1, 2) if quick else (1, 2, 4)
    per_worker, repeat, videos = (8, 1, 12) if quick else (48, 3, 24)
    results = {"cores": os.cpu_count(), "load_before": [round(v, 2) for v in os.getloadavg()],
               "workers": list(workers), "clips_per_worker": per_worker}
    cv2_threads = cv2.getNumThreads()
    cv2.setNumThreads(1)
    try:
        with tempfile.TemporaryDirectory(prefix="oar-video-bench-") as root:
            specs = {"small": _SMALL} if quick else {"small": _SMALL, "large": _LARGE}
            lists = {size: make_videos(os.path.join(root, size), videos, spec) for size, spec in specs.items()}
            size = list(specs)[-1]
            with open(lists[size]) as f:
                results["decode"] = bench_decode(os.path.join(root, size, f.readline().split()[0]), repeat)
            with open(lists["small"]) as f:
                small = [os.path.join(root, "small", line.split()[0]) for line in f if line.strip()]
            results["flow"] = bench_flow(small[:4 if quick else 12], repeat)
            for name, (size, sampler, transforms) in PIPELINES.items():
                if size not in lists:
                    continue
                modality = FLOW if name == "tsn_flow_112" else None
                dataset = VideoDataset(lists[size], sampler, transforms, modality=modality)
                if modality:
                    dataset.loader.flow_cache = FlowCache(dataset.loader.modality.flow, os.path.join(root, "flow"))
                results[name] = bench_loader(dataset, default_collate, workers, batch_size=8,
                                             samples_per_worker=per_worker, repeat=repeat)
    finally:
        cv2.setNumThreads(cv2_threads)
    results["load_after"] = [round(v, 2) for v in os.getloadavg()]
    return results
