"""Optical flow and RGB difference (video.data.flow, video.data.modality): values, stacking, the cache."""
import os
import warnings

import numpy
import pytest

from video.data.datasets import ClipLoader
from video.data.encode import write_video
from video.data.flow import (FlowCache, FlowSettings, dense_flow, dequantise_flow, file_sha256, quantise_flow,
                             video_flow)
from video.data.modality import Modality, mirror_motion, modality_from_config, reverse_motion, rgb_difference
from video.data.transforms import NormalizeModality

SHIFT = (2.0, 1.0)   # (dx, dy) pixels per frame of the translating texture


def texture(size=64, offset=(0.0, 0.0)):
    """A smooth grey-level texture (size, size, 3) uint8 shifted by ``offset`` (dx, dy), from float64 sines."""
    y, x = numpy.mgrid[0:size, 0:size].astype(numpy.float64)
    x, y = x - offset[0], y - offset[1]
    value = 128 + 50 * numpy.sin(x / 3.1) * numpy.cos(y / 4.3) + 40 * numpy.sin((x + 2 * y) / 5.7)
    return numpy.repeat(numpy.clip(numpy.rint(value), 0, 255).astype(numpy.uint8)[..., None], 3, axis=2)


def translating_frames(num=6, size=64):
    """(num, size, size, 3) uint8: the texture moving by :data:`SHIFT` each frame."""
    return numpy.stack([texture(size, (SHIFT[0] * i, SHIFT[1] * i)) for i in range(num)])


@pytest.mark.parametrize("method", ["dis", "farneback"])
def test_flow_of_a_known_translation_matches_the_float64_displacement(method):
    flow = dense_flow(texture(), texture(offset=SHIFT), method)
    assert flow.shape == (64, 64, 2) and flow.dtype == numpy.float32
    reference = numpy.broadcast_to(numpy.array(SHIFT, dtype=numpy.float64), (48, 48, 2))  # the exact field
    error = numpy.hypot(*(flow[8:-8, 8:-8].astype(numpy.float64) - reference).transpose(2, 0, 1))
    assert numpy.median(error) < 0.15 and error.mean() < 0.3


def test_dis_flow_does_not_depend_on_the_frame_sizes_computed_before():
    cv2 = pytest.importorskip("cv2")
    first, second = texture(112), texture(112, offset=SHIFT)
    grey = [cv2.cvtColor(frame, cv2.COLOR_RGB2GRAY) for frame in (first, second)]
    fresh = cv2.DISOpticalFlow_create(cv2.DISOPTICAL_FLOW_PRESET_ULTRAFAST).calc(*grey, None)
    for size in (32, 40, 64, 24):                    # other videos' frames through the same thread first
        dense_flow(texture(size), texture(size, offset=SHIFT))
    numpy.testing.assert_array_equal(dense_flow(first, second), fresh)


def test_quantisation_against_float64():
    flow = numpy.array([-9.0, -8.0, -1.25, 0.0, 0.03, 3.3, 8.0, 20.0], dtype=numpy.float64)
    expected = numpy.rint((numpy.clip(flow, -8, 8) + 8) * 255 / 16)
    quantised = quantise_flow(flow, 8.0)
    assert quantised.dtype == numpy.uint8 and quantised.tolist() == expected.astype(int).tolist()
    assert numpy.abs(dequantise_flow(quantised, 8.0) - numpy.clip(flow, -8, 8)).max() <= 8 / 255 + 1e-6


def test_flow_stack_of_a_video_holds_k_consecutive_fields(tmp_path):
    path = write_video(str(tmp_path / "move.mp4"), translating_frames(8), 25, crf=10)
    loader = ClipLoader({"type": "SegmentSampler", "num_segments": 2, "mode": "test"},
                        modality={"name": "flow", "stack": 3})
    loader.flow_cache = FlowCache(FlowSettings(), root=str(tmp_path / "cache"))
    sample = loader(path)
    imgs = sample["imgs"]
    assert imgs.shape == (2, 64, 64, 6) and sample["modality"] == "flow" and sample["stack"] == 3
    middle = numpy.median(imgs[:, 12:-12, 12:-12].reshape(-1, 6), axis=0)
    assert numpy.allclose(middle, [2.0, 1.0] * 3, atol=0.35)     # (dx0, dy0, dx1, dy1, dx2, dy2)


def test_rgb_difference_and_rgb_plus_flow_channels(tmp_path):
    frames = translating_frames(8)
    path = write_video(str(tmp_path / "move.mp4"), frames, 25, crf=10)
    sampler = {"type": "SegmentSampler", "num_segments": 2, "mode": "test"}
    diff = ClipLoader(sampler, modality={"name": "rgbdiff", "stack": 2})(path)
    rgb = ClipLoader(sampler)(path)
    index = int(rgb["frame_inds"][0, 0])
    decoded = ClipLoader({"type": "SegmentSampler", "num_segments": 8, "mode": "test"})(path)["imgs"].astype(float)
    assert diff["imgs"].shape == (2, 64, 64, 6)
    assert numpy.allclose(diff["imgs"][0, ..., :3], decoded[index + 1] - decoded[index])
    assert numpy.allclose(diff["imgs"][0, ..., 3:], decoded[index + 2] - decoded[index + 1])
    both = ClipLoader(sampler, modality={"name": "rgb+flow", "stack": 2})
    both.flow_cache = FlowCache(FlowSettings(), root=str(tmp_path / "cache"))
    sample = both(path)
    assert sample["imgs"].shape == (2, 64, 64, 7)
    assert numpy.array_equal(sample["imgs"][..., :3], rgb["imgs"].astype(numpy.float32))
    with_diff = ClipLoader(sampler, modality={"name": "rgb+rgbdiff", "stack": 2})(path)["imgs"]
    assert with_diff.shape == (2, 64, 64, 9)
    assert numpy.array_equal(with_diff[..., :3], rgb["imgs"].astype(numpy.float32))
    assert numpy.array_equal(with_diff[..., 3:], diff["imgs"])


def test_mirrors_and_time_reversal_move_the_flow():
    frames = numpy.zeros((1, 2, 2, 3 + 4), dtype=numpy.float32)
    frames[..., 3:] = [1.0, 2.0, 3.0, 4.0]                  # (dx0, dy0, dx1, dy1) after three colour channels
    sample = {"modality": "rgb+flow", "stack": 2}
    assert mirror_motion(frames, sample, 1)[0, 0, 0, 3:].tolist() == [-1, 2, -3, 4]
    assert mirror_motion(frames, sample, 2)[0, 0, 0, 3:].tolist() == [1, -2, 3, -4]
    assert mirror_motion(frames, sample, 4)[0, 0, 0, 3:].tolist() == [2, 1, 4, 3]
    assert reverse_motion(frames, sample)[0, 0, 0, 3:].tolist() == [-3, -4, -1, -2]
    diffs = numpy.arange(6, dtype=numpy.float32).reshape(1, 1, 1, 6)
    rgbdiff = {"modality": "rgbdiff", "stack": 2}
    assert reverse_motion(diffs, rgbdiff)[0, 0, 0].tolist() == [-3, -4, -5, 0, -1, -2]
    assert mirror_motion(diffs, rgbdiff, 1) is diffs
    with_colour = numpy.arange(9, dtype=numpy.float32).reshape(1, 1, 1, 9)
    assert reverse_motion(with_colour, {"modality": "rgb+rgbdiff", "stack": 2})[0, 0, 0].tolist() == \
        [9, 12, 15, -6, -7, -8, -3, -4, -5]                 # the colour of the stack's last frame


def test_a_reversed_colour_and_difference_stack_is_the_reversed_videos():
    """rgb+rgbdiff of frame i, played backwards, is rgb+rgbdiff of the reversed video at the stack's last frame:
    its colour is frame i + k and its differences run from i + k back to i."""
    frames = numpy.random.default_rng(0).integers(0, 256, (6, 4, 5, 3), dtype=numpy.uint8)

    def colour_and_differences(video, i, k=2):
        stack = rgb_difference(video[i:i + k + 1])                              # (k, H, W, 3)
        return numpy.concatenate([video[i].astype(numpy.float32)] + list(stack), axis=-1)

    sample = {"modality": "rgb+rgbdiff", "stack": 2}
    for i in range(4):
        played_backwards = reverse_motion(colour_and_differences(frames, i)[None], sample)[0]
        numpy.testing.assert_array_equal(played_backwards, colour_and_differences(frames[::-1], 3 - i))


def test_normalize_modality_scales_motion_and_normalises_colour():
    frames = numpy.full((1, 1, 1, 5), 100.0, dtype=numpy.float32)
    out = NormalizeModality(mean=[100.0] * 3, std=[2.0] * 3, motion_std=4.0)(
        {"imgs": frames, "modality": "rgb+flow", "stack": 1})["imgs"]
    assert out[0, 0, 0].tolist() == [0.0, 0.0, 0.0, 25.0, 25.0]


def _cached_video(tmp_path):
    """(a video file, a flow cache, a frame decoder counting its calls in ``calls``, the calls, its flow)
    after one ``get`` of that video (which computed the flow)."""
    frames = translating_frames(4, 32)
    video = tmp_path / "a.mp4"
    video.write_bytes(b"one video")
    cache = FlowCache(FlowSettings(), root=str(tmp_path / "cache"))
    calls = []

    def decode():
        calls.append(1)
        return frames
    return video, cache, decode, calls, cache.get(str(video), decode, expected=(4, 32, 32))


def test_cache_hit_and_invalidation(tmp_path):
    video, cache, decode, calls, first = _cached_video(tmp_path)
    assert first.shape == (3, 32, 32, 2) and first.dtype == numpy.uint8 and len(calls) == 1
    assert numpy.array_equal(cache.get(str(video), decode, expected=(4, 32, 32)), first) and len(calls) == 1
    assert os.path.basename(cache.entry(str(video))).startswith(file_sha256(str(video)))
    other = FlowCache(FlowSettings(bound=4.0), root=str(tmp_path / "cache"))   # other settings: other entry
    other.get(str(video), decode)
    assert len(calls) == 2 and other.entry(str(video)) != cache.entry(str(video))
    video.write_bytes(b"another video")                                        # other content: other entry
    cache.get(str(video), decode)
    assert len(calls) == 3 and len(os.listdir(tmp_path / "cache")) == 3


@pytest.mark.parametrize("damage", ["garbage", "float32", "shape", "truncated"])
def test_corrupt_cache_entry_is_refused_and_recomputed(tmp_path, damage):
    video, cache, decode, calls, good = _cached_video(tmp_path)
    entry = cache.entry(str(video))
    if damage == "garbage":
        open(entry, "wb").write(b"\x93NUMPY not really")
    elif damage == "float32":
        numpy.save(entry, good.astype(numpy.float32))
    elif damage == "shape":
        numpy.save(entry, good[:2])
    else:
        data = open(entry, "rb").read()
        open(entry, "wb").write(data[:len(data) // 2])
    with pytest.warns(RuntimeWarning, match="flow cache entry") as caught:
        again = cache.get(str(video), decode, expected=(4, 32, 32))
    assert len(caught) == 1 and len(calls) == 2 and numpy.array_equal(again, good)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert numpy.array_equal(cache.get(str(video), decode, expected=(4, 32, 32)), good)   # replaced
    assert len(calls) == 2


def test_video_flow_shapes_and_settings():
    frames = translating_frames(3, 32)
    assert video_flow(frames).shape == (2, 32, 32, 2)
    assert video_flow(frames[:1]).shape == (1, 32, 32, 2)
    assert modality_from_config({"name": "flow", "stack": 5}).channels == 10
    assert Modality("rgbdiff", 5).channels == 15 and Modality("rgb+flow", 5).channels == 13
    assert Modality("rgb+rgbdiff", 5).channels == 18 and Modality("rgb+rgbdiff").colour_channels == 3
    with pytest.raises(Exception, match="modality must be one of"):
        modality_from_config("depth")
    with pytest.raises(Exception, match="flow method"):
        FlowSettings(method="tvl1")


def test_an_own_data_list_reads_as_flow(tmp_path, monkeypatch):
    monkeypatch.setenv("OAR_HOME", str(tmp_path / "home"))
    from framework.registry import DATASETS
    write_video(str(tmp_path / "a.mp4"), translating_frames(8, 32), 25, crf=10)
    (tmp_path / "list.txt").write_text("a.mp4 1\n")
    dataset = DATASETS.build({"type": "VideoDataset", "list_file": str(tmp_path / "list.txt"), "num_classes": 2,
                              "modality": {"name": "flow", "stack": 2},
                              "sampler": {"type": "SegmentSampler", "num_segments": 3, "mode": "test"},
                              "transforms": [{"type": "NormalizeModality"}, {"type": "FormatClips"}]})
    sample = dataset[0]
    assert sample["imgs"].shape == (1, 3, 4, 32, 32) and int(sample["label"]) == 1
    assert len(os.listdir(tmp_path / "home" / "video_flow")) == 1           # cached under $OAR_HOME


def test_a_frame_folder_is_keyed_by_its_files(tmp_path):
    from video.data.encode import write_frame_folder
    folder = write_frame_folder(str(tmp_path / "clip"), translating_frames(4, 32))
    first = file_sha256(folder)
    assert first == file_sha256(folder)
    name = sorted(os.listdir(folder))[0]
    os.rename(os.path.join(folder, name), os.path.join(folder, "z" + name))
    assert file_sha256(folder) != first
    loader = ClipLoader({"type": "SegmentSampler", "num_segments": 2, "mode": "test"}, modality="flow")
    loader.flow_cache = FlowCache(FlowSettings(), root=str(tmp_path / "cache"))
    assert loader(folder)["imgs"].shape == (2, 32, 32, 10)
