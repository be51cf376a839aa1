"""Every zoo model family on the GPU: one training step (forward, loss, backward, SGD step) gives the
CPU's outputs, gradients and updated weights in float64, and short float32 trainings of LAC, TSM and two
LSTM models end at the CPU's loss. Dropout is switched off (the two devices draw different random streams); batch norm
trains with batch statistics."""
import os

import numpy
import pytest

import framework
import framework.nn.functional as F
import nlp.senta.model  # noqa: F401  (registers the NLP models)
import nlp.simnet.model  # noqa: F401
import video.models  # noqa: F401  (registers the video models)
import vision.models  # noqa: F401  (registers the vision models)
import zoo.toy  # noqa: F401  (registers the toy MLP)
from framework import nn
from framework.optimizer import SGD, Momentum
from framework.registry import MODELS

pytestmark = pytest.mark.gpu


def _ids(rng, batch, length, vocab):
    return rng.integers(1, vocab, size=(batch, length)).astype(numpy.int64)


def _lengths(*values):
    return numpy.asarray(values, dtype=numpy.int64)


def _lac_inputs(rng):
    tokens, lengths = _ids(rng, 3, 7, 30), _lengths(7, 4, 1)
    return (tokens, lengths), {"labels": rng.integers(0, 5, size=(3, 7)).astype(numpy.int64)}


def _lac_loss(model, outputs, inputs, extra):
    return F.linear_chain_crf(outputs, framework.to_tensor(extra["labels"], device=outputs.device),
                              framework.to_tensor(inputs[1], device=outputs.device), model.crf.transition).mean()


def _text_inputs(rng):
    return (_ids(rng, 3, 9, 40), _lengths(9, 5, 2)), {}


def _pair_inputs(rng):
    return (_ids(rng, 3, 8, 40), _lengths(8, 3, 5), _ids(rng, 3, 6, 40), _lengths(6, 6, 1)), {}


def _images(rng):
    return (rng.standard_normal((2, 3, 32, 32)),), {}


def _clips(frames):
    return lambda rng: ((rng.standard_normal((2, frames, 3, 32, 32)),), {})


def _features(rng):
    return ([rng.standard_normal((3, 7, 6)), rng.standard_normal((3, 7, 4))], _lengths(7, 3, 5)), {}


def _vectors(rng):
    return (rng.standard_normal((5, 2)),), {}


CASES = {  # name -> (model config, input maker, loss or None for a weighted sum of the outputs)
    "MLP": ({"type": "MLP"}, _vectors, None),
    "BiGRUCRF": ({"type": "BiGRUCRF", "vocab_size": 30, "num_tags": 5, "emb_dim": 6, "hidden": 4}, _lac_inputs,
                 _lac_loss),
    "SentaBOW": ({"type": "SentaBOW", "vocab_size": 40, "emb_dim": 6, "hidden": 5, "hidden2": 4}, _text_inputs,
                 None),
    "SentaCNN": ({"type": "SentaCNN", "vocab_size": 40, "emb_dim": 6, "filters": 5, "window": 3, "hidden2": 4},
                 _text_inputs, None),
    "SentaGRU": ({"type": "SentaGRU", "vocab_size": 40, "emb_dim": 6, "hidden": 5, "hidden2": 4}, _text_inputs,
                 None),
    "SentaLSTM": ({"type": "SentaLSTM", "vocab_size": 40, "emb_dim": 6, "hidden": 5, "hidden2": 4}, _text_inputs,
                  None),
    "SentaBiLSTM-attention": ({"type": "SentaBiLSTM", "vocab_size": 40, "emb_dim": 6, "hidden": 5, "hidden2": 4,
                               "pooling": "attention"}, _text_inputs, None),
    "SimNetBOW-pointwise": ({"type": "SimNetBOW", "vocab_size": 40, "emb_dim": 6, "hidden": 5}, _pair_inputs, None),
    "SimNetCNN-pairwise": ({"type": "SimNetCNN", "vocab_size": 40, "emb_dim": 6, "filters": 5, "windows": [1, 3],
                            "head": "pairwise"}, _pair_inputs, None),
    "SimNetGRU-bi": ({"type": "SimNetGRU", "vocab_size": 40, "emb_dim": 6, "hidden_size": 4, "bidirectional": True,
                      "hidden": 5}, _pair_inputs, None),
    "SimNetLSTM-pairwise": ({"type": "SimNetLSTM", "vocab_size": 40, "emb_dim": 6, "hidden_size": 4, "hidden": 5,
                             "head": "pairwise"}, _pair_inputs, None),
    "ResNet18": ({"type": "ResNet", "block": "basic", "layers": [2, 2, 2, 2], "num_classes": 7}, _images, None),
    "MobileNetV1": ({"type": "mobilenet_v1", "num_classes": 7, "scale": 0.25}, _images, None),
    "MobileNetV2": ({"type": "mobilenet_v2", "num_classes": 7, "width_mult": 0.25}, _images, None),
    "TSN": ({"type": "TSN", "num_classes": 5, "depth": 18, "base_channels": 4, "num_segments": 3}, _clips(3), None),
    "TSM": ({"type": "TSM", "num_classes": 5, "depth": 18, "base_channels": 8, "num_segments": 4}, _clips(4), None),
    "StNet": ({"type": "StNet", "num_classes": 5, "depth": 18, "base_channels": 4, "num_segments": 3, "seglen": 2},
              _clips(6), None),
    "NonLocal-i3d": ({"type": "NonLocalNet", "num_classes": 5, "depth": 18, "base_channels": 4, "mode": "i3d"},
                     _clips(4), None),
    "AttentionCluster": ({"type": "AttentionCluster", "feature_dims": [6, 4], "num_clusters": [3, 2],
                          "hidden_sizes": [8], "num_classes": 5}, _features, None),
    "AttentionLSTM": ({"type": "AttentionLSTM", "feature_dims": [6, 4], "embedding_size": 5, "lstm_size": 4,
                       "hidden_sizes": [8, 6], "num_classes": 5}, _features, None),
    "NeXtVLAD": ({"type": "NeXtVLAD", "feature_dims": [6, 4], "num_clusters": 4, "expansion": 2, "groups": 2,
                   "hidden_size": 8, "gating_reduction": 2, "num_classes": 5}, _features, None),
}


def _on(device, value, dtype):
    """``value`` (an array, or a list of arrays) as tensors on ``device``; floats cast to ``dtype``."""
    if isinstance(value, list):
        return [_on(device, v, dtype) for v in value]
    array = value.astype(dtype) if value.dtype.kind == "f" else value
    return framework.to_tensor(array, device=device)


def _without_dropout(model):
    for layer in model.sublayers():
        if isinstance(layer, nn.Dropout):
            layer.eval()
    return model


def _step(name, device, state, dtype="float64"):
    """Build CASES[name] on ``device`` from ``state``, run one SGD step; returns (outputs, grads, weights).

    SGD keeps the weights' difference at lr times the gradients' (Adam would blow a rounding-level difference
    of a near-zero gradient up to a step of lr; the optimizers' own GPU parity is tested on their own)."""
    config, make_inputs, loss_fn = CASES[name]
    model = MODELS.build(dict(config)).to(dtype=dtype)
    model.set_state_dict(state)
    model = _without_dropout(model.to(device))
    inputs, extra = make_inputs(numpy.random.default_rng(1))
    outputs = model(*[_on(device, value, dtype) for value in inputs])
    if loss_fn is not None:
        loss = loss_fn(model, outputs, inputs, extra)
    else:
        weights = numpy.random.default_rng(2).standard_normal(outputs.shape).astype(dtype)
        loss = (outputs * framework.to_tensor(weights, device=device)).sum()
    optimizer = SGD(learning_rate=1e-2, parameters=model.parameters())
    loss.backward()
    grads = {key: p.grad.numpy() for key, p in model.named_parameters() if p.grad is not None}
    optimizer.step()
    return outputs.numpy(), grads, {key: value.numpy() for key, value in model.state_dict().items()}


@pytest.mark.parametrize("name", sorted(CASES))
def test_one_training_step_matches_cpu(name):
    framework.seed(0)
    state = MODELS.build(dict(CASES[name][0])).to(dtype="float64").state_dict()
    cpu_out, cpu_grads, cpu_weights = _step(name, "cpu", state)
    gpu_out, gpu_grads, gpu_weights = _step(name, "gpu", state)
    numpy.testing.assert_allclose(gpu_out, cpu_out, rtol=1e-7, atol=1e-9, err_msg=f"{name} outputs")
    assert sorted(gpu_grads) == sorted(cpu_grads)
    for key in cpu_grads:
        scale = numpy.abs(cpu_grads[key]).max()        # a sum of large terms may cancel to a small value
        numpy.testing.assert_allclose(gpu_grads[key], cpu_grads[key], rtol=1e-5, atol=1e-9 * max(scale, 1.0),
                                      err_msg=f"{name} {key}")
    for key in cpu_weights:
        numpy.testing.assert_allclose(gpu_weights[key], cpu_weights[key], rtol=1e-6, atol=1e-7,
                                      err_msg=f"{name} {key} after the step")


def _short_training(name, device, steps):
    """``steps`` float32 Momentum steps of CASES[name] on fixed inputs; returns the loss of every step."""
    framework.seed(0)
    config, make_inputs, loss_fn = CASES[name]
    model = _without_dropout(MODELS.build(dict(config)).to(device))
    inputs, extra = make_inputs(numpy.random.default_rng(1))
    tensors = [_on(device, value, "float32") for value in inputs]
    optimizer = Momentum(learning_rate=0.05, momentum=0.9, parameters=model.parameters())
    losses = []
    for _ in range(steps):
        outputs = model(*tensors)
        if loss_fn is None:
            target = framework.to_tensor(numpy.arange(outputs.shape[0]) % outputs.shape[-1], device=device)
            loss = F.cross_entropy(outputs, target)
        else:
            loss = loss_fn(model, outputs, inputs, extra)
        optimizer.clear_grad()
        loss.backward()
        optimizer.step()
        losses.append(float(loss.numpy()))
    return numpy.asarray(losses)


@pytest.mark.parametrize("name", ["BiGRUCRF", "TSM", "SentaBiLSTM-attention", "AttentionLSTM"])
def test_short_float32_training_reaches_the_cpu_loss(name):
    cpu, gpu = _short_training(name, "cpu", 30), _short_training(name, "gpu", 30)
    assert cpu[-1] < 0.75 * cpu[0], f"{name}: the CPU run did not learn ({cpu[0]:.4f} -> {cpu[-1]:.4f})"
    numpy.testing.assert_allclose(gpu, cpu, rtol=2e-3, atol=1e-4, err_msg=f"{name}: GPU losses vs CPU losses")


def test_a_config_trains_on_the_gpu_as_on_the_cpu(tmp_path):
    from framework.config import load_config
    from framework.engine import runner
    summaries = {}
    for device in ("cpu", "gpu"):
        cfg = load_config(os.path.join(os.path.dirname(__file__), "..", "configs", "_test", "tiny.yaml"), [])
        trainer, summaries[device] = runner.train(cfg, output_dir=str(tmp_path / device), device=device,
                                                  progress=False)
        assert all(p.device == device for p in trainer.task.model.parameters())
    assert summaries["cpu"]["best"] > 0.9
    assert abs(summaries["gpu"]["best"] - summaries["cpu"]["best"]) <= 0.02
    assert summaries["gpu"]["step"] == summaries["cpu"]["step"]


@pytest.mark.parametrize("cell", ["GRU", "LSTM"])
def test_whole_sequence_kernels_match_the_step_loops(cell, monkeypatch):
    """float32, 2 bidirectional layers, ragged lengths: the one-launch kernels against the per-step loops."""
    import framework.kernels.gru
    import framework.kernels.lstm

    def run():
        framework.seed(0)
        layer = getattr(nn, cell)(16, 32, num_layers=2, direction="bidirect").to("gpu")
        rng = numpy.random.default_rng(3)
        x = framework.to_tensor(rng.standard_normal((5, 9, 16)).astype("float32"), device="gpu",
                                requires_grad=True)
        lengths = framework.to_tensor(numpy.array([9, 7, 7, 3, 1]), device="gpu")
        out, _ = layer(x, lengths)
        (out * framework.to_tensor(rng.standard_normal(out.shape).astype("float32"), device="gpu")).sum().backward()
        return [out.numpy(), x.grad.numpy()] + [p.grad.numpy() for p in layer.parameters()]

    fused = run()
    for module in (framework.kernels.gru, framework.kernels.lstm):
        monkeypatch.setattr(module, "rows_per_block", lambda *args: 0)
    for a, b in zip(fused, run()):
        numpy.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)
