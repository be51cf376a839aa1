"""Reading frames of a video: PyAV for video files, OpenCV for folders of pre-extracted JPEG frames.

:class:`VideoReader` gives the number of frames, the frame rate and
``get_frames(indices)`` -> uint8 RGB ``(T, H, W, 3)``, whatever the source.

Video files (mp4/H.264, webm/VP9, avi/MPEG-4, anything FFmpeg reads): the
reader first lists the stream's packets (demuxing only, no decoding), which
gives the exact frame count and every frame's presentation timestamp even when
the container's header states a wrong count or none (webm); the list is cached
per file (path, size and modification time). To read frames it seeks to the
last keyframe at or before the first wanted frame and decodes forward, seeking
again whenever the next wanted frame lies past a further keyframe. When the
timestamps cannot identify frames (missing or repeated timestamps, or decoded
frames whose timestamps are not in the list) the reader counts frames by
decoding the whole stream once (also cached) and then decodes from the start.
The frame rate is the mean rate of the timestamps (frames - 1 over the time from
the first to the last frame), the header's rate when there is a single frame.

Frame folders: the ``.jpg``/``.jpeg`` files of the folder in natural order
(``img_2`` before ``img_10``); their rate is the ``fps`` argument.

Every way a video can be unreadable ends in one :class:`VideoDecodeError`
(a :class:`~framework.errors.UserError`) whose message names the file and what
is wrong: :class:`VideoReader` runs each of its steps inside one translator
(:func:`_reading`) that turns what PyAV, FFmpeg or the OS raise into it. A
missing path raises :class:`VideoNotFoundError`, which is both a
VideoDecodeError and a FileNotFoundError.

PyAV (``av``) and OpenCV (``cv2``) are the ``video`` extra; each is imported
when first needed, with an error saying how to install it.
"""
import collections
import contextlib
import os
import re
import threading

import numpy

from vision.data.folder import ImageDataError, read_image
from framework.errors import UserError

__all__ = ["VideoReader", "VideoDecodeError", "VideoNotFoundError", "require_av", "FRAME_EXTENSIONS"]

FRAME_EXTENSIONS = (".jpg", ".jpeg")
_CACHE_SIZE = 4096
_index_cache = collections.OrderedDict()
_cache_lock = threading.Lock()


class VideoDecodeError(UserError, ValueError):
    """A video cannot be opened or decoded (empty, truncated, corrupt, no video stream, no frames); the
    message names the file and what is wrong."""


class VideoNotFoundError(VideoDecodeError, FileNotFoundError):
    """A video path that does not exist."""


def require_av():
    """The PyAV module (``av``), or an ImportError that says how to install it."""
    try:
        import av
    except ImportError:
        raise ImportError("decoding video files needs PyAV: pip install av (or pip install 'oar[video]')") from None
    return av


def _source_errors():
    """What reading a video may raise that is the file's fault, not the program's: PyAV's FFmpeg errors, OS
    errors (permissions, a file removed meanwhile), an early end, undecodable metadata, unreadable JPEGs."""
    errors = (OSError, EOFError, UnicodeDecodeError, ImageDataError)
    try:
        import av
    except ImportError:
        return errors
    return errors + (av.FFmpegError,)


def _reason(exc):
    """What went wrong, in words, without repeating the file name FFmpeg puts in its messages."""
    text = getattr(exc, "strerror", None) or str(exc) or type(exc).__name__
    if "Invalid data" in text:
        text += " (not a video file FFmpeg can read, or a truncated or corrupt one)"
    elif "End of file" in text or isinstance(exc, EOFError):
        text += " (the file ends early: truncated?)"
    return text


@contextlib.contextmanager
def _reading(path, action):
    """The one translator of decoding errors: inside it, an error of PyAV/FFmpeg or the OS while ``action``
    (``"open"``, ``"decode"``, …) on ``path`` becomes a :class:`VideoDecodeError` naming the file and why."""
    try:
        yield
    except VideoDecodeError:
        raise
    except _source_errors() as exc:
        raise VideoDecodeError(f"cannot {action} video {path}: {_reason(exc)}") from exc


def _natural_key(name):
    """Sort key that orders the digit runs of a file name by value: img_2 < img_10."""
    return [int(part) if part.isdigit() else part.lower() for part in re.split(r"(\d+)", name)]


class _Unindexable(Exception):
    """Decoded frames cannot be matched to the packet timestamps; frames are then counted from the start."""


class _FrameIndex:
    """What a scan of a video file found: presentation timestamps (n,) int64 in frame order, keyframe
    flags (n,) bool, or ``timestamps=None`` when frames can only be located by counting from the start."""

    def __init__(self, count, timestamps=None, keyframes=None):
        self.count, self.timestamps, self.keyframes = count, timestamps, keyframes
        self.keyframe_positions = None if keyframes is None else numpy.flatnonzero(keyframes)


def _cache_key(path):
    stat = os.stat(path)
    return os.path.abspath(path), stat.st_size, stat.st_mtime_ns


def _cached(key):
    with _cache_lock:
        index = _index_cache.get(key)
        if index is not None:
            _index_cache.move_to_end(key)
        return index


def _store(key, index):
    with _cache_lock:
        _index_cache[key] = index
        while len(_index_cache) > _CACHE_SIZE:
            _index_cache.popitem(last=False)


def _rgb_pixels(frame):
    """(H, W, 3) uint8 pixels of a decoded frame, converted on the calling thread: PyAV's default makes a
    slice-thread pool afresh for every frame (3.5x slower at 112 x 112), and a forked loader worker that
    started threads inside the conversion was seen to hang there."""
    return frame.to_ndarray(format="rgb24", threads=1)


class _VideoFile:
    """A video file read with PyAV (see the module docstring)."""

    def __init__(self, path, num_threads):
        self._av = require_av()
        self.path, self.num_threads = path, num_threads
        self._open()
        self._key = _cache_key(path)
        self._index = _cached(self._key)

    def _open(self):
        self.container = self._av.open(self.path, metadata_errors="ignore")
        if not self.container.streams.video:
            kinds = sorted({stream.type for stream in self.container.streams}) or ["none"]
            self.container.close()
            raise VideoDecodeError(f"video {self.path} has no video stream (streams: {', '.join(kinds)})")
        self.stream = self.container.streams.video[0]
        self.stream.codec_context.thread_count = self.num_threads

    def _rewind(self):
        """Back to the first packet: a seek, or reopening the file where the format cannot seek (raw streams)."""
        try:
            self.container.seek(self._start_offset(), stream=self.stream, backward=True, any_frame=False)
        except (self._av.FFmpegError, OSError):
            self.container.close()
            self._open()

    # ---- the frame index ---------------------------------------------------------------------------
    @property
    def index(self):
        if self._index is None:
            self._index = self._scan_packets()
            if self._index.timestamps is None:
                self._index = self._count_by_decoding()
            _store(self._key, self._index)
        return self._index

    def _scan_packets(self):
        timestamps, keyframes = [], []
        self._rewind()
        for packet in self.container.demux(self.stream):
            if packet.size == 0:
                continue
            timestamps.append(packet.pts if packet.pts is not None else packet.dts)
            keyframes.append(packet.is_keyframe)
        if not timestamps:
            raise VideoDecodeError(f"video {self.path} has no video frames")
        if None in timestamps or len(set(timestamps)) != len(timestamps):
            return _FrameIndex(len(timestamps))
        order = numpy.argsort(numpy.asarray(timestamps, dtype=numpy.int64), kind="stable")
        stamps = numpy.asarray(timestamps, dtype=numpy.int64)[order]
        keys = numpy.asarray(keyframes, dtype=bool)[order]
        keys[0] = True  # decoding always starts at the first frame, whatever its flag says
        return _FrameIndex(len(stamps), stamps, keys)

    def _count_by_decoding(self):
        count = 0
        for _ in self._decode_from_start():
            count += 1
        if count == 0:
            raise VideoDecodeError(f"video {self.path} has no decodable video frames")
        return _FrameIndex(count)

    # ---- metadata --------------------------------------------------------------------------------
    def __len__(self):
        return self.index.count

    @property
    def fps(self):
        index = self.index
        if index.timestamps is not None and index.count > 1 and index.timestamps[-1] > index.timestamps[0]:
            span = float((index.timestamps[-1] - index.timestamps[0]) * self.stream.time_base)
            return (index.count - 1) / span
        return float(self.stream.average_rate or self.stream.guessed_rate or 0.0)

    @property
    def size(self):
        return self.stream.codec_context.height, self.stream.codec_context.width

    def metadata(self):
        rate = self.stream.average_rate or self.stream.guessed_rate
        return {"format": self.container.format.name, "codec": self.stream.codec_context.name,
                "pix_fmt": self.stream.codec_context.pix_fmt, "reported_frames": int(self.stream.frames),
                "reported_fps": float(rate) if rate else None}

    # ---- decoding --------------------------------------------------------------------------------
    def _decode_from_start(self):
        self._rewind()
        yield from self._frames()

    def _start_offset(self):
        return self.stream.start_time if self.stream.start_time is not None else 0

    def _frames(self):
        yield from self.container.decode(self.stream)

    def read(self, wanted):
        """{index: (H, W, 3) uint8} for the sorted unique frame indices ``wanted`` (int64 array)."""
        if self.index.timestamps is not None:
            try:
                return self._read_by_timestamp(wanted)
            except _Unindexable:
                self._index = self._count_by_decoding()
                _store(self._key, self._index)
        return self._read_by_counting(wanted)

    def _read_by_timestamp(self, wanted):
        index = self.index
        out, run, position = {}, None, -1
        for target in wanted.tolist():
            key = int(index.keyframe_positions[numpy.searchsorted(index.keyframe_positions, target, "right") - 1])
            if run is None or key > position + 1:
                run = self._run_from(key, target)
            for position, frame in run:
                if position >= target:
                    break
            else:
                break  # the stream ended first
            if position != target:
                break
            out[target] = _rgb_pixels(frame)
        return self._complete(wanted, out)

    def _run_from(self, key, target):
        """(position, frame) pairs decoded from keyframe ``key`` on (from the stream's start if the seek
        lands past ``target``); raises _Unindexable when a frame's timestamp is not in the index."""
        for start in (int(self.index.timestamps[key]), self._start_offset()):
            self.container.seek(start, stream=self.stream, backward=True, any_frame=False)
            first = True
            for frame in self._frames():
                position = self._position(frame)
                if first and position > target:
                    break
                first = False
                yield position, frame
            else:
                return
        raise _Unindexable()

    def _position(self, frame):
        """The index of a decoded frame, found by its timestamp."""
        timestamps = self.index.timestamps
        if frame.pts is None:
            raise _Unindexable()
        position = int(numpy.searchsorted(timestamps, frame.pts))
        if position == len(timestamps) or timestamps[position] != frame.pts:
            raise _Unindexable()
        return position

    def _read_by_counting(self, wanted):
        out, stop = {}, int(wanted[-1])
        wanted_set = set(wanted.tolist())
        for position, frame in enumerate(self._decode_from_start()):
            if position in wanted_set:
                out[position] = _rgb_pixels(frame)
            if position >= stop:
                break
        return self._complete(wanted, out)

    def _complete(self, wanted, out):
        missing = sorted(set(wanted.tolist()) - set(out))
        if missing:
            shown = ", ".join(str(m) for m in missing[:5]) + (" …" if len(missing) > 5 else "")
            raise VideoDecodeError(f"video {self.path}: frames {shown} of {self.index.count} could not be decoded "
                                   "(the file may be truncated or corrupt)")
        return out

    def close(self):
        self.container.close()


class _FrameFolder:
    """A folder of JPEG frames, one file per frame, in natural file-name order."""

    def __init__(self, path, fps):
        self.path = path
        names = [n for n in os.listdir(path) if n.lower().endswith(FRAME_EXTENSIONS) and not n.startswith(".")]
        if not names:
            raise VideoDecodeError(f"{path} is a folder with no {'/'.join(FRAME_EXTENSIONS)} frames (a video is a "
                                   "file, or a folder of JPEG frames)")
        self.files = [os.path.join(path, n) for n in sorted(names, key=_natural_key)]
        self.fps = float(fps)
        self._size = None

    def __len__(self):
        return len(self.files)

    @property
    def size(self):
        if self._size is None:
            self._size = self._read(0).shape[:2]
        return self._size

    def metadata(self):
        return {"format": "jpeg frames", "codec": "mjpeg", "pix_fmt": "rgb24", "reported_frames": len(self.files),
                "reported_fps": None}

    def _read(self, position):
        return read_image(self.files[position])

    def read(self, wanted):
        out = {position: self._read(position) for position in wanted.tolist()}
        sizes = {frame.shape for frame in out.values()}
        if self._size is None:
            self._size = next(iter(sizes))[:2]
        if len(sizes) > 1 or next(iter(sizes))[:2] != tuple(self._size):
            raise VideoDecodeError(f"frame folder {self.path}: frames differ in size ({sorted(sizes)})")
        return out

    def close(self):
        pass


class VideoReader:
    """Frames of one video file or JPEG frame folder as uint8 RGB arrays.

    Args:
        path: a video file (any container/codec FFmpeg reads) or a folder of
            ``.jpg``/``.jpeg`` frames.
        fps: the frame rate of a frame folder (video files carry their own).
        num_threads: decoder threads per reader (1 suits data-loader workers,
            which already decode in parallel).

    ``len(reader)`` is the number of frames, ``reader.fps`` the frame rate,
    ``reader.height``/``reader.width`` the frame size, ``reader.metadata`` a
    dict describing the source. Use it as a context manager (or call
    ``close()``) to release the file. A missing path raises
    :class:`VideoNotFoundError`; anything else that cannot be read (an empty,
    truncated or corrupt file, a file that is no video, one without a video
    stream or without decodable frames, a folder without JPEG frames) raises
    :class:`VideoDecodeError` naming it and the reason, from whichever call
    first meets the problem.
    """

    def __init__(self, path, fps=30.0, num_threads=1):
        self.path = os.fspath(path)
        with _reading(self.path, "open"):
            if os.path.isdir(self.path):
                self._source = _FrameFolder(self.path, fps)
            elif os.path.isfile(self.path):
                if os.path.getsize(self.path) == 0:
                    raise VideoDecodeError(f"video {self.path} is an empty file (0 bytes)")
                self._source = _VideoFile(self.path, num_threads)
            elif os.path.exists(self.path):
                raise VideoDecodeError(f"video {self.path} is neither a file nor a folder of frames")
            else:
                raise VideoNotFoundError(f"video not found: {self.path}")

    def __len__(self):
        with _reading(self.path, "read the frames of"):
            return len(self._source)

    @property
    def fps(self):
        """Frames per second (float)."""
        with _reading(self.path, "read the frame rate of"):
            return self._source.fps

    @property
    def height(self):
        with _reading(self.path, "read the frame size of"):
            return int(self._source.size[0])

    @property
    def width(self):
        with _reading(self.path, "read the frame size of"):
            return int(self._source.size[1])

    @property
    def metadata(self):
        """``{"path", "format", "codec", "pix_fmt", "frames", "fps", "height", "width", "duration",
        "reported_frames", "reported_fps"}``; the ``reported_*`` values are what the container states."""
        frames, fps = len(self), self.fps
        with _reading(self.path, "read the metadata of"):
            described = self._source.metadata()
        return {"path": self.path, **described, "frames": frames, "fps": fps,
                "height": self.height, "width": self.width, "duration": frames / fps if fps else None}

    def get_frames(self, indices):
        """Frames ``indices`` (ints in [0, len), any order, repeats allowed) -> uint8 (T, H, W, 3) RGB."""
        indices = numpy.asarray(indices, dtype=numpy.int64).reshape(-1)
        if indices.size == 0:
            raise ValueError(f"video {self.path}: get_frames needs at least one frame index")
        count = len(self)
        bad = indices[(indices < 0) | (indices >= count)]
        if bad.size:
            raise IndexError(f"video {self.path}: frame index {int(bad[0])} is out of range (it has {count} frames)")
        wanted = numpy.unique(indices)
        with _reading(self.path, "decode"):
            frames = self._source.read(wanted)
        return numpy.stack([frames[i] for i in indices.tolist()])

    def close(self):
        """Release the file."""
        with _reading(self.path, "close"):
            self._source.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __repr__(self):
        return f"VideoReader({self.path!r})"
