"""video.data.decode: real files of every container, written by PyAV here, read back frame-exactly."""
import os
import struct

import numpy
import pytest

pytest.importorskip("av")
pytest.importorskip("cv2")

from video.data import decode  # noqa: E402
from video.data.decode import VideoDecodeError, VideoReader  # noqa: E402
from video.data.encode import write_video  # noqa: E402

from .helpers import coded_frames, frame_numbers, make_video  # noqa: E402

CONTAINERS = {"mp4": "h264", "webm": "vp9", "avi": "mpeg4", "mkv": "h264"}


@pytest.fixture(params=["mp4", "webm", "avi", "mkv", "frames"])
def video(request, tmp_path):
    name = "clip" if request.param == "frames" else f"clip.{request.param}"
    return request.param, make_video(tmp_path / name)


def test_every_container_reads_exact_frames_in_any_order(video):
    kind, path = video
    with VideoReader(path) as reader:
        assert len(reader) == 20
        assert reader.fps == pytest.approx(25.0 if kind != "frames" else 30.0)
        assert (reader.height, reader.width) == (32, 32)
        wanted = [19, 0, 7, 7, 13, 5, 18, 1]
        frames = reader.get_frames(wanted)
        assert frames.dtype == numpy.uint8 and frames.shape == (8, 32, 32, 3)
        assert frame_numbers(frames) == wanted
        expected = coded_frames()[wanted].astype(int)
        assert numpy.abs(frames.astype(int) - expected).max() <= 6  # lossy codecs, RGB order kept
        assert reader.metadata["codec"] == CONTAINERS.get(kind, "mjpeg")


def test_seeking_gives_the_same_pixels_as_decoding_everything(video):
    _, path = video
    with VideoReader(path) as reader:
        everything = reader.get_frames(range(20))
    for index in (3, 11, 19):
        with VideoReader(path) as reader:
            numpy.testing.assert_array_equal(reader.get_frames([index])[0], everything[index])


def test_only_frames_from_the_nearest_keyframe_are_decoded(tmp_path, monkeypatch):
    path = make_video(tmp_path / "clip.mp4", gop_size=5)
    counted = []
    original = decode._VideoFile._frames

    def counting(self):
        for frame in original(self):
            counted.append(frame.pts)
            yield frame

    monkeypatch.setattr(decode._VideoFile, "_frames", counting)
    with VideoReader(path) as reader:
        keyframes = numpy.flatnonzero(reader._source.index.keyframes).tolist()
        assert len(keyframes) >= 3 and keyframes[0] == 0
        counted.clear()
        assert frame_numbers(reader.get_frames([19])) == [19]
        assert len(counted) == 20 - keyframes[-1]  # from the last keyframe to 19
        counted.clear()
        assert frame_numbers(reader.get_frames([1, 19])) == [1, 19]
        assert len(counted) == 2 + 20 - keyframes[-1]  # 0-1, then a second seek


def test_frame_count_when_the_container_states_a_wrong_one(tmp_path):
    path = str(make_video(tmp_path / "clip.avi"))
    data = bytearray(open(path, "rb").read())
    for tag, offset in ((b"avih", 8 + 16), (b"strh", 8 + 32)):  # dwTotalFrames, dwLength
        struct.pack_into("<I", data, data.index(tag) + offset, 1000)
    lying = str(tmp_path / "lying.avi")
    open(lying, "wb").write(data)
    with VideoReader(lying) as reader:
        assert reader.metadata["reported_frames"] == 1000
        assert len(reader) == 20
        assert frame_numbers(reader.get_frames([19])) == [19]
    with VideoReader(make_video(tmp_path / "clip.webm")) as reader:  # webm states no count at all
        assert reader.metadata["reported_frames"] == 0 and len(reader) == 20


def test_streams_without_timestamps_are_counted_by_decoding(tmp_path):
    av = pytest.importorskip("av")
    path = str(tmp_path / "raw.h264")
    with av.open(path, "w", format="h264") as out:
        stream = out.add_stream("libx264", rate=25)
        stream.width, stream.height, stream.pix_fmt = 32, 32, "yuv420p"
        for frame in coded_frames():
            out.mux(stream.encode(av.VideoFrame.from_ndarray(frame, format="rgb24")))
        out.mux(stream.encode())
    with VideoReader(path) as reader:
        assert len(reader) == 20 and reader._source.index.timestamps is None
        assert frame_numbers(reader.get_frames([17, 2, 9])) == [17, 2, 9]


def test_b_frames_are_placed_by_their_timestamps(tmp_path):
    av = pytest.importorskip("av")
    path = str(tmp_path / "bframes.avi")
    with av.open(path, "w") as out:
        stream = out.add_stream("mpeg4", rate=25)
        stream.width, stream.height, stream.pix_fmt = 32, 32, "yuv420p"
        stream.codec_context.gop_size, stream.codec_context.max_b_frames = 6, 2
        for frame in coded_frames():
            out.mux(stream.encode(av.VideoFrame.from_ndarray(frame, format="rgb24")))
        out.mux(stream.encode())
    with VideoReader(path) as reader:
        assert len(reader) == 20
        assert frame_numbers(reader.get_frames([19, 3, 7, 0, 10])) == [19, 3, 7, 0, 10]


def test_the_frame_count_cache_follows_file_changes(tmp_path):
    path = tmp_path / "clip.mp4"
    make_video(path, num=20)
    assert len(VideoReader(path)) == 20
    stat = os.stat(path)
    make_video(path, num=12)
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10 ** 9))
    assert len(VideoReader(path)) == 12


def test_frame_folders_use_natural_order(tmp_path):
    folder = tmp_path / "frames"
    folder.mkdir()
    cv2 = pytest.importorskip("cv2")
    for i, frame in enumerate(coded_frames(12)):  # names img_1 … img_12: a plain sort puts img_10 after img_1
        cv2.imwrite(str(folder / f"img_{i + 1}.jpg"), frame[..., ::-1])
    (folder / "notes.txt").write_text("not a frame")
    with VideoReader(folder, fps=10) as reader:
        assert len(reader) == 12 and reader.fps == 10.0
        assert frame_numbers(reader.get_frames(range(12))) == list(range(12))


def test_bad_inputs_raise_errors_naming_the_file(tmp_path):
    with pytest.raises(FileNotFoundError, match="nothing.mp4"):
        VideoReader(tmp_path / "nothing.mp4")
    (tmp_path / "empty.mp4").write_bytes(b"")
    (tmp_path / "garbage.mp4").write_bytes(b"not a video" * 100)
    whole = open(make_video(tmp_path / "clip.mp4"), "rb").read()
    (tmp_path / "truncated.mp4").write_bytes(whole[:len(whole) // 2])
    for name in ("empty.mp4", "garbage.mp4", "truncated.mp4"):
        with pytest.raises(VideoDecodeError, match=name):
            VideoReader(tmp_path / name).get_frames([0])
    (tmp_path / "no_frames").mkdir()
    with pytest.raises(VideoDecodeError, match="no_frames"):
        VideoReader(tmp_path / "no_frames")
    broken = tmp_path / "broken_frames"
    make_video(broken, num=3)
    (broken / "img_00002.jpg").write_bytes(b"not a jpeg")
    with pytest.raises(VideoDecodeError, match="img_00002.jpg"):
        VideoReader(broken).get_frames([1])
    with VideoReader(tmp_path / "clip.mp4") as reader:
        with pytest.raises(IndexError, match="20 frames"):
            reader.get_frames([20])
        with pytest.raises(IndexError):
            reader.get_frames([-1])


def test_truncated_file_with_index_up_front_fails_on_decoding(tmp_path):
    av = pytest.importorskip("av")
    path = str(tmp_path / "faststart.mp4")
    rng = numpy.random.default_rng(0)
    with av.open(path, "w", options={"movflags": "faststart"}) as out:  # the index (moov) before the data
        stream = out.add_stream("libx264", rate=25)
        stream.width, stream.height, stream.pix_fmt = 64, 64, "yuv420p"
        for _ in range(30):
            image = rng.integers(0, 256, (64, 64, 3), dtype=numpy.uint8)
            out.mux(stream.encode(av.VideoFrame.from_ndarray(image, format="rgb24")))
        out.mux(stream.encode())
    data = open(path, "rb").read()
    cut = str(tmp_path / "cut.mp4")
    open(cut, "wb").write(data[:len(data) // 2])
    with VideoReader(cut) as reader:
        with pytest.raises(VideoDecodeError, match="cut.mp4"):
            reader.get_frames(range(len(reader)))


def test_write_video_checks_its_input(tmp_path):
    with pytest.raises(ValueError, match="even"):
        write_video(tmp_path / "odd.mp4", numpy.zeros((2, 31, 32, 3), numpy.uint8), 25)
    with pytest.raises(ValueError, match="uint8 RGB"):
        write_video(tmp_path / "bad.mp4", numpy.zeros((2, 32, 32), numpy.uint8), 25)
    with pytest.raises(ValueError, match="codec"):
        write_video(tmp_path / "clip.xyz", coded_frames(2), 25)
    assert not [p for p in os.listdir(tmp_path) if p.endswith(".part")]
