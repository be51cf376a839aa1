"""video.data.transforms (with vision's): one crop and one flip per clip, the test views, the clip layout."""
import numpy
import pytest

pytest.importorskip("cv2")

from vision.data.transforms import Compose, Normalize, RandomHorizontalFlip  # noqa: E402
from video.data.transforms import (FormatClips, MultiScaleCrop, RandomCrop, RandomFlip,  # noqa: E402
                                   RandomShortSideScale, RandomTimeReverse, TenCrop, ThreeCrop)


def located(num=4, height=60, width=80):
    """Frames (num, H, W, 3) uint8 whose pixel (t, y, x) holds (y, x, t): every pixel says where it came from."""
    t, y, x = numpy.meshgrid(numpy.arange(num), numpy.arange(height), numpy.arange(width), indexing="ij")
    return numpy.stack([y, x, t], axis=-1).astype(numpy.uint8)


def origin(frames):
    """(top, left) of each frame's crop, and whether it is mirrored; also checks the crop is contiguous."""
    tops, lefts, flips = frames[:, 0, 0, 0], frames[:, 0, :, 1].min(axis=1), frames[:, 0, 0, 1] > frames[:, 0, -1, 1]
    return tops.tolist(), lefts.tolist(), flips.tolist()


def test_random_crop_and_flip_are_the_same_for_every_frame():
    rng = numpy.random.default_rng(0)
    pipeline = Compose([RandomCrop(32), RandomHorizontalFlip()])
    seen = set()
    for _ in range(20):
        out = pipeline({"imgs": located()}, rng=rng)["imgs"]
        assert out.shape == (4, 32, 32, 3)
        tops, lefts, flips = origin(out)
        assert len(set(tops)) == len(set(lefts)) == len(set(flips)) == 1
        assert (out[:, :, :, 2] == numpy.arange(4)[:, None, None]).all()  # frames stay in order
        assert 0 <= tops[0] <= 28 and 0 <= lefts[0] <= 48
        seen.add((tops[0], lefts[0], flips[0]))
    assert len(seen) > 10 and {flip for *_, flip in seen} == {True, False}


def test_multi_scale_crop_uses_the_fixed_offsets_and_scales():
    crop = MultiScaleCrop(size=40, scales=(1.0, 0.875, 0.75, 0.66))
    rng = numpy.random.default_rng(1)
    sides = [60, 52, 45, 40]  # int(60 * s); 39 snaps to the 40-pixel output (within 3 pixels)
    for _ in range(40):
        top, left, h, w = crop.params(60, 80, rng)
        h_index, w_index = sides.index(h), sides.index(w)
        assert abs(h_index - w_index) <= 1
        assert left in [int(i * (80 - w) / 4) for i in range(5)] and top in [int(j * (60 - h) / 4) for j in range(5)]
    out = crop({"imgs": located()}, rng=rng)["imgs"]
    assert out.shape == (4, 40, 40, 3)
    assert (out[:, :, :, 2] == numpy.arange(4)[:, None, None]).all()
    assert (out[0, :, :, :2] == out[3, :, :, :2]).all()  # the same crop on every frame


def test_multi_scale_crop_with_free_offsets_and_a_too_small_image():
    crop = MultiScaleCrop(size=(20, 30), fixed_offsets=False)
    top, left, h, w = crop.params(60, 80, numpy.random.default_rng(0))
    assert 0 <= top <= 60 - h and 0 <= left <= 80 - w
    with pytest.raises(ValueError, match="too small"):  # the 39-pixel side snaps to the 40-pixel output
        MultiScaleCrop(size=40, scales=(1.0,)).params(39, 39, numpy.random.default_rng(0))


def test_short_side_jitter_keeps_the_aspect_ratio():
    scale = RandomShortSideScale(30, 40)
    rng = numpy.random.default_rng(0)
    shorts = set()
    for _ in range(30):
        out = scale({"imgs": located()}, rng=rng)["imgs"]
        short = out.shape[1]
        assert 30 <= short <= 40 and out.shape[2] == int(short * 80 / 60)
        shorts.add(short)
    assert len(shorts) > 3


def test_three_crop_along_the_long_side():
    out = ThreeCrop(size=60)({"imgs": located(2)})["imgs"]  # 60x80 frames: crops at left 0, 10, 20
    assert out.shape == (6, 60, 60, 3)
    tops, lefts, flips = origin(out)
    assert lefts == [0, 0, 10, 10, 20, 20] and tops == [0] * 6 and not any(flips)
    tall = ThreeCrop(size=40)({"imgs": located(1, height=80, width=40)})["imgs"]
    assert origin(tall)[0] == [0, 20, 40]


def test_ten_crop_corners_centre_and_mirrors():
    out = TenCrop(size=(20, 30))({"imgs": located(1)})["imgs"]
    tops, lefts, flips = origin(out)
    assert tops == [0, 0, 40, 40, 20] * 2
    assert lefts == [0, 50, 0, 50, 25] * 2
    assert flips == [False] * 5 + [True] * 5
    numpy.testing.assert_array_equal(out[5], out[0][:, ::-1])


def test_format_clips_stacks_views_and_normalises():
    frames = located(6, 8, 8)
    sample = {"imgs": frames, "clip_len": 3, "label": 4}
    out = Compose([Normalize(mean=(0, 0, 0), std=(1, 1, 1)), FormatClips()])(sample)
    clips = out["imgs"]
    assert clips.shape == (2, 3, 3, 8, 8) and clips.dtype == numpy.float32 and clips.flags.c_contiguous
    assert (clips[1, 2, 2] == 5).all() and (clips[0, 1, 0] == numpy.arange(8)[:, None]).all()
    assert out["label"] == 4
    ncthw = FormatClips("NCTHW")(sample)["imgs"]
    assert ncthw.shape == (2, 3, 3, 8, 8) and (ncthw[1, 2, 2] == 5).all()
    with pytest.raises(ValueError, match="clip_len=4"):
        FormatClips()({"imgs": frames, "clip_len": 4})


def test_multi_crop_then_format_gives_views_crop_major():
    sample = {"imgs": located(4), "clip_len": 2}  # 2 temporal views of 2 frames
    out = Compose([ThreeCrop(size=60), FormatClips()])(sample)["imgs"]
    assert out.shape == (6, 2, 3, 60, 60)
    assert out[:, :, 2, 0, 0].tolist() == [[0, 1], [2, 3]] * 3  # frame numbers per view
    assert out[:, 0, 1, 0, 0].tolist() == [0, 0, 10, 10, 20, 20]  # left edge per view


def test_transform_errors_are_clear():
    with pytest.raises(ValueError, match="smaller than the crop"):
        RandomCrop(100)({"imgs": located()}, rng=numpy.random.default_rng(0))
    with pytest.raises(ValueError, match="clips"):
        ThreeCrop(10)({"img": located()[0]})
    with pytest.raises(ValueError, match="layout"):
        FormatClips("NHWC")
    with pytest.raises(ValueError, match="low <= high"):
        RandomShortSideScale(40, 30)


SWAP_FIRST_TWO = [1, 0, 2]


@pytest.mark.parametrize("direction, mirror", [("horizontal", lambda f: f[:, :, ::-1]),
                                               ("vertical", lambda f: f[:, ::-1]),
                                               ("diagonal", lambda f: f.transpose(0, 2, 1, 3))])
def test_random_flip_mirrors_every_frame_and_moves_the_label(direction, mirror):
    frames = located(height=40, width=40)
    flipped = RandomFlip(direction, p=1.0, label_map=SWAP_FIRST_TWO)({"imgs": frames, "label": numpy.int64(0)})
    numpy.testing.assert_array_equal(flipped["imgs"], mirror(frames))
    assert flipped["label"] == 1 and flipped["label"].dtype == numpy.int64
    kept = RandomFlip(direction, p=0.0, label_map=SWAP_FIRST_TWO)({"imgs": frames, "label": numpy.int64(0)})
    assert kept["imgs"] is frames and kept["label"] == 0
    assert RandomFlip(direction, p=1.0, label_map=SWAP_FIRST_TWO)({"imgs": frames, "label": numpy.int64(2)})[
        "label"] == 2
    assert "label" not in RandomFlip(direction, p=1.0, label_map=SWAP_FIRST_TWO)({"imgs": frames})


def test_random_flip_draws_once_per_clip():
    rng = numpy.random.default_rng(0)
    seen = [origin(RandomFlip(p=0.5)({"imgs": located()}, rng=rng)["imgs"])[2] for _ in range(20)]
    assert all(len(set(flips)) == 1 for flips in seen) and {flips[0] for flips in seen} == {True, False}


def test_time_reverse_reverses_each_view_and_moves_the_label():
    frames = located(num=6)                                   # two views of clip_len 3: frames 0-2, 3-5
    sample = {"imgs": frames, "clip_len": 3, "frame_inds": numpy.array([[0, 4, 8], [2, 6, 10]]),
              "label": numpy.int64(1)}
    out = RandomTimeReverse(p=1.0, label_map=SWAP_FIRST_TWO)(sample)
    assert out["imgs"][:, 0, 0, 2].tolist() == [2, 1, 0, 5, 4, 3]
    assert out["frame_inds"].tolist() == [[8, 4, 0], [10, 6, 2]] and out["label"] == 0
    assert RandomTimeReverse(p=0.0, label_map=SWAP_FIRST_TWO)(sample) is sample


def test_time_reverse_of_features_and_multi_hot_labels():
    features = numpy.arange(12, dtype=numpy.float32).reshape(4, 3)
    label = numpy.array([1.0, 0.0, 0.0, 1.0], dtype=numpy.float32)  # motion 0 of a 3-class map, plus class 3
    out = RandomTimeReverse(p=1.0, label_map=SWAP_FIRST_TWO, keys=["rgb"])({"rgb": features, "label": label})
    numpy.testing.assert_array_equal(out["rgb"], features[::-1])
    assert out["label"].tolist() == [0.0, 1.0, 0.0, 1.0] and label.tolist() == [1.0, 0.0, 0.0, 1.0]


@pytest.mark.parametrize("make, message", [
    (lambda: RandomFlip(label_map=[0, 0, 1]), "label_map must list each of the classes"),
    (lambda: RandomTimeReverse(label_map=[0.5, 1]), "label_map must list each of the classes"),
    (lambda: RandomFlip(direction="sideways"), "direction must be one of"),
    (lambda: RandomFlip(direction="diagonal")({"imgs": located()}), "needs square frames"),
    (lambda: RandomTimeReverse(p=2.0), "p must be in"),
    (lambda: RandomTimeReverse(p=1.0, keys=["rgb"])({"imgs": located()}), "the sample has no"),
    (lambda: RandomFlip(p=1.0, label_map=[1, 0, 2])({"imgs": located(), "label": numpy.zeros(2)}),
     "label_map has 3 classes"),
])
def test_label_moving_transform_errors(make, message):
    with pytest.raises((ValueError, KeyError), match=message):
        make()
