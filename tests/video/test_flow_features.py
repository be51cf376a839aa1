"""video.data.flow_features: the flow descriptor against a float64 reference on known fields, its mirror and
time-reverse moves, extraction from real encoded videos (the library and tools/extract_features.py), the feature
task predicting from rgb and flow, and bad input."""
import json
import os
import subprocess
import sys

import numpy
import pytest

pytest.importorskip("av")
pytest.importorskip("cv2")

import framework  # noqa: E402
import vision.models  # noqa: E402,F401
from framework.config import ConfigError  # noqa: E402
from framework.registry import MODELS  # noqa: E402
from video.data.datasets import FrameFeatureDataset, read_list_file  # noqa: E402
from video.data.decode import VideoDecodeError  # noqa: E402
from video.data.encode import write_video  # noqa: E402
from video.data.features import FeatureExtractor, extract_features, feature_transforms  # noqa: E402
from video.data.flow import FlowSettings  # noqa: E402
from video.data.flow_features import (FlowFeatureError, FlowFeatureExtractor, FlowFeatureSettings,  # noqa: E402
                                      ShortVideoError, flow_descriptor, flow_feature_dim, flow_features_from_config,
                                      mirror_flow_features, reverse_flow_features)
from video.data.modality import mirror_motion  # noqa: E402
from video.data.transforms import RandomTimeReverse, mirror_array  # noqa: E402
from video.models.attention_cluster import AttentionCluster  # noqa: E402
from video.tasks.feature_recognition import FeatureRecognition  # noqa: E402

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SETTINGS = FlowFeatureSettings(FlowSettings(bound=2.0), bins=8, min_speed=0.1)
STATS = 5 * 8                       # where dx, dy, divergence, curl, mean speed, moving fraction start
BACKBONE = {"type": "ResNet", "block": "basic", "layers": [1], "base_channels": 8}


def reference(flow, settings=SETTINGS):
    """One frame's descriptor (H, W, 2) -> (46,), float64, written independently: per-bin masks, and the
    divergence and curl of a weighted least-squares linear fit v = A q + t."""
    bins, bound = settings.bins, settings.flow.bound
    height, width = flow.shape[:2]
    speed = numpy.sqrt(flow[..., 0] ** 2 + flow[..., 1] ** 2)
    weight = numpy.clip(speed - settings.min_speed, 0, None)
    degrees = numpy.degrees(numpy.arctan2(flow[..., 1], flow[..., 0])) % 360
    which = numpy.round(degrees / (360 / bins)).astype(int) % bins
    rows, cols = numpy.arange(height)[:, None], numpy.arange(width)[None, :]
    regions = [numpy.ones((height, width), bool)]
    for top in (True, False):
        for left in (True, False):
            in_rows = rows < height // 2 if top else rows >= height - height // 2
            in_cols = cols < width // 2 if left else cols >= width - width // 2
            regions.append(in_rows & in_cols)
    hist = []
    for region in regions:
        counts = numpy.array([weight[region & (which == k)].sum() for k in range(bins)])
        hist.extend(counts / counts.sum() if counts.sum() > 0 else counts)
    ys, xs = numpy.mgrid[0:height, 0:width].astype(float)
    total = weight.sum()
    centre = numpy.array([(weight * xs).sum(), (weight * ys).sum()]) / total
    q = numpy.stack([xs - centre[0], ys - centre[1]], -1).reshape(-1, 2)
    design = numpy.concatenate([q, numpy.ones((len(q), 1))], axis=1) * numpy.sqrt(weight.reshape(-1, 1))
    fit = numpy.linalg.lstsq(design, flow.reshape(-1, 2) * numpy.sqrt(weight.reshape(-1, 1)), rcond=None)[0]
    a = fit[:2].T                                                    # v = a @ q + t
    radius = numpy.sqrt((weight.reshape(-1) * (q ** 2).sum(1)).sum() / total)
    mean = (weight[..., None] * flow).sum((0, 1)) / total
    divergence, curl = a[0, 0] + a[1, 1], a[1, 0] - a[0, 1]
    stats = [mean[0] / bound, mean[1] / bound, divergence * radius / bound, curl * radius / bound,
             speed.mean() / bound, (speed > settings.min_speed).mean()]
    return numpy.array(hist + stats)


def field(kind, height=18, width=22, rate=0.08):
    """A known flow field (H, W, 2) about the frame centre: translate, rotate (clockwise on screen), expand, or
    a small disk turning counterclockwise in a still frame."""
    ys, xs = numpy.mgrid[0:height, 0:width].astype(float)
    qx, qy = xs - (width - 1) / 2, ys - (height - 1) / 2
    if kind == "translate":
        return numpy.stack([numpy.full_like(qx, 1.5), numpy.full_like(qx, -0.5)], -1)
    if kind == "rotate":
        return rate * numpy.stack([-qy, qx], -1)
    if kind == "expand":
        return rate * numpy.stack([qx, qy], -1)
    inside = (qx ** 2 + qy ** 2 < 36)[..., None]
    return inside * rate * numpy.stack([qy, -qx], -1)


@pytest.mark.parametrize("kind", ["translate", "rotate", "expand", "disk"])
def test_descriptor_matches_the_reference(kind):
    flow = field(kind)
    got = flow_descriptor(flow[None], SETTINGS)
    assert got.shape == (1, flow_feature_dim(8)) == (1, 46) and got.dtype == numpy.float32
    numpy.testing.assert_allclose(got[0], reference(flow), rtol=1e-5, atol=1e-6)


def test_descriptor_reads_the_motion_physically():
    translate, rotate, expand, disk = (flow_descriptor(field(k)[None], SETTINGS)[0]
                                       for k in ("translate", "rotate", "expand", "disk"))
    assert translate[STATS:STATS + 2] == pytest.approx([0.75, -0.25]) and translate[0] == 1   # bin 0: rightwards
    assert translate[STATS + 2:STATS + 4] == pytest.approx([0, 0], abs=1e-6)
    assert translate[8:STATS].reshape(4, 8)[:, 0].tolist() == [1, 1, 1, 1]
    assert rotate[STATS + 3] > 0.5 and abs(rotate[STATS + 2]) < 1e-6      # clockwise on screen: curl > 0
    assert expand[STATS + 2] > 0.5 and abs(expand[STATS + 3]) < 1e-6      # growing: divergence > 0
    assert disk[STATS + 3] < -0.1                                         # a turning object in a still frame
    shrink = flow_descriptor(-field("expand")[None], SETTINGS)[0]
    assert shrink[STATS + 2] == pytest.approx(-expand[STATS + 2])
    up = flow_descriptor(numpy.broadcast_to([0.0, -1.0], (1, 8, 8, 2)), SETTINGS)[0]
    assert up[6] == 1 and up[STATS + 5] == 1                              # bin 6 of 8: 270 degrees, upwards
    still = flow_descriptor(numpy.zeros((1, 8, 8, 2)), SETTINGS)[0]
    assert not still.any()


def smooth_flow(frames=3, height=13, width=13, seed=0):
    """Random flow fields that vary over the frame (odd sizes: the middle line is in no grid cell)."""
    rng = numpy.random.default_rng(seed)
    ys, xs = numpy.mgrid[0:height, 0:width] / 4.0
    waves = [numpy.sin(xs * rng.uniform(0.5, 2) + rng.uniform(0, 6)) * numpy.cos(ys * rng.uniform(0.5, 2))
             for _ in range(2 * frames)]
    return numpy.stack(waves).reshape(frames, 2, height, width).transpose(0, 2, 3, 1) * 2 + rng.normal(
        0, 0.3, (frames, 1, 1, 2))


@pytest.mark.parametrize("which", range(8))
def test_mirrored_descriptors_are_those_of_the_mirrored_flow(which):
    flow = smooth_flow()
    mirrored = mirror_motion(mirror_array(flow, which, row_axis=1), {"modality": "flow", "stack": 1}, which)
    numpy.testing.assert_allclose(mirror_flow_features(flow_descriptor(flow, SETTINGS), which),
                                  flow_descriptor(mirrored, SETTINGS), rtol=1e-5, atol=1e-6)


def test_time_reverse_negates_the_flow_features():
    flow = smooth_flow(frames=4, height=12, width=15, seed=1)
    descriptors = flow_descriptor(flow, SETTINGS)
    rgb = numpy.arange(8, dtype=numpy.float32).reshape(4, 2)
    reverse = RandomTimeReverse(p=1.0, keys=["rgb", "flow"], flow_keys=["flow"], label_map=[1, 0])
    out = reverse({"rgb": rgb, "flow": descriptors, "label": numpy.array([1, 0], numpy.float32)})
    numpy.testing.assert_allclose(out["flow"], flow_descriptor(-flow[::-1], SETTINGS), rtol=1e-5, atol=1e-6)
    numpy.testing.assert_array_equal(out["rgb"], rgb[::-1])
    assert out["label"].tolist() == [0, 1]
    numpy.testing.assert_allclose(reverse_flow_features(reverse_flow_features(descriptors)), descriptors)
    with pytest.raises(ValueError, match="flow_keys only some of them"):
        RandomTimeReverse(keys=["rgb"], flow_keys=["flow"])


def moving_square(num=10, size=48, step=2):
    """Frames (num, size, size, 3) uint8: a bright square moving right ``step`` pixels per frame on texture."""
    rng = numpy.random.default_rng(0)
    background = rng.integers(40, 90, (size // 4, size // 4, 3)).repeat(4, 0).repeat(4, 1).astype(numpy.uint8)
    frames = numpy.repeat(background[None], num, axis=0)
    for i in range(num):
        frames[i, 16:32, 4 + step * i:20 + step * i] = (230, 200, 60)
    return frames


@pytest.fixture(scope="module")
def videos(tmp_path_factory):
    """A list file of real encoded videos: a moving square, a one-frame video, a corrupt file."""
    folder = tmp_path_factory.mktemp("videos")
    write_video(folder / "square.mp4", moving_square(), 10, crf=10)
    write_video(folder / "single.mp4", moving_square(1), 10)
    (folder / "corrupt.mp4").write_bytes(b"not a video" * 30)
    (folder / "list.txt").write_text("square.mp4 1\n")
    return folder


def test_extracted_flow_features_of_a_real_video(videos, tmp_path):
    entries = read_list_file(videos / "list.txt", multi_label=True)
    backbone = FeatureExtractor(MODELS.build({**BACKBONE, "num_classes": 0}), feature_transforms(40))
    flow = FlowFeatureExtractor(40, settings=SETTINGS)
    for modality, extractor in (("rgb", backbone), ("flow", flow)):
        extract_features(entries, str(videos), str(tmp_path), extractor, num_frames=4, modality=modality,
                         on_error="raise")
    sample = FrameFeatureDataset(str(tmp_path / "features.txt"), ["rgb", "flow"], num_classes=2)[0]
    assert sample["rgb"].shape == (4, 8) and sample["flow"].shape == (4, 46)
    features = sample["flow"]
    assert (features[:, STATS] > 0.3).all() and (abs(features[:, STATS + 1]) < 0.3).all()   # rightwards
    assert (features[:, :8].argmax(axis=1) == 0).all()


def test_extract_features_tool_writes_flow_beside_rgb(videos, tmp_path):
    def run(*args):
        result = subprocess.run([sys.executable, os.path.join(ROOT, "tools", "extract_features.py"), "--list",
                                 str(videos / "list.txt"), "--out", str(tmp_path), "--num_frames", "5", "--size",
                                 "32", *args], capture_output=True, text=True, cwd=ROOT, timeout=120)
        assert result.returncode == 0, result.stderr
        return json.loads(result.stdout.strip().splitlines()[-1])
    assert run("--modality", "flow", "--flow_args", '{"bins": 4}')["extracted"] == 1
    backbone = {k: v for k, v in BACKBONE.items() if k != "type"}
    assert run("--model", BACKBONE["type"], "--model_args", json.dumps(backbone))["extracted"] == 1
    rgb, flow = (numpy.load(tmp_path / m / "square.npy") for m in ("rgb", "flow"))
    assert rgb.shape == (5, 8) and flow.shape == (5, flow_feature_dim(4)) == (5, 26)
    both = tmp_path / "both"                         # one run, each video decoded once: the same two files
    assert run("--out", str(both), "--modality", "rgb", "flow", "--flow_args", '{"bins": 4}', "--model",
               BACKBONE["type"], "--model_args", json.dumps(backbone))["extracted"] == 1
    numpy.testing.assert_array_equal(numpy.load(both / "rgb" / "square.npy"), rgb)
    numpy.testing.assert_array_equal(numpy.load(both / "flow" / "square.npy"), flow)


def test_feature_task_predicts_from_rgb_and_flow(videos):
    framework.seed(0)
    model = AttentionCluster([8, 46], [2, 2], [16], num_classes=3, dropout=0.0)
    task = FeatureRecognition(model, ["a", "b", "c"], ["rgb", "flow"], BACKBONE, frame_size=32, num_frames=6,
                              flow={"bound": 2.0, "min_speed": 0.1})
    features = task.features_of(str(videos / "square.mp4"))
    assert features["rgb"].shape == (6, 8) and features["flow"].shape == (6, 46)
    [result] = task.predict([str(videos / "square.mp4")])
    assert sorted(name for name, _ in result["topk"]) == ["a", "b", "c"]
    with pytest.raises(ConfigError, match="one modality besides flow"):
        FeatureRecognition(model, ["a"], ["rgb", "audio"], BACKBONE).features_of(str(videos / "square.mp4"))


def test_bad_input_is_one_clear_error(videos, tmp_path):
    extractor = FlowFeatureExtractor(32, settings=SETTINGS)
    for name, error, message in (("single.mp4", ShortVideoError, "line 1: video .*single.mp4: flow features need "
                                  "at least 2 frames, it has 1"),
                                 ("corrupt.mp4", VideoDecodeError, "line 1: .*corrupt.mp4")):
        (tmp_path / "list.txt").write_text(f"{videos / name} 0\n")
        entries = read_list_file(tmp_path / "list.txt", multi_label=True)
        with pytest.raises(error, match=message):
            extract_features(entries, str(videos), str(tmp_path / "out"), extractor, num_frames=4, on_error="raise")
    with pytest.raises(FlowFeatureError, match="expected flow fields"):
        flow_descriptor(numpy.zeros((4, 4, 2)))
    with pytest.raises(FlowFeatureError, match="5 \\* bins \\+ 6"):
        mirror_flow_features(numpy.zeros((3, 45)), 1)
    with pytest.raises(ConfigError, match="multiple of 4"):
        flow_features_from_config({"bins": 6})
    with pytest.raises(ConfigError, match="keys among"):
        flow_features_from_config({"bin": 8})
