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


def write_audio_only(path, seconds=0.5, rate=16000):
    """An .m4a file with one AAC audio stream and no video stream (silence)."""
    import av
    with av.open(str(path), "w") as out:
        stream = out.add_stream("aac", rate=rate)
        samples = 1024
        for i in range(int(seconds * rate) // samples):
            frame = av.AudioFrame.from_ndarray(numpy.zeros((1, samples), numpy.float32), format="fltp", layout="mono")
            frame.sample_rate, frame.pts = rate, i * samples
            for packet in stream.encode(frame):
                out.mux(packet)
        for packet in stream.encode():
            out.mux(packet)
    return str(path)


def write_undecodable(path, num=10, size=32):
    """An mp4 whose index (moov, written first) lists ``num`` H.264 frames whose data are all overwritten:
    the container opens and lists packets, and none of them decodes."""
    import av
    rng = numpy.random.default_rng(0)
    with av.open(str(path), "w", options={"movflags": "faststart"}) as out:
        stream = out.add_stream("libx264", rate=25)
        stream.width, stream.height, stream.pix_fmt = size, size, "yuv420p"
        for _ in range(num):
            image = rng.integers(0, 256, (size, size, 3), dtype=numpy.uint8)
            out.mux(stream.encode(av.VideoFrame.from_ndarray(image, format="rgb24")))
        out.mux(stream.encode())
    data = bytearray(open(path, "rb").read())
    start = data.index(b"mdat") + 4
    data[start:] = b"\xab" * (len(data) - start)
    open(path, "wb").write(bytes(data))
    return str(path)


# name -> what the error message says besides the file name
UNREADABLE = {
    "empty.mp4": "empty file",
    "truncated.mp4": "Invalid data",
    "text.mp4": "not a video file",
    "audio_only.m4a": "no video stream",
    "undecodable.mp4": "cannot decode",
    "no_images": "folder with no .jpg/.jpeg frames",
    "folder.mp4": "folder with no .jpg/.jpeg frames",
    "missing.mp4": "not found",
}


def write_unreadable_videos(folder):
    """One real file (or folder) per way a video can be unreadable, under ``folder``: ``{name: path}`` for the
    names of :data:`UNREADABLE` (``missing.mp4`` is not written)."""
    import os
    folder = str(folder)
    paths = {name: os.path.join(folder, name) for name in UNREADABLE}
    open(paths["empty.mp4"], "wb").close()
    whole = open(make_video(os.path.join(folder, "whole.mp4")), "rb").read()   # index (moov) at the end
    open(paths["truncated.mp4"], "wb").write(whole[:len(whole) // 2])
    with open(paths["text.mp4"], "w", encoding="utf-8") as f:
        f.write("this is a text file, not a video\n" * 20)
    write_audio_only(paths["audio_only.m4a"])
    write_undecodable(paths["undecodable.mp4"])
    os.makedirs(paths["no_images"])
    with open(os.path.join(paths["no_images"], "notes.txt"), "w", encoding="utf-8") as f:
        f.write("no frames here\n")
    os.makedirs(paths["folder.mp4"])                                           # a directory where a file is expected
    return paths
