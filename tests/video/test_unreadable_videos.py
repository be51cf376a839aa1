"""Every unreadable video ends in one VideoDecodeError (a UserError) naming the file and what is wrong, from the
decoder and from both video tasks' predict, never an av/cv2/OS/IndexError traceback."""
import os

import numpy
import pytest

av = pytest.importorskip("av")
pytest.importorskip("cv2")

import framework  # noqa: E402
import video.models  # noqa: E402,F401  (registers the models)
from framework.errors import InputError, UserError  # noqa: E402
from framework.registry import MODELS  # noqa: E402
from video.data import decode  # noqa: E402
from video.data.decode import VideoDecodeError, VideoNotFoundError, VideoReader  # noqa: E402
from video.models.attention_lstm import AttentionLSTM  # noqa: E402
from video.tasks import FeatureRecognition, VideoRecognition  # noqa: E402

from .helpers import UNREADABLE, make_video, write_unreadable_videos  # noqa: E402

PIPELINE = dict(sampler={"type": "SegmentSampler", "num_segments": 3, "mode": "test"},
                transforms=[{"type": "Resize", "short_side": 16}, {"type": "CenterCrop", "size": 16},
                            {"type": "Normalize"}, {"type": "FormatClips"}])


@pytest.fixture(scope="module")
def unreadable(tmp_path_factory):
    return write_unreadable_videos(tmp_path_factory.mktemp("unreadable"))


@pytest.fixture(scope="module")
def tasks():
    framework.seed(0)
    frame_model = MODELS.build({"type": "TSN", "num_classes": 3, "depth": 18, "base_channels": 4, "num_segments": 3})
    feature_model = AttentionLSTM([8], 4, 4, [8], 3, dropout=0.0)
    return {"frames": VideoRecognition(frame_model, class_names=["a", "b", "c"], **PIPELINE),
            "features": FeatureRecognition(feature_model, ["a", "b", "c"], ["rgb"],
                                           {"type": "ResNet", "block": "basic", "layers": [1], "base_channels": 8},
                                           frame_size=16, num_frames=3)}


def _read_everything(path):
    with VideoReader(path) as reader:
        return reader.get_frames(numpy.arange(len(reader)))


@pytest.mark.parametrize("name", sorted(UNREADABLE))
def test_the_decoder_names_the_file_and_the_reason(unreadable, name):
    with pytest.raises(VideoDecodeError) as caught:
        _read_everything(unreadable[name])
    message = str(caught.value)
    assert isinstance(caught.value, UserError) and unreadable[name] in message
    assert UNREADABLE[name] in message, message
    assert "\n" not in message and "Errno" not in message


@pytest.mark.parametrize("kind", ["frames", "features"])
@pytest.mark.parametrize("name", sorted(UNREADABLE))
def test_predict_raises_the_same_error(unreadable, tasks, kind, name):
    with pytest.raises(VideoDecodeError, match=UNREADABLE[name]) as caught:
        tasks[kind].predict([unreadable[name]])
    assert unreadable[name] in str(caught.value)


def test_a_missing_video_is_also_a_file_not_found_error(unreadable):
    with pytest.raises(FileNotFoundError, match="video not found: .*missing.mp4") as caught:
        VideoReader(unreadable["missing.mp4"])
    assert isinstance(caught.value, VideoNotFoundError) and isinstance(caught.value, VideoDecodeError)


@pytest.mark.parametrize("error", [av.error.PermissionError(13, "Permission denied", "x"), OSError(5, "I/O error"),
                                   EOFError()])
def test_any_error_from_pyav_or_the_os_becomes_a_decode_error(tmp_path, monkeypatch, error):
    path = make_video(tmp_path / "clip.mp4", num=6)
    with VideoReader(path) as reader:
        assert len(reader) == 6                                  # indexed before the failure below

        def failing(self, wanted):
            raise error

        monkeypatch.setattr(decode._VideoFile, "read", failing)
        with pytest.raises(VideoDecodeError, match=f"cannot decode video {path}: ") as caught:
            reader.get_frames([0])
    assert caught.value.__cause__ is error                       # kept for --debug tracebacks


def test_the_error_of_opening_is_translated_too(tmp_path, monkeypatch):
    path = make_video(tmp_path / "clip.mp4", num=6)

    def refusing(*args, **kwargs):
        raise av.error.PermissionError(13, "Permission denied", path)

    monkeypatch.setattr(av, "open", refusing)
    with pytest.raises(VideoDecodeError, match=f"^cannot open video {path}: Permission denied$"):
        VideoReader(path)


def test_inputs_that_are_not_paths_are_input_errors(tasks):
    for task in tasks.values():
        with pytest.raises(InputError, match="input 1 must be a video path, got int"):
            task.predict([os.devnull, 3])
