"""Own-data list files and class-names files: every mistake is a UserError of one type per kind, naming the file
(and line): VideoListError for what a file says, ListFileNotFoundError for a file that is not there."""
import pytest

pytest.importorskip("av")
pytest.importorskip("cv2")

from framework.config import ConfigError  # noqa: E402
from framework.errors import UserError  # noqa: E402
from video.data.datasets import (FrameFeatureDataset, ListFileNotFoundError, VideoDataset,  # noqa: E402
                                 VideoListError, read_class_names, read_list_file)

from .helpers import make_video  # noqa: E402

SAMPLER = {"type": "SegmentSampler", "num_segments": 2, "mode": "test"}


@pytest.fixture
def own(tmp_path):
    make_video(tmp_path / "a.mp4", num=8)
    (tmp_path / "classes.txt").write_text("walk\nrun\n")
    return tmp_path


def _list(path, text):
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    return str(path)


@pytest.mark.parametrize("text, message", [
    ("a.mp4 walk\na.mp4 swim\n", r"list.txt:2: label 'swim' is neither a class id nor a class name \(walk, run\)"),
    ("a.mp4 walk\n\n# note\na.mp4 5\n", r"list.txt:4: label 5 is out of range \[0, 2\)"),
    ("a.mp4 -1\n", r"list.txt:1: label -1 is out of range"),
    ("a.mp4\n", "list.txt:1: expected 'path label', got 'a.mp4'"),
    ("a.mp4 walk,run\n", "list.txt:1: several labels 'walk,run' in a single-label list"),
    ("# only a comment\n\n", "list.txt: the list file has no entries"),
    (b"a.mp4 walk\na\xff.mp4 run\n", r"list.txt:2: the list file is not UTF-8 text \(byte offset 12\)"),
])
def test_what_a_list_file_says_wrong_is_a_video_list_error(own, text, message):
    path = _list(own / "list.txt", text)
    with pytest.raises(VideoListError, match=message) as caught:
        VideoDataset(path, SAMPLER, class_names=str(own / "classes.txt"))
    assert isinstance(caught.value, UserError) and isinstance(caught.value, ValueError)
    assert str(own / "list.txt") in str(caught.value)


def test_multi_label_lines_are_checked_per_label(own):
    path = _list(own / "multi.txt", "a.mp4 0,1\na.mp4 1,\na.mp4 0,jump\n")
    with pytest.raises(VideoListError, match="multi.txt:3: label 'jump'"):
        read_list_file(path, multi_label=True, class_names=read_class_names(own / "classes.txt"))
    with pytest.raises(VideoListError, match="multi.txt:1: no label"):
        read_list_file(_list(own / "multi.txt", "a.mp4 ,\n"), multi_label=True, num_classes=2)


@pytest.mark.parametrize("text, message", [("walk\nrun\nwalk\n", r"class names repeat: \['walk'\]"),
                                           ("\n \n", "no class names"),
                                           (b"walk\n\xc0run\n", r"names.txt:2: the class-names file is not UTF-8")])
def test_a_bad_class_names_file_is_a_video_list_error(own, text, message):
    names = _list(own / "names.txt", text)
    with pytest.raises(VideoListError, match=message):
        VideoDataset(_list(own / "list.txt", "a.mp4 0\n"), SAMPLER, class_names=names)


def test_missing_files_are_list_file_not_found_errors(own):
    listed = _list(own / "list.txt", "a.mp4 walk\ngone.mp4 run\n")
    cases = [(lambda: VideoDataset(str(own / "nope.txt"), SAMPLER), "list file not found: .*nope.txt"),
             (lambda: read_class_names(own / "none.txt"), "class-names file not found: .*none.txt"),
             (lambda: read_list_file(own), "list file .* is a folder, not a file"),
             (lambda: VideoDataset(listed, SAMPLER, class_names=str(own / "classes.txt"), on_error="raise"),
              r"list.txt: 1 listed file\(s\) not found \(line 2: .*gone.mp4\)"),
             (lambda: FrameFeatureDataset(_list(own / "f.txt", "v 0\n"), num_classes=2),
              r"no entries are left")]
    for build, message in cases:
        with pytest.raises(ListFileNotFoundError, match=message) as caught:
            build()
        assert isinstance(caught.value, VideoListError) and isinstance(caught.value, FileNotFoundError)


def test_options_that_do_not_fit_the_files(own):
    path = _list(own / "list.txt", "a.mp4 0\n")
    with pytest.raises(VideoListError, match="num_classes=3 but .*classes.txt has 2 names"):
        VideoDataset(path, SAMPLER, class_names=str(own / "classes.txt"), num_classes=3)
    with pytest.raises(ConfigError, match="on_error must be one of"):
        VideoDataset(path, SAMPLER, on_error="ignore")
    with pytest.raises(ConfigError, match="a multi-label list needs class_names or num_classes"):
        VideoDataset(path, SAMPLER, multi_label=True)
