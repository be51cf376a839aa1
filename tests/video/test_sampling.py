"""video.data.sampling: exact indices of every sampler, train and test, long and short videos."""
import numpy
import pytest

from framework.io import DataLoader
from framework.io.dataset import Dataset
from video.data.sampling import (ClipSampler, SegmentSampler, clip_indices, random_indices, segment_indices,
                                 uniform_indices)


class _Rng:
    """A stand-in generator whose ``integers(low, high, size)`` returns chosen values (checked to be in range)."""

    def __init__(self, values):
        self.values = numpy.asarray(values)

    def integers(self, low, high, size=None):
        assert ((low <= self.values) & (self.values < high)).all(), (low, high, self.values)
        return self.values.reshape(size)


def test_segment_test_mode_takes_the_centre_of_each_segment():
    # 30 frames, 3 segments of 10: centre offset (10 - 1) // 2 = 4
    numpy.testing.assert_array_equal(segment_indices(30, 3), [[4, 14, 24]])
    # PaddleVideo rule: (d - seglen) // 2 with d = 31 // 3 = 10, seglen 5 -> offset 2
    numpy.testing.assert_array_equal(segment_indices(31, 3, seglen=5),
                                     [[2, 3, 4, 5, 6, 12, 13, 14, 15, 16, 22, 23, 24, 25, 26]])


def test_segment_test_views_spread_over_the_segment():
    # room d - seglen = 10 - 5 = 5: views at 5 * (2v + 1) // 6 = 0, 2, 4
    views = segment_indices(30, 3, seglen=5, num_views=3)
    assert views.shape == (3, 15)
    numpy.testing.assert_array_equal(views[:, ::5], [[0, 10, 20], [2, 12, 22], [4, 14, 24]])


def test_segment_train_mode_uses_one_offset_per_segment():
    indices = segment_indices(30, 3, seglen=2, mode="train", rng=_Rng([[0, 8, 3]]))
    numpy.testing.assert_array_equal(indices, [[0, 1, 18, 19, 23, 24]])
    with pytest.raises(AssertionError):  # offsets must stay inside 0 .. d - seglen
        segment_indices(30, 3, seglen=2, mode="train", rng=_Rng([[0, 9, 3]]))
    rng = numpy.random.default_rng(0)
    for _ in range(50):
        drawn = segment_indices(100, 8, mode="train", rng=rng)[0]
        assert ((drawn // 12) == numpy.arange(8)).all() and (drawn < 96).all()


def test_short_videos_follow_the_paddle_rules_and_loop_or_pad():
    # 4 frames, 3 segments: d = 1 < seglen 2 -> starts at i * d
    numpy.testing.assert_array_equal(segment_indices(4, 3, seglen=2), [[0, 1, 1, 2, 2, 3]])
    # 2 frames, 3 segments: d = 0 -> segment i starts at frame i, indices wrap (loop)
    numpy.testing.assert_array_equal(segment_indices(2, 3, seglen=2), [[0, 1, 1, 0, 0, 1]])
    numpy.testing.assert_array_equal(segment_indices(2, 3, seglen=2, short="pad"), [[0, 1, 1, 1, 1, 1]])


def test_dense_clips_for_nonlocal():
    # 8 frames at interval 8 span 64 frames; 100 frames leave starts 0..36
    numpy.testing.assert_array_equal(clip_indices(100, 8, 8), [[18 + 8 * k for k in range(8)]])
    views = clip_indices(100, 8, 8, num_views=3)  # starts 36 * (2v + 1) // 6 = 6, 18, 30
    numpy.testing.assert_array_equal(views[:, 0], [6, 18, 30])
    numpy.testing.assert_array_equal(views[2], [30 + 8 * k for k in range(8)])
    numpy.testing.assert_array_equal(clip_indices(100, 8, 8, mode="train", rng=_Rng([36])), [[36 + 8 * k for k in range(8)]])
    with pytest.raises(AssertionError):
        clip_indices(100, 8, 8, mode="train", rng=_Rng([37]))
    # 20 frames for a 64-frame span: start 0, then loop or pad
    numpy.testing.assert_array_equal(clip_indices(20, 8, 8), [[0, 8, 16, 4, 12, 0, 8, 16]])
    numpy.testing.assert_array_equal(clip_indices(20, 8, 8, short="pad"), [[0, 8, 16, 19, 19, 19, 19, 19]])


def test_feature_frame_choices():
    numpy.testing.assert_array_equal(uniform_indices(10, 4), [[1, 3, 6, 8]])
    numpy.testing.assert_array_equal(uniform_indices(3, 6), [[0, 0, 1, 1, 2, 2]])
    drawn = random_indices(50, 10, numpy.random.default_rng(0))[0]
    assert len(set(drawn.tolist())) == 10 and (numpy.diff(drawn) > 0).all()
    few = random_indices(3, 6, numpy.random.default_rng(0))[0]
    assert sorted(set(few.tolist())) == [0, 1, 2] and len(few) == 6 and (numpy.diff(few) >= 0).all()


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match="no frames"):
        segment_indices(0, 3)
    with pytest.raises(ValueError, match="rng"):
        segment_indices(30, 3, mode="train")
    with pytest.raises(ValueError, match="num_views"):
        clip_indices(30, 4, mode="train", rng=numpy.random.default_rng(0), num_views=2)
    with pytest.raises(ValueError, match="mode"):
        SegmentSampler(mode="val")
    with pytest.raises(ValueError, match="short"):
        ClipSampler(short="repeat")
    with pytest.raises(KeyError, match="num_frames"):
        SegmentSampler(mode="test")({})


def test_samplers_write_frame_inds_and_clip_len():
    sample = SegmentSampler(num_segments=3, seglen=2, mode="test", num_views=2)({"num_frames": 30, "x": 1})
    assert sample["x"] == 1 and sample["clip_len"] == 6 and sample["frame_inds"].shape == (2, 6)
    sample = ClipSampler(clip_len=4, frame_interval=2, mode="test")({"num_frames": 30})
    numpy.testing.assert_array_equal(sample["frame_inds"], [[11, 13, 15, 17]])


class _Drawn(Dataset):
    """Sample i: the train-mode segment indices drawn for a 300-frame video."""

    def __init__(self):
        self.sampler = SegmentSampler(num_segments=4, mode="train")

    def __len__(self):
        return 12

    def __getitem__(self, index):
        return {"inds": self.sampler({"num_frames": 300})["frame_inds"][0]}


def test_training_draws_do_not_depend_on_the_workers():
    runs = []
    for workers, kind in ((0, "thread"), (3, "thread"), (2, "process")):
        loader = DataLoader(_Drawn(), batch_size=4, shuffle=True, num_workers=workers, worker_type=kind, seed=5)
        runs.append(numpy.concatenate([batch["inds"] for batch in loader]))
    numpy.testing.assert_array_equal(runs[0], runs[1])
    numpy.testing.assert_array_equal(runs[0], runs[2])
    assert len({tuple(row) for row in runs[0]}) > 1
