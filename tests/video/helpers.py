"""Small real videos for the video tests: distinct solid-colour frames, written with PyAV or as JPEG folders."""
import numpy

from video.data.encode import write_frame_folder, write_video

STEP = 12  # red level increase per frame


def coded_frames(num=20, size=32):
    """(num, size, size, 3) uint8: frame i is solid RGB (10 + 12 i, 128, 240 - 12 i), so i reads back from red."""
    i = numpy.arange(num)
    colours = numpy.stack([10 + STEP * i, numpy.full(num, 128), 240 - STEP * i], axis=1).astype(numpy.uint8)
    return numpy.ascontiguousarray(numpy.broadcast_to(colours[:, None, None, :], (num, size, size, 3)))


def frame_numbers(frames):
    """The frame numbers of decoded coded frames (T, H, W, 3): the nearest red level."""
    red = frames[..., 0].reshape(len(frames), -1).mean(axis=1)
    return numpy.round((red - 10) / STEP).astype(int).tolist()


def make_video(path, num=20, size=32, fps=25, gop_size=6):
    """Write coded frames to ``path`` (a video file, or a JPEG folder when ``path`` has no extension)."""
    frames = coded_frames(num, size)
    if "." not in str(path).rsplit("/", 1)[-1]:
        return write_frame_folder(path, frames)
    return write_video(path, frames, fps, gop_size=gop_size)
