"""video.data.datasets: list files, clips from real videos, frame features, and every bad-input rule."""
import warnings

import numpy
import pytest

pytest.importorskip("av")
pytest.importorskip("cv2")

from framework.io import DataLoader, SequenceCollator  # noqa: E402
from framework.registry import DATASETS  # noqa: E402
from video.data.datasets import (ClipLoader, FrameFeatureDataset, VideoDataset, read_class_names,  # noqa: E402
                                 read_list_file)
from video.data.decode import VideoDecodeError  # noqa: E402
from video.data.features import FeatureFileError, save_features  # noqa: E402

from .helpers import frame_numbers, make_video  # noqa: E402

TEST_SAMPLER = {"type": "SegmentSampler", "num_segments": 4, "mode": "test"}
TRAIN_PIPELINE = [{"type": "RandomCrop", "size": 24}, {"type": "RandomHorizontalFlip"}, {"type": "Normalize"},
                  {"type": "FormatClips"}]


@pytest.fixture
def folder(tmp_path):
    (tmp_path / "videos").mkdir()
    make_video(tmp_path / "videos" / "a.mp4", num=20)
    make_video(tmp_path / "videos" / "b.webm", num=16)
    make_video(tmp_path / "videos" / "clip with spaces", num=12)  # a JPEG frame folder
    make_video(tmp_path / "videos" / "short.avi", num=3)
    (tmp_path / "videos" / "corrupt.mp4").write_bytes(b"\x00not a video" * 50)
    (tmp_path / "classes.txt").write_text("walk\nrun\njump\n")
    return tmp_path


def write_list(path, lines):
    path.write_text("".join(line + "\n" for line in lines))
    return str(path)


def test_list_files_with_names_ids_spaces_and_comments(folder):
    names = read_class_names(folder / "classes.txt")
    path = write_list(folder / "list.txt", ["# header", "videos/a.mp4 2", "", "videos/clip with spaces jump",
                                            "videos/b.webm run"])
    entries = read_list_file(path, class_names=names)
    assert [(e.path, e.labels, e.line) for e in entries] == [
        ("videos/a.mp4", [2], 2), ("videos/clip with spaces", [2], 4), ("videos/b.webm", [1], 5)]
    multi = read_list_file(write_list(folder / "multi.txt", ["videos/a.mp4 0,jump", "videos/b.webm 1"]),
                           multi_label=True, class_names=names)
    assert [e.labels for e in multi] == [[0, 2], [1]]


@pytest.mark.parametrize("line, message", [
    ("videos/a.mp4", "list.txt:2: expected 'path label'"),
    ("videos/a.mp4 3", r"list.txt:2: label 3 is out of range \[0, 3\)"),
    ("videos/a.mp4 fly", "list.txt:2: label 'fly' is neither a class id nor a class name"),
    ("videos/a.mp4 0,1", "list.txt:2: several labels"),
])
def test_list_file_errors_name_the_file_and_line(folder, line, message):
    path = write_list(folder / "list.txt", ["videos/b.webm 1", line])
    with pytest.raises(ValueError, match=message):
        VideoDataset(path, TEST_SAMPLER, class_names=str(folder / "classes.txt"))


def test_missing_list_and_class_files(folder):
    with pytest.raises(FileNotFoundError, match="list file not found: .*nope.txt"):
        VideoDataset(str(folder / "nope.txt"), TEST_SAMPLER)
    path = write_list(folder / "list.txt", ["videos/a.mp4 0"])
    with pytest.raises(FileNotFoundError, match="class-names file not found"):
        VideoDataset(path, TEST_SAMPLER, class_names=str(folder / "none.txt"))
    with pytest.raises(ValueError, match="multi-label list needs"):
        VideoDataset(path, TEST_SAMPLER, multi_label=True)


def test_samples_hold_the_sampled_frames(folder):
    path = write_list(folder / "list.txt", ["videos/a.mp4 0", "videos/clip with spaces 1", "videos/b.webm 2"])
    data = VideoDataset(path, TEST_SAMPLER, class_names=str(folder / "classes.txt"))
    sample = data[0]
    assert sample["path"] == "videos/a.mp4" and sample["label"] == 0 and sample["label"].dtype == numpy.int64
    assert frame_numbers(sample["imgs"]) == [2, 7, 12, 17]  # 4 segments of 5 frames, centres
    assert frame_numbers(data[1]["imgs"]) == [1, 4, 7, 10]  # the JPEG folder, 4 segments of 3 frames
    assert sample["frame_inds"].tolist() == [[2, 7, 12, 17]] and sample["clip_len"] == 4
    clips = VideoDataset(path, TEST_SAMPLER, TRAIN_PIPELINE, class_names=str(folder / "classes.txt"))[2]["imgs"]
    assert clips.shape == (1, 4, 3, 24, 24) and clips.dtype == numpy.float32


def test_transforms_see_the_label_and_may_move_it(folder):
    path = write_list(folder / "list.txt", ["videos/a.mp4 0", "videos/b.webm 2"])
    reverse = [{"type": "RandomTimeReverse", "p": 1.0, "label_map": [1, 0, 2]}]
    data = VideoDataset(path, TEST_SAMPLER, reverse, class_names=str(folder / "classes.txt"))
    assert frame_numbers(data[0]["imgs"]) == [17, 12, 7, 2] and data[0]["label"] == 1 and data[1]["label"] == 2


def test_short_videos_loop(folder):
    path = write_list(folder / "list.txt", ["videos/short.avi 0"])
    sample = VideoDataset(path, {"type": "ClipSampler", "clip_len": 5, "frame_interval": 1, "mode": "test"})[0]
    assert frame_numbers(sample["imgs"]) == [0, 1, 2, 0, 1]


def test_multi_label_samples_are_multi_hot(folder):
    path = write_list(folder / "list.txt", ["videos/a.mp4 0,2"])
    sample = VideoDataset(path, TEST_SAMPLER, class_names=str(folder / "classes.txt"), multi_label=True)[0]
    assert sample["label"].tolist() == [1.0, 0.0, 1.0] and sample["label"].dtype == numpy.float32


def test_missing_videos_are_skipped_or_raise(folder):
    path = write_list(folder / "list.txt", ["videos/a.mp4 0", "videos/gone.mp4 1", "videos/b.webm 2"])
    with pytest.warns(RuntimeWarning, match=r"1 listed file\(s\) not found \(line 2: .*gone.mp4\)"):
        data = VideoDataset(path, TEST_SAMPLER)
    assert [e.path for e in data.entries] == ["videos/a.mp4", "videos/b.webm"]
    with pytest.raises(FileNotFoundError, match="line 2: .*gone.mp4"):
        VideoDataset(path, TEST_SAMPLER, on_error="raise")


def test_unreadable_videos_are_skipped_with_a_warning_or_raise(folder):
    path = write_list(folder / "list.txt", ["videos/a.mp4 0", "videos/corrupt.mp4 1", "videos/b.webm 2"])
    data = VideoDataset(path, TEST_SAMPLER)
    with pytest.warns(RuntimeWarning, match="list.txt:2: cannot read .*corrupt.mp4"):
        sample = data[1]
    assert sample["path"] == "videos/b.webm" and sample["label"] == 2
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # remembered: no second attempt, no second warning
        assert data[1]["path"] == "videos/b.webm"
    with pytest.raises(VideoDecodeError, match="list.txt:2: cannot read .*corrupt.mp4"):
        VideoDataset(path, TEST_SAMPLER, on_error="raise")[1]


def test_a_list_of_only_bad_videos_fails_instead_of_hanging(folder):
    path = write_list(folder / "list.txt", ["videos/corrupt.mp4 0"] * 3)
    data = VideoDataset(path, TEST_SAMPLER, max_skips=5)
    with pytest.warns(RuntimeWarning), pytest.raises(VideoDecodeError, match="no readable item among 6"):
        data[0]
    with pytest.raises(VideoDecodeError, match="no readable item .*corrupt.mp4"):  # remembered: fails at once
        data[1]
    loader = DataLoader(VideoDataset(path, TEST_SAMPLER), batch_size=2, num_workers=2, timeout=60)
    with pytest.warns(RuntimeWarning), pytest.raises(Exception, match="no readable item"):
        list(loader)


def test_batches_do_not_depend_on_the_workers(folder):
    path = write_list(folder / "list.txt", ["videos/a.mp4 0", "videos/b.webm 1", "videos/clip with spaces 2",
                                            "videos/short.avi 0"] * 2)
    data = DATASETS.build({"type": "VideoDataset", "list_file": path, "transforms": TRAIN_PIPELINE,
                           "sampler": {"type": "SegmentSampler", "num_segments": 3, "mode": "train"}})
    runs = []
    for workers, kind in ((0, "thread"), (2, "thread"), (2, "process")):
        loader = DataLoader(data, batch_size=3, shuffle=True, num_workers=workers, worker_type=kind, seed=3)
        runs.append([batch["imgs"] for batch in loader])
    for other in runs[1:]:
        for a, b in zip(runs[0], other):
            numpy.testing.assert_array_equal(a, b)
    assert runs[0][0].shape == (3, 1, 3, 3, 24, 24)


def test_clip_loader_predicts_on_one_file(folder):
    loader = ClipLoader({"type": "ClipSampler", "clip_len": 4, "frame_interval": 2, "mode": "test", "num_views": 2},
                        [{"type": "CenterCrop", "size": 16}, {"type": "FormatClips", "layout": "NCTHW"}])
    sample = loader(str(folder / "videos" / "a.mp4"))
    assert sample["imgs"].shape == (2, 3, 4, 16, 16) and sample["num_frames"] == 20
    assert sample["frame_inds"].tolist() == [[3, 5, 7, 9], [9, 11, 13, 15]]


@pytest.fixture
def features(tmp_path):
    rng = numpy.random.default_rng(0)
    for name, frames in (("v0", 10), ("v1", 6)):
        save_features(tmp_path / "rgb" / f"{name}.npy", rng.normal(size=(frames, 8)).astype(numpy.float32))
        save_features(tmp_path / "audio" / f"{name}.npy", rng.integers(0, 256, (frames, 4)).astype(numpy.uint8))
    save_features(tmp_path / "rgb" / "v2.npy", numpy.zeros((5, 8), numpy.float32))
    save_features(tmp_path / "audio" / "v2.npy", numpy.zeros((4, 4), numpy.uint8))
    (tmp_path / "train.txt").write_text("v0 0,3\nv1 2\n")
    return tmp_path


def test_frame_features_with_two_modalities(features):
    data = FrameFeatureDataset(str(features / "train.txt"), modalities=["rgb", "audio"], num_classes=4)
    sample = data[0]
    assert sample["rgb"].shape == (10, 8) and sample["audio"].shape == (10, 4)
    assert sample["audio"].dtype == numpy.float32 and -2 <= sample["audio"].min() and sample["audio"].max() <= 2
    raw = numpy.load(features / "audio" / "v0.npy").astype(numpy.float64)
    numpy.testing.assert_allclose(sample["audio"], raw * 4 / 255 - 2 + 4 / 512, atol=1e-6)
    assert sample["label"].tolist() == [1, 0, 0, 1]
    batch = SequenceCollator(["rgb", "audio"])([data[0], data[1]])
    assert batch["rgb"].shape == (2, 10, 8) and batch["rgb_lengths"].tolist() == [10, 6]


def test_frame_features_sampling(features):
    test = FrameFeatureDataset(str(features / "train.txt"), num_classes=4, num_frames=4, mode="test")
    full = numpy.load(features / "rgb" / "v0.npy")
    numpy.testing.assert_array_equal(test[0]["rgb"], full[[1, 3, 6, 8]])
    train = FrameFeatureDataset(str(features / "train.txt"), num_classes=4, num_frames=4, mode="train",
                                max_frames=8)
    drawn = train[0]["rgb"]
    rows = [int(numpy.flatnonzero((full == row).all(axis=1))[0]) for row in drawn]
    assert rows == sorted(rows) and len(set(rows)) == 4 and max(rows) < 8


def test_frame_feature_transforms(features):
    reverse = [{"type": "RandomTimeReverse", "p": 1.0, "keys": ["rgb"], "label_map": [1, 0]}]
    sample = FrameFeatureDataset(str(features / "train.txt"), num_classes=4, transforms=reverse)[0]
    numpy.testing.assert_array_equal(sample["rgb"], numpy.load(features / "rgb" / "v0.npy")[::-1])
    assert sample["label"].tolist() == [0, 1, 0, 1] and sample["path"] == "v0"  # labels 0,3 -> 1,3


def test_frame_feature_errors(features):
    (features / "bad.txt").write_text("v2 1\nv0 0\n")
    data = FrameFeatureDataset(str(features / "bad.txt"), modalities=["rgb", "audio"], num_classes=4)
    with pytest.warns(RuntimeWarning, match="bad.txt:1: .*different numbers of frames"):
        assert data[0]["path"] == "v0"
    with pytest.raises(FeatureFileError, match="bad.txt:1"):
        FrameFeatureDataset(str(features / "bad.txt"), modalities=["rgb", "audio"], num_classes=4,
                            on_error="raise")[0]
    (features / "missing.txt").write_text("v0 0\nv9 1\n")
    with pytest.raises(FileNotFoundError, match=r"line 2: .*rgb/v9.npy"):
        FrameFeatureDataset(str(features / "missing.txt"), num_classes=4, on_error="raise")
    (features / "rgb" / "v1.npy").write_bytes(b"garbage")
    with pytest.raises(FeatureFileError, match="v1.npy"):
        FrameFeatureDataset(str(features / "train.txt"), num_classes=4, on_error="raise")[1]
