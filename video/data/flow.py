"""Dense optical flow of a whole video (OpenCV), quantised to uint8 as TSN stored it, cached per video.

- :func:`dense_flow`: the flow between two frames, (H, W, 2) float32, (dx, dy) in pixels such that
  ``prev[y, x] ~ next[y + dy, x + dx]``; ``method`` "dis" (OpenCV's DIS flow, its ultrafast preset) or
  "farneback" (Farneback's polynomial expansion, OpenCV's usual parameters).
- :func:`quantise_flow` / :func:`dequantise_flow`: TSN's storage of flow as 8-bit images: each component
  clipped to ``[-bound, bound]`` pixels and mapped linearly onto 0..255 (0 px -> 127.5, rounded to even);
  clips read them back as pixels.
- :func:`video_flow`: the quantised flow of every pair of consecutive frames of a decoded video,
  (F - 1, H, W, 2) uint8 (flow ``j`` goes from frame j to frame j + 1).
- :class:`FlowSettings` and :class:`FlowCache`: the flow of a video file computed once and kept under
  ``$OAR_HOME/video_flow/`` as a ``.npy`` file named by the file's sha256 and a digest of the settings. The
  cache is untrusted data: it is read with ``allow_pickle=False`` and an entry whose dtype, rank or shape
  does not fit the video (a truncated or foreign file) is refused with one warning, computed again and
  replaced. Writes go to a temporary name and are renamed, so readers in other workers never see half a file.
"""
import dataclasses
import hashlib
import json
import os
import tempfile
import threading
import warnings

import numpy

from framework.config import ConfigError
from framework.fetch import oar_home
from vision.data.transforms import require_cv2

__all__ = ["METHODS", "FlowSettings", "dense_flow", "quantise_flow", "dequantise_flow", "video_flow",
           "file_sha256", "FlowCache"]

METHODS = ("dis", "farneback")


@dataclasses.dataclass(frozen=True)
class FlowSettings:
    """How flow is computed and stored: ``method`` (see :data:`METHODS`) and ``bound`` (pixels per frame
    mapped onto the ends of the uint8 range)."""

    method: str = "dis"
    bound: float = 8.0

    def __post_init__(self):
        if self.method not in METHODS:
            raise ConfigError(f"flow method must be one of {METHODS}, got {self.method!r}")
        if not float(self.bound) > 0:
            raise ConfigError(f"flow bound must be a positive number of pixels, got {self.bound!r}")

    def digest(self):
        """A short hex digest of the settings (part of a cache entry's name)."""
        text = json.dumps({"method": self.method, "bound": float(self.bound), "format": 1}, sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()[:16]


_local = threading.local()


def _dis(shape):
    """This thread's DIS flow object for frames of ``shape`` (creating one costs more than a small frame's
    flow), made again when the frame size changes: an OpenCV DIS object that has computed the flow of frames
    of another size gives a different flow (by up to a pixel) than a new one, so a kept one made the flow of
    a video depend on what the process had computed before. One object per thread, whatever the sizes seen."""
    if getattr(_local, "dis_shape", None) != shape:
        cv2 = require_cv2()
        _local.dis = cv2.DISOpticalFlow_create(cv2.DISOPTICAL_FLOW_PRESET_ULTRAFAST)
        _local.dis_shape = shape
    return _local.dis


def _gray(frame):
    cv2 = require_cv2()
    frame = numpy.ascontiguousarray(frame, dtype=numpy.uint8)
    return frame if frame.ndim == 2 else cv2.cvtColor(frame, cv2.COLOR_RGB2GRAY)


def dense_flow(prev, next, method="dis"):
    """Flow from frame ``prev`` to ``next`` ((H, W, 3) RGB or (H, W) grey, uint8): (H, W, 2) float32 pixels."""
    if method not in METHODS:
        raise ConfigError(f"flow method must be one of {METHODS}, got {method!r}")
    a, b = _gray(prev), _gray(next)
    if method == "dis":
        return _dis(a.shape).calc(a, b, None)
    cv2 = require_cv2()
    return cv2.calcOpticalFlowFarneback(a, b, None, pyr_scale=0.5, levels=3, winsize=15, iterations=3,
                                        poly_n=5, poly_sigma=1.2, flags=0)


def quantise_flow(flow, bound):
    """Flow (..., 2) in pixels -> uint8: ``round((clip(f, -bound, bound) + bound) * 255 / (2 * bound))``."""
    flow = numpy.clip(numpy.asarray(flow, dtype=numpy.float32), -bound, bound)
    return numpy.rint((flow + bound) * (255.0 / (2.0 * bound))).astype(numpy.uint8)


def dequantise_flow(quantised, bound):
    """The inverse of :func:`quantise_flow` (to within ``bound / 255`` pixels): float32 pixels."""
    return quantised.astype(numpy.float32) * (2.0 * bound / 255.0) - bound


def video_flow(frames, settings=FlowSettings()):
    """Quantised flow between consecutive frames of ``frames`` (F, H, W, 3) uint8: (max(F - 1, 1), H, W, 2)
    uint8. A one-frame video gets one flow of zeros (its frame to itself)."""
    frames = numpy.asarray(frames)
    gray = [_gray(f) for f in frames]
    if len(gray) == 1:
        gray = gray * 2
    flows = [quantise_flow(dense_flow(a, b, settings.method), settings.bound) for a, b in zip(gray, gray[1:])]
    return numpy.stack(flows)


_hash_lock = threading.Lock()
_hashes = {}


def _files_of(path):
    """The files whose bytes make the video ``path``: itself, or a frame folder's files in name order."""
    if not os.path.isdir(path):
        return [path]
    return sorted(os.path.join(path, name) for name in os.listdir(path)
                  if os.path.isfile(os.path.join(path, name)))


def file_sha256(path):
    """The sha256 (hex) of video ``path``: of the file, or of a JPEG frame folder's file names and bytes;
    remembered per (path, sizes, modification times) in this process."""
    files = _files_of(path)
    key = (os.path.abspath(path),) + tuple((f, os.stat(f).st_size, os.stat(f).st_mtime_ns) for f in files)
    with _hash_lock:
        known = _hashes.get(key)
    if known is None:
        digest = hashlib.sha256()
        for name in files:
            if name != path:
                digest.update(os.path.basename(name).encode() + b"\0")
            with open(name, "rb") as f:
                for block in iter(lambda: f.read(1 << 20), b""):
                    digest.update(block)
        known = digest.hexdigest()
        with _hash_lock:
            _hashes[key] = known
    return known


class FlowCache:
    """The quantised flow of video files, computed once per file content and settings.

    ``cache.get(path, decode)`` returns (F - 1, H, W, 2) uint8 for a video of F frames of H x W; ``decode()``
    is called only on a miss and returns the video's frames (F, H, W, 3) uint8. ``expected`` (F, H, W), when
    given, is checked against a stored entry. ``root`` defaults to ``$OAR_HOME/video_flow``.
    """

    def __init__(self, settings=FlowSettings(), root=None):
        self.settings = settings
        self.root = root or os.path.join(oar_home(), "video_flow")

    def entry(self, path):
        """The cache file of video ``path``."""
        return os.path.join(self.root, f"{file_sha256(path)}-{self.settings.digest()}.npy")

    def _read(self, entry, expected):
        """The stored flow, or None with a warning when the entry cannot be trusted."""
        try:
            flow = numpy.load(entry, allow_pickle=False)
        except (OSError, ValueError, EOFError) as exc:
            problem = f"unreadable ({exc})"
        else:
            frames, height, width = expected if expected is not None else (len(flow) + 1,) + flow.shape[1:3]
            shape = (max(frames - 1, 1), height, width, 2)
            if flow.dtype == numpy.uint8 and flow.shape == shape:
                return flow
            problem = f"{flow.dtype} {flow.shape} where uint8 {shape} was expected"
        warnings.warn(f"flow cache entry {entry} is {problem}; computing the flow again", RuntimeWarning,
                      stacklevel=3)
        return None

    def _write(self, entry, flow):
        os.makedirs(self.root, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=self.root, suffix=".tmp")
        try:
            with os.fdopen(handle, "wb") as f:
                numpy.save(f, flow, allow_pickle=False)
            os.replace(temporary, entry)
        except BaseException:
            if os.path.exists(temporary):
                os.remove(temporary)
            raise

    def get(self, path, decode, expected=None):
        """The flow of video ``path`` (see the class docstring)."""
        entry = self.entry(path)
        if os.path.exists(entry):
            flow = self._read(entry, expected)
            if flow is not None:
                return flow
        flow = video_flow(decode(), self.settings)
        try:
            self._write(entry, flow)
        except OSError as exc:
            warnings.warn(f"cannot write the flow cache {self.root} ({exc.strerror or exc}); the flow is "
                          "computed again next time", RuntimeWarning, stacklevel=2)
        return flow
