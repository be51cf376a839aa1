"""Writing videos: uint8 RGB frames to an encoded file (PyAV) or to a folder of JPEG frames (OpenCV).

The codec follows the file extension: ``.mp4``/``.mkv`` H.264 (libx264),
``.webm`` VP9 (libvpx-vp9), ``.avi`` MPEG-4 part 2. Frames are stored as
yuv420p, so width and height must be even. Files are written under a
temporary name in the same folder and renamed when complete, so an interrupted
write never leaves a truncated video behind.
"""
import fractions
import os

import numpy

from framework.serialization import atomic_path

from vision.data.transforms import require_cv2

from .decode import require_av

__all__ = ["CODECS", "write_video", "write_frame_folder"]

CODECS = {".mp4": "libx264", ".mkv": "libx264", ".webm": "libvpx-vp9", ".avi": "mpeg4"}


def _check_frames(frames, who):
    frames = numpy.asarray(frames)
    if frames.ndim != 4 or frames.shape[-1] != 3 or frames.dtype != numpy.uint8 or not len(frames):
        raise ValueError(f"{who}: frames must be uint8 RGB of shape (T, H, W, 3) with T >= 1, got "
                         f"{frames.dtype} {frames.shape}")
    return frames


def write_video(path, frames, fps, codec=None, gop_size=12, crf=23, threads=1):
    """Encode ``frames`` (T, H, W, 3) uint8 RGB at ``fps`` frames per second into ``path``.

    ``codec`` defaults to the extension's (see :data:`CODECS`); ``gop_size`` is
    the distance between keyframes; ``crf`` the quality of the H.264/VP9
    encoders (lower is better; ignored by MPEG-4, which uses a fixed quantiser);
    ``threads`` the encoder threads. With one thread the output is the same
bytes for the same frames (H.264 is written without x264's macroblock-tree
rate control, whose output varies from run to run). Returns ``path``.
    """
    av = require_av()
    path = os.fspath(path)
    frames = _check_frames(frames, "write_video")
    extension = os.path.splitext(path)[1].lower()
    codec = codec or CODECS.get(extension)
    if codec is None:
        raise ValueError(f"write_video: no default codec for {path!r}; use one of {sorted(CODECS)} or pass codec")
    height, width = frames.shape[1:3]
    if height % 2 or width % 2:
        raise ValueError(f"write_video: {path}: width and height must be even for yuv420p, got {width}x{height}")
    options = {"mpeg4": {"qscale": "3"}, "libvpx-vp9": {"crf": str(crf), "b": "0"},
               "libx264": {"crf": str(crf), "x264-params": "mbtree=0"}}.get(codec, {})
    with atomic_path(path, durable=False) as temporary:     # no fsync: generators write thousands of clips
        with av.open(temporary, "w", format=extension.lstrip(".") if extension != ".mkv" else "matroska") as out:
            rate = fractions.Fraction(fps).limit_denominator(1001)
            stream = out.add_stream(codec, rate=rate)
            stream.width, stream.height, stream.pix_fmt = width, height, "yuv420p"
            stream.codec_context.gop_size = int(gop_size)
            stream.codec_context.thread_count = int(threads)
            stream.options = options
            for number, frame in enumerate(frames):
                picture = av.VideoFrame.from_ndarray(frame, format="rgb24")
                picture.pts, picture.time_base = number, 1 / rate
                out.mux(stream.encode(picture))
            out.mux(stream.encode())
    return path


def write_frame_folder(folder, frames, quality=95, pattern="img_{:05d}.jpg"):
    """Write ``frames`` (T, H, W, 3) uint8 RGB as JPEG files ``folder/img_00001.jpg`` … (1-based). Returns ``folder``."""
    cv2 = require_cv2()
    frames = _check_frames(frames, "write_frame_folder")
    folder = os.fspath(folder)
    os.makedirs(folder, exist_ok=True)
    for i, frame in enumerate(frames, start=1):
        name = os.path.join(folder, pattern.format(i))
        if not cv2.imwrite(name, cv2.cvtColor(frame, cv2.COLOR_RGB2BGR), [cv2.IMWRITE_JPEG_QUALITY, int(quality)]):
            raise OSError(f"write_frame_folder: cannot write {name}")
    return folder
