"""The feature models (Attention Cluster, Attention LSTM, NeXtVLAD): full-size parameter counts, and built
small: output shape, a gradient on every parameter, no NaN, padding invariance, save/load round trip."""
import os

import numpy
import pytest

import framework
import video.data.synthetic_features  # noqa: F401  (registers the synthetic feature dataset)
import video.tasks.feature_recognition  # noqa: F401  (registers the task and metrics)
from framework.config import load_config
from framework.engine.runner import build_task
from framework.registry import MODELS
from video.models.attention_cluster import AttentionCluster
from video.models.attention_lstm import AttentionLSTM
from video.models.nextvlad import NeXtVLAD
from video.models.feature_utils import masked_softmax, pack_frames, unpack_frames

CONFIGS = os.path.join(os.path.dirname(__file__), "..", "..", "configs", "video")


def count(model):
    """Trainable parameters (BatchNorm running statistics are buffers, not parameters)."""
    return sum(int(numpy.prod(p.shape)) for p in model.parameters() if p.trainable)


@pytest.mark.parametrize("name, expected", [
    ("attention_cluster", 57_807_830),
    # the 2019 count 108,749,592 includes LSTM peepholes (3 x 1024 per LSTM, 4 LSTMs) that our LSTM lacks
    ("attention_lstm", 108_749_592 - 4 * 3 * 1024),
    ("nextvlad", 89_088_550),
])
def test_full_size_configs_build_with_the_2019_parameter_counts(name, expected):
    cfg = load_config(os.path.join(CONFIGS, f"{name}_youtube8m.yaml"))
    task = build_task(cfg)
    assert count(task.model) == expected and task.modalities == ["rgb", "audio"]


@pytest.mark.parametrize("name", ["attention_cluster", "attention_lstm", "nextvlad"])
def test_synth_configs_build(name):
    task = build_task(load_config(os.path.join(CONFIGS, f"{name}_synth.yaml")))
    assert len(task.class_names) == 18 and task.model.classifier.weight.shape[1] == 18
    assert count(task.model) * 2 < 8 * 2 ** 20  # float16 weights under 8 MB


SMALL = {
    "AttentionCluster": dict(feature_dims=[6, 4], num_clusters=[3, 2], hidden_sizes=[8], num_classes=5),
    "AttentionLSTM": dict(feature_dims=[6, 4], embedding_size=5, lstm_size=4, hidden_sizes=[8, 6], num_classes=5),
    "NeXtVLAD": dict(feature_dims=[6, 4], num_clusters=4, expansion=2, groups=2, hidden_size=8, gating_reduction=2,
                     num_classes=5),
}


def inputs(rng, frames=7, lengths=(7, 3, 5)):
    return ([framework.to_tensor(rng.normal(size=(3, frames, d)).astype("float32")) for d in (6, 4)],
            framework.to_tensor(numpy.array(lengths, dtype=numpy.int64)))


@pytest.mark.parametrize("name", sorted(SMALL))
def test_small_model_shape_gradients_padding_and_round_trip(name, tmp_path):
    framework.seed(0)
    rng = numpy.random.default_rng(0)
    model = MODELS.build({"type": name, **SMALL[name]})
    features, lengths = inputs(rng)
    out = model(features, lengths)
    assert out.shape == (3, 5) and numpy.isfinite(out.numpy()).all()
    (out * framework.to_tensor(rng.normal(size=(3, 5)).astype("float32"))).sum().backward()
    for pname, p in model.named_parameters():
        assert p.grad is not None and numpy.isfinite(p.grad.numpy()).all(), pname
        if pname.endswith(".attention.bias"):        # one score shift for every step: the softmax cancels it
            assert numpy.abs(p.grad.numpy()).max() < 1e-5, pname
        else:
            assert numpy.abs(p.grad.numpy()).sum() > 0, pname
    model.eval()
    before = model(features, lengths).numpy()
    longer = [framework.to_tensor(numpy.concatenate([f.numpy(), rng.normal(size=(3, 4, f.shape[2]))
                                                     .astype("float32")], axis=1)) for f in features]
    numpy.testing.assert_allclose(model(longer, lengths).numpy(), before, atol=1e-5)  # padding is ignored
    framework.save(model.state_dict(), str(tmp_path / "w.npz"))
    twin = MODELS.build({"type": name, **SMALL[name]})
    twin.set_state_dict(framework.load(str(tmp_path / "w.npz")))
    twin.eval()
    numpy.testing.assert_allclose(twin(features, lengths).numpy(), before, atol=1e-6)


def test_attention_lstm_sees_frame_order_and_the_set_models_do_not():
    rng = numpy.random.default_rng(1)
    features, _ = inputs(rng)
    reverse = [framework.to_tensor(f.numpy()[:, ::-1].copy()) for f in features]
    for name in sorted(SMALL):
        framework.seed(0)
        model = MODELS.build({"type": name, **SMALL[name]})
        model.eval()
        change = numpy.abs(model(features).numpy() - model(reverse).numpy()).max()
        assert (change > 1e-4) if name == "AttentionLSTM" else (change < 1e-5), name


def test_wrong_feature_shapes_raise_a_clear_error():
    model = AttentionCluster([6, 4], [3, 2], [8], 5)
    with pytest.raises(ValueError, match=r"AttentionCluster: .*D = \[6, 4\]"):
        model([framework.to_tensor(numpy.zeros((2, 3, 5), "float32"))] * 2)
    with pytest.raises(ValueError, match="AttentionLSTM: expected a list of 2"):
        AttentionLSTM([6, 4], 5, 4, [8], 5)(framework.to_tensor(numpy.zeros((2, 3, 6), "float32")))
    with pytest.raises(ValueError, match="must divide by groups"):
        NeXtVLAD([6], 4, 1, 4)


def test_masked_softmax_and_packing():
    scores = framework.to_tensor(numpy.log(numpy.array([[[1.0], [3.0], [5.0]]], dtype="float32")))
    mask = framework.to_tensor(numpy.array([[1.0, 1.0, 0.0]], dtype="float32"))
    numpy.testing.assert_allclose(masked_softmax(scores, mask).numpy().ravel(), [0.25, 0.75, 0.0], atol=1e-6)
    x = framework.to_tensor(numpy.arange(12, dtype="float32").reshape(2, 3, 2))
    packed, index = pack_frames(x, framework.to_tensor(numpy.array([1, 3])))
    numpy.testing.assert_array_equal(packed.numpy(), [[0, 1], [6, 7], [8, 9], [10, 11]])
    back = unpack_frames(packed, index, 2, 3).numpy()
    numpy.testing.assert_array_equal(back, [[[0, 1], [0, 0], [0, 0]], [[6, 7], [8, 9], [10, 11]]])
