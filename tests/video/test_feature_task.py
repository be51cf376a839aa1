"""The feature task: backbone training targets, the synthetic feature set, training batches, metrics and
prediction on a video file."""
import numpy
import pytest

pytest.importorskip("av")
pytest.importorskip("cv2")

import framework  # noqa: E402
import vision.models  # noqa: E402,F401
from framework.config import ConfigError  # noqa: E402
from framework.engine.task import to_tensors  # noqa: E402
from framework.registry import MODELS  # noqa: E402
from video.data.synthetic import SyntheticSpec, plan_video  # noqa: E402
from video.data.transforms import mirror_array  # noqa: E402
from video.data.frame_attributes import SyntheticFrameAttributes, frame_targets, mirror_frames  # noqa: E402
from video.data.flow_features import flow_feature_dim, mirror_flow_features  # noqa: E402
from video.data.synthetic_features import SyntheticFeatures, mirror_label_map, synthetic_features_folder  # noqa: E402
from video.metrics import FrameAttributeMetrics, LabelGroupAccuracy  # noqa: E402
from video.models.attention_lstm import AttentionLSTM  # noqa: E402
from video.tasks.feature_recognition import FeatureRecognition  # noqa: E402
from video.tasks.frame_attributes import NUM_OUTPUTS, FrameAttributes  # noqa: E402

SPEC = {"num_frames": [16, 18]}
BACKBONE = {"type": "resnet18", "base_channels": 4}


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """A 24-video set and random backbone weights, with OAR_HOME in a temporary folder."""
    home = tmp_path_factory.mktemp("home")
    patch = pytest.MonkeyPatch()
    patch.setenv("OAR_HOME", str(home))
    framework.seed(0)
    weights = str(home / "backbone.npz")
    framework.save(MODELS.build({**BACKBONE, "num_classes": NUM_OUTPUTS}).state_dict(), weights)
    yield {"root": str(home / "set"), "weights": weights}
    patch.undo()


def test_frame_targets_follow_the_plan():
    plan = plan_video(0, numpy.random.default_rng(3), SyntheticSpec(plain_background=True))   # move_left
    targets = frame_targets(plan)
    x = targets["geometry"][:, 0]
    assert (numpy.diff(x) < 0).all() and 0 < x.min() < x.max() < 1
    numpy.testing.assert_allclose(targets["geometry"][:, 3] ** 2 + targets["geometry"][:, 4] ** 2, 1, atol=1e-6)
    assert targets["visible"].all() and (targets["shape"] == plan.shape).all()
    appear = frame_targets(plan_video(8, numpy.random.default_rng(3)))
    assert appear["visible"][0] == 0 and appear["visible"][-1] == 1


@pytest.mark.parametrize("which", range(8))
def test_mirrored_frames_keep_their_targets_true(which):
    size, x, y, angle = 40, 0.3, 0.2, 0.6                 # object centre and mark direction (downwards on screen)
    mark = (x + 0.25 * numpy.cos(angle), y + 0.25 * numpy.sin(angle))
    imgs = numpy.zeros((1, 3, size, size), numpy.float32)
    imgs[0, 0, int(y * size), int(x * size)] = 1.0        # channel 0: the centre, channel 1: the mark
    imgs[0, 1, int(mark[1] * size), int(mark[0] * size)] = 1.0
    geometry = numpy.array([[x + 0.5 / size, y + 0.5 / size, -1.0, numpy.cos(angle), numpy.sin(angle)]], numpy.float32)
    out, moved = mirror_frames(imgs, geometry, which)
    (cy,), (cx,) = numpy.nonzero(out[0, 0])
    (my,), (mx,) = numpy.nonzero(out[0, 1])
    numpy.testing.assert_allclose(moved[0, :2], [(cx + 0.5) / size, (cy + 0.5) / size], atol=1e-6)
    direction = numpy.array([mx - cx, my - cy], numpy.float64)
    numpy.testing.assert_allclose(moved[0, 3:], direction / numpy.linalg.norm(direction), atol=0.08)
    assert moved[0, 2] == -1.0 and geometry[0, 0] == numpy.float32(x + 0.5 / size)


def test_frame_attribute_dataset_and_task(tiny):
    data = SyntheticFrameAttributes("train", frames_per_video=3, size=32, num=24, spec=SPEC, root=tiny["root"])
    sample = data[0]
    assert sample["imgs"].shape == (3, 3, 32, 32) and sample["geometry"].shape == (3, 5)
    assert len(data) == 18 and set(sample) == {"imgs", "shape", "visible", "geometry"}
    model = MODELS.build({**BACKBONE, "num_classes": NUM_OUTPUTS})
    task = FrameAttributes(model)
    batch = to_tensors({k: numpy.stack([data[i][k] for i in range(4)]) for k in sample})
    loss = task.loss(batch)
    assert numpy.isfinite(float(loss.numpy())) and float(loss.numpy()) > 0
    metric = FrameAttributeMetrics()
    metric.reset()
    metric.update(task.predict(batch), batch)
    result = metric.compute()
    assert set(result) == {"shape_acc", "visible_acc", "xy_mae", "angle_mae_deg"}
    assert 0 <= result["shape_acc"] <= 1 and 0 <= result["angle_mae_deg"] <= 180
    with pytest.raises(ValueError, match="num_classes = 12"):
        FrameAttributes(MODELS.build({**BACKBONE, "num_classes": 3}))


def test_synthetic_features_train_and_predict_on_a_video(tiny):
    kwargs = dict(backbone=BACKBONE, backbone_weights=tiny["weights"], size=32, extract_frames=6, num=24,
                  spec=SPEC, root=tiny["root"])
    train = SyntheticFeatures("train", **kwargs)
    sample = train[0]
    assert sample["rgb"].shape == (6, 32) and sample["label"].shape == (18,) and sample["label"].sum() == 2
    framework.seed(0)
    names = [f"c{i}" for i in range(18)]
    task = FeatureRecognition(AttentionLSTM([32], 8, 8, [16], 18, dropout=0.0), names, ["rgb"], BACKBONE,
                              tiny["weights"], frame_size=32, num_frames=6)
    batch = to_tensors(task.collate_fn([train[i] for i in range(4)]))
    assert batch["rgb"].shape == (4, 6, 32) and batch["rgb_lengths"].numpy().tolist() == [6] * 4
    loss = task.loss(batch)
    expected = -numpy.mean(numpy.sum(numpy.log(numpy.where(batch["label"].numpy() > 0.5,
                                                           task.predict(batch)["prob"].numpy(),
                                                           1 - task.predict(batch)["prob"].numpy())), axis=1))
    assert float(loss.numpy()) == pytest.approx(expected, rel=1e-4)
    video = f"{tiny['root']}/videos/000000.mp4"
    [result] = task.predict([video])
    assert [n for n, _ in result["topk"]] != [] and len(result["topk"]) == 18
    probs = [p for _, p in result["topk"]]
    assert probs == sorted(probs, reverse=True) and {n for n, _ in result["topk"]} == set(names)
    # the video's features made inside the task are the extracted ones
    numpy.testing.assert_allclose(task.features_of(video)["rgb"], SyntheticFeatures("test", **kwargs)[0]["rgb"],
                                  atol=1e-5)


@pytest.mark.parametrize("which, moved", [(1, [1, 0, 2, 3, 5, 4]), (2, [0, 1, 3, 2, 5, 4]), (4, [2, 3, 0, 1, 5, 4]),
                                          (7, [3, 2, 1, 0, 5, 4])])
def test_mirrored_clips_move_their_motion_labels(which, moved):
    frames = numpy.arange(2 * 3 * 3 * 1).reshape(2, 3, 3, 1)
    mirrored, mapping = mirror_array(frames, which, 1), mirror_label_map(which)
    assert list(mapping[:6]) + [mapping[6], mapping[11]] == moved + [6, 11] and len(mapping) == 12
    expected = frames[:, :, ::-1] if which & 1 else frames
    expected = expected[:, ::-1] if which & 2 else expected
    numpy.testing.assert_array_equal(mirrored, expected.swapaxes(1, 2) if which & 4 else expected)


def test_mirrored_training_features(tiny):
    kwargs = dict(backbone=BACKBONE, backbone_weights=tiny["weights"], size=32, extract_frames=6, num=24,
                  spec=SPEC, root=tiny["root"])
    plain, mirrored = SyntheticFeatures("train", **kwargs), SyntheticFeatures("train", mirrored=True, **kwargs)
    assert len(mirrored) == 8 * len(plain)
    first, flipped = mirrored[0], mirrored[len(plain)]                     # a video and its left-right mirror
    numpy.testing.assert_array_equal(first["rgb"], plain[0]["rgb"])
    assert flipped["path"] == "m1/" + first["path"] and not numpy.allclose(flipped["rgb"], first["rgb"])
    motion, swapped = int(first["label"][:12].argmax()), int(flipped["label"][:12].argmax())
    assert swapped == [1, 0, 2, 3, 5, 4, 6, 7, 8, 9, 10, 11][motion]
    numpy.testing.assert_array_equal(flipped["label"][12:], first["label"][12:])
    with pytest.raises(ValueError, match="mirrored: train only"):
        SyntheticFeatures("dev", mirrored=True, **kwargs)


def test_flow_features_of_the_set_and_their_mirror_images(tiny):
    kwargs = dict(backbone=BACKBONE, backbone_weights=tiny["weights"], size=32, extract_frames=6, num=24,
                  spec=SPEC, root=tiny["root"])
    rgb_only = synthetic_features_folder(BACKBONE, tiny["weights"], 32, 6, 24, root=tiny["root"], spec=SPEC)[0]
    both = SyntheticFeatures("train", modalities=["rgb", "flow"], flow={"bins": 4}, mirrored=True, **kwargs)
    plain = SyntheticFeatures("train", **kwargs)
    assert both.root != rgb_only and plain.root == rgb_only            # the flow settings are part of the key
    first, flipped = both[0], both[len(plain)]                           # a video and its left-right mirror
    assert first["rgb"].shape == (6, 32) and first["flow"].shape == (6, flow_feature_dim(4))
    numpy.testing.assert_array_equal(flipped["flow"], mirror_flow_features(first["flow"], 1))
    numpy.testing.assert_allclose(first["rgb"], plain[0]["rgb"], atol=1e-6)
    with pytest.raises(ConfigError, match="modalities must name each of"):
        SyntheticFeatures("dev", modalities=["rgb", "audio"], **kwargs)


def test_label_group_accuracy_with_and_without_pairs():
    labels = numpy.zeros((3, 6), dtype="float32")
    labels[[0, 1, 2], [0, 1, 2]] = 1
    labels[:, 4] = 1
    scores = numpy.array([[.9, .1, 0, 0, .2, .8], [.9, .1, 0, 0, .9, 0], [0, 0, .1, .9, .9, 0]], dtype="float32")
    outputs, batch = {"prob": scores}, {"label": labels}
    for metric, value in [(LabelGroupAccuracy(0, 4, "m"), 1 / 3), (LabelGroupAccuracy(0, 4, "p", [[0, 1], [2, 3]]), 1.0),
                          (LabelGroupAccuracy(4, 6, "s"), 2 / 3)]:
        metric.update(outputs, batch)
        assert list(metric.compute().values()) == [pytest.approx(value)]


def test_backbone_config_builds():
    import os
    from framework.config import load_config
    from framework.engine.runner import build_task
    cfg = load_config(os.path.join(os.path.dirname(__file__), "..", "..", "configs", "video",
                                   "feature_backbone_synth.yaml"))
    task = build_task(cfg)
    assert isinstance(task, FrameAttributes) and task.model.num_classes == NUM_OUTPUTS == 12
    assert sum(int(numpy.prod(p.shape)) for p in task.model.parameters()) * 2 < 8 * 2 ** 20


@pytest.mark.parametrize("bias, expected", [(5.0, 6), (-5.0, 0)])
def test_visible_counts_read_the_backbone_visibility_output(tiny, tmp_path, bias, expected):
    from video.data.synthetic import SHAPES
    from video.tasks.evaluation import visible_counts
    state = {k: numpy.array(v) for k, v in framework.load(tiny["weights"]).items()}
    state["fc.weight"][len(SHAPES)] = 0.0
    state["fc.bias"][len(SHAPES)] = bias
    weights = str(tmp_path / "head.npz")
    framework.save(state, weights)
    section = dict(type="SyntheticFeatures", split="test", backbone=BACKBONE, backbone_weights=tiny["weights"],
                   size=32, extract_frames=6, num=24, spec=SPEC, root=tiny["root"])
    cfg = {"data": {"test": {**section, "backbone_weights": weights}}}
    labels, counts = visible_counts(cfg, "test")
    assert len(labels) == len(counts) == len(SyntheticFeatures("test", **{k: v for k, v in section.items()
                                                                         if k not in ("type", "split")}))
    assert (counts == expected).all() and ((labels >= 0) & (labels < 12)).all()
