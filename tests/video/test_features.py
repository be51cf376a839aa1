"""video.data.features: feature files, extraction with a backbone (resumable), and the dataset reading them back."""
import os

import numpy
import pytest

pytest.importorskip("av")
pytest.importorskip("cv2")

import framework  # noqa: E402
import vision.models  # noqa: E402,F401
from framework.registry import MODELS  # noqa: E402
from video.data.datasets import FrameFeatureDataset, read_list_file  # noqa: E402
from video.data.decode import VideoDecodeError, VideoReader  # noqa: E402
from video.data.features import (FeatureExtractor, FeatureFileError, dequantize, extract_features,  # noqa: E402
                                 extract_modalities, feature_transforms, load_features, save_features)

from .helpers import coded_frames, make_video  # noqa: E402


def tiny_backbone():
    return MODELS.build({"type": "ResNet", "block": "basic", "layers": [1], "base_channels": 8, "num_classes": 0})


def test_feature_files_round_trip_and_dequantise(tmp_path):
    values = numpy.arange(12, dtype=numpy.float32).reshape(4, 3)
    save_features(tmp_path / "deep" / "v.npy", values)
    numpy.testing.assert_array_equal(load_features(tmp_path / "deep" / "v.npy"), values)
    assert not [n for n in os.listdir(tmp_path / "deep") if n.endswith(".part")]
    numpy.testing.assert_allclose(dequantize(numpy.array([[0, 255]], numpy.uint8)), [[-2 + 4 / 512, 2 + 4 / 512]])
    numpy.save(tmp_path / "flat.npy", numpy.zeros(5))
    numpy.save(tmp_path / "ints.npy", numpy.zeros((2, 2), numpy.int32))
    for name, message in (("flat.npy", "frames, dim"), ("ints.npy", "int32")):
        with pytest.raises(FeatureFileError, match=message):
            load_features(tmp_path / name)


def test_extractor_matches_the_backbone_frame_by_frame():
    model = tiny_backbone()
    extractor = FeatureExtractor(model, feature_transforms(size=24, resize=28), batch_size=3)
    frames = coded_frames(5, size=32)
    features = extractor(frames)
    assert features.shape == (5, 8) and features.dtype == numpy.float32
    single = extractor(frames[3:4])
    numpy.testing.assert_allclose(features[3:4], single, rtol=1e-5, atol=1e-6)
    assert not numpy.allclose(features[0], features[4])  # different frames, different features


def test_extract_features_writes_a_resumable_feature_dataset(tmp_path):
    (tmp_path / "videos").mkdir()
    make_video(tmp_path / "videos" / "a.mp4", num=20)
    make_video(tmp_path / "videos" / "b.webm", num=10)
    (tmp_path / "videos" / "bad.mp4").write_bytes(b"broken" * 40)
    (tmp_path / "list.txt").write_text("videos/a.mp4 1\nvideos/bad.mp4 0\nvideos/b.webm 0,2\n")
    entries = read_list_file(tmp_path / "list.txt", multi_label=True)
    extractor = FeatureExtractor(tiny_backbone(), feature_transforms(size=24))
    out = tmp_path / "features"
    seen = []
    with pytest.warns(RuntimeWarning, match="line 2: skipping .*bad.mp4"):
        result = extract_features(entries, str(tmp_path), str(out), extractor, num_frames=6, list_name="train.txt",
                                  progress=lambda done, total: seen.append((done, total)))
    assert result["extracted"] == 2 and result["existing"] == 0 and result["failed"] == ["videos/bad.mp4"]
    assert seen[-1] == (3, 3)
    assert (out / "train.txt").read_text() == "videos/a 1\nvideos/b 0,2\n"
    first = numpy.load(out / "rgb" / "videos" / "a.npy")
    assert first.shape == (6, 8)
    stamp = os.stat(out / "rgb" / "videos" / "a.npy").st_mtime_ns
    with pytest.warns(RuntimeWarning):
        again = extract_features(entries, str(tmp_path), str(out), extractor, num_frames=6, list_name="train.txt")
    assert again["extracted"] == 0 and again["existing"] == 2
    assert os.stat(out / "rgb" / "videos" / "a.npy").st_mtime_ns == stamp
    data = FrameFeatureDataset(str(out / "train.txt"), num_classes=3)
    sample = data[1]
    assert sample["rgb"].shape == (6, 8) and sample["label"].tolist() == [1, 0, 1]
    numpy.testing.assert_array_equal(data[0]["rgb"], first)
    with pytest.raises(VideoDecodeError, match="line 2: .*bad.mp4"):
        extract_features(entries, str(tmp_path), str(tmp_path / "other"), extractor, num_frames=2, on_error="raise")


class _Pairs:
    """An extractor naming frame pairs (i, i + 1), as flow does: (T, 2, H, W, 3) -> (T, 1) mean differences."""

    def frame_indices(self, indices, count, path):
        return numpy.stack([indices, numpy.minimum(indices + 1, count - 1)], axis=1)

    def __call__(self, pairs):
        return (pairs[:, 1].astype(numpy.float32) - pairs[:, 0]).mean(axis=(1, 2, 3))[:, None]


def test_several_modalities_decode_each_video_once_and_resume_per_modality(tmp_path, monkeypatch):
    (tmp_path / "videos").mkdir()
    make_video(tmp_path / "videos" / "a.mp4", num=12)
    (tmp_path / "list.txt").write_text("videos/a.mp4 1\n")
    entries = read_list_file(tmp_path / "list.txt", multi_label=True)
    means = lambda frames: frames.astype(numpy.float32).mean(axis=(1, 2, 3))[:, None]  # noqa: E731
    decoded = []
    get_frames = VideoReader.get_frames
    monkeypatch.setattr(VideoReader, "get_frames", lambda self, idx: decoded.append(len(idx)) or get_frames(self, idx))
    out = tmp_path / "features"
    result = extract_modalities(entries, str(tmp_path), str(out), {"rgb": means, "pairs": _Pairs()}, num_frames=4)
    assert result["extracted"] == 1 and len(decoded) == 1          # one decode of the frames both need
    alone = tmp_path / "alone"
    for modality, extractor in (("rgb", means), ("pairs", _Pairs())):
        extract_features(entries, str(tmp_path), str(alone), extractor, num_frames=4, modality=modality)
        numpy.testing.assert_array_equal(numpy.load(out / modality / "videos" / "a.npy"),
                                         numpy.load(alone / modality / "videos" / "a.npy"))
    os.remove(out / "pairs" / "videos" / "a.npy")
    stamp = os.stat(out / "rgb" / "videos" / "a.npy").st_mtime_ns
    again = extract_modalities(entries, str(tmp_path), str(out), {"rgb": means, "pairs": _Pairs()}, num_frames=4)
    assert again["extracted"] == 1 and (out / "pairs" / "videos" / "a.npy").exists()
    assert os.stat(out / "rgb" / "videos" / "a.npy").st_mtime_ns == stamp          # only the missing one


def test_extractor_pools_feature_maps():
    class MapModel(framework.nn.Layer):
        def forward(self, x):
            return x  # (N, 3, h, w): the extractor averages over space

    features = FeatureExtractor(MapModel(), [{"type": "ToCHW"}])(coded_frames(2, size=8).astype(numpy.float32))
    numpy.testing.assert_allclose(features[1], [22, 128, 228])
