"""Mixed precision: autocast of the GEMM ops, GradScaler, and ``train.amp`` in the Trainer."""
import io
import os
import threading

import numpy
import pytest

import framework
import framework.nn.functional as F
from framework import amp
from framework.config import ConfigError, load_config
from framework.engine import Trainer, TrainingError, runner
from framework.engine.checkpoint import load_checkpoint
from framework.engine.trainer import AMP_NONFINITE_LOSS_LIMIT
from framework.testing import assert_allclose

import zoo.toy  # noqa: F401  (registers the tiny task)

TINY = os.path.join(os.path.dirname(__file__), "..", "..", "configs", "_test", "tiny.yaml")


def _tensors(*shapes, dtype=numpy.float32, seed=0):
    rng = numpy.random.default_rng(seed)
    return [framework.to_tensor(rng.standard_normal(s).astype(dtype), requires_grad=True) for s in shapes]


# every GEMM op: (name, input shapes, fn)
GEMMS = [
    ("matmul", [(6, 5, 7), (7, 4)], lambda x, y: framework.matmul(x, y)),
    ("matmul_broadcast_t", [(2, 1, 4, 7), (3, 5, 7)], lambda x, y: framework.matmul(x, y, transpose_y=True)),
    ("matmul_vector", [(7,), (3, 7, 4)], lambda x, y: framework.matmul(x, y)),
    ("bmm", [(3, 5, 7), (3, 7, 4)], lambda x, y: framework.bmm(x, y)),
    ("linear", [(2, 5, 7), (7, 4), (4,)], lambda x, w, b: F.linear(x, w, b)),
    ("linear_no_bias", [(5, 7), (7, 4)], lambda x, w: F.linear(x, w)),
    ("conv1d", [(2, 4, 9), (6, 2, 3), (6,)], lambda x, w, b: F.conv1d(x, w, b, padding=1, groups=2)),
    ("conv2d", [(2, 3, 8, 7), (5, 3, 3, 3), (5,)], lambda x, w, b: F.conv2d(x, w, b, stride=2, padding=1)),
    ("conv2d_no_bias", [(2, 3, 6, 6), (4, 3, 1, 1)], lambda x, w: F.conv2d(x, w)),
    ("conv3d", [(1, 2, 4, 5, 5), (3, 2, 2, 3, 3), (3,)], lambda x, w, b: F.conv3d(x, w, b, dilation=(1, 2, 1))),
]


def _run(fn, inputs, seed_grad):
    """Output array and input gradients of sum(fn(inputs) * seed_grad)."""
    for t in inputs:
        t.clear_grad()
    y = fn(*inputs)
    (y * framework.to_tensor(seed_grad)).sum().backward()
    return y, [t.grad for t in inputs]


@pytest.mark.parametrize("name, shapes, fn", GEMMS, ids=[g[0] for g in GEMMS])
def test_autocast_gemm_outputs_and_gradients_are_float32_and_close(name, shapes, fn):
    inputs = _tensors(*shapes)
    reference = fn(*inputs).numpy()
    seed_grad = numpy.random.default_rng(1).standard_normal(reference.shape).astype(numpy.float32)
    _, expected = _run(fn, inputs, seed_grad)
    with amp.autocast():
        y, grads = _run(fn, inputs, seed_grad)
    assert y.dtype == numpy.float32
    assert_allclose(y, reference, rtol=1e-2, atol=1e-2 * numpy.abs(reference).max(), msg=name)
    assert not numpy.array_equal(y.numpy(), reference)  # it did compute in float16
    for g, e in zip(grads, expected):
        assert g.dtype == numpy.float32
        assert_allclose(g, e, rtol=1e-2, atol=1e-2 * numpy.abs(e.numpy()).max(), msg=f"{name} grad")


def test_autocast_multiplies_in_float16():
    x = framework.to_tensor(numpy.array([[1 + 2. ** -12, 300.0]], dtype=numpy.float32))
    ones = framework.to_tensor(numpy.array([[1.0], [0.0]], dtype=numpy.float32))
    big = framework.to_tensor(numpy.array([[0.0], [300.0]], dtype=numpy.float32))
    with amp.autocast(), numpy.errstate(over="ignore"):
        assert framework.matmul(x, ones).item() == 1.0  # 1 + 2^-12 rounds to 1 in float16
        assert framework.matmul(x, big).item() == numpy.inf  # 90000 overflows float16
    assert framework.matmul(x, ones).item() == numpy.float32(1 + 2. ** -12)
    assert framework.matmul(x, big).item() == 90000.0


def test_conv_columns_are_kept_in_float16():
    x, w = _tensors((2, 3, 6, 6), (4, 3, 3, 3))
    with amp.autocast():
        y = F.conv2d(x, w)
    cols, saved_w, _ = y.creator.saved.arrays
    assert cols.dtype == numpy.float16 and saved_w.dtype == numpy.float16
    assert w.dtype == numpy.float32


def test_backward_outside_the_context_uses_the_forward_state():
    x, w, b = _tensors((3, 7), (7, 4), (4,))
    seed_grad = numpy.ones((3, 4), dtype=numpy.float32)
    with amp.autocast():
        _, inside = _run(F.linear, (x, w, b), seed_grad)
        y = F.linear(x, w, b)
    for t in (x, w, b):
        t.clear_grad()
    (y * framework.to_tensor(seed_grad)).sum().backward()  # after the context ended
    for t, g in zip((x, w, b), inside):
        numpy.testing.assert_array_equal(t.grad.numpy(), g.numpy())


@pytest.mark.parametrize("name, shapes, fn", GEMMS, ids=[g[0] for g in GEMMS])
def test_float64_is_never_autocast(name, shapes, fn):
    inputs = _tensors(*shapes, dtype=numpy.float64)
    seed_grad = numpy.random.default_rng(1).standard_normal(fn(*inputs).shape)
    y0, g0 = _run(fn, inputs, seed_grad)
    with amp.autocast():
        y1, g1 = _run(fn, inputs, seed_grad)
    assert y1.dtype == numpy.float64
    numpy.testing.assert_array_equal(y1.numpy(), y0.numpy())
    for a, b in zip(g1, g0):
        numpy.testing.assert_array_equal(a.numpy(), b.numpy())


def test_float16_inputs_stay_float16():
    x, w = _tensors((3, 5), (5, 2), dtype=numpy.float16)
    with amp.autocast():
        assert F.linear(x, w).dtype == numpy.float16


def test_autocast_nests_restores_and_is_per_thread():
    x, y = _tensors((4, 5), (5, 3))
    plain = framework.matmul(x, y).numpy()
    seen = []
    assert not amp.is_autocast_enabled()
    with amp.autocast():
        assert amp.is_autocast_enabled() and amp.autocast_dtype() == "float16"
        thread = threading.Thread(target=lambda: seen.append(amp.is_autocast_enabled()))
        thread.start()
        thread.join()
        with amp.autocast(False):
            assert not amp.is_autocast_enabled()
            numpy.testing.assert_array_equal(framework.matmul(x, y).numpy(), plain)
        assert amp.is_autocast_enabled()
    assert seen == [False] and not amp.is_autocast_enabled()
    numpy.testing.assert_array_equal(framework.matmul(x, y).numpy(), plain)


def test_autocast_as_decorator_and_bad_dtypes():
    @amp.autocast()
    def inside():
        return amp.is_autocast_enabled()

    assert inside() and not amp.is_autocast_enabled()
    with pytest.raises(ValueError, match="float16, bfloat16"):
        amp.autocast(dtype="float8").__enter__()
    x, y = _tensors((2, 3), (3, 2))
    with pytest.raises(ValueError, match="numpy has no bfloat16 dtype; use dtype='float16'"):
        with amp.autocast(dtype="bfloat16"):
            framework.matmul(x, y)
    assert not amp.is_autocast_enabled()


# ---- GradScaler ---------------------------------------------------------------

def _sgd(*values):
    params = [framework.to_tensor(numpy.array(v, dtype=numpy.float32), requires_grad=True) for v in values]
    return params, framework.optimizer.SGD(learning_rate=1.0, parameters=params)


def _set_grads(params, *grads):
    for p, g in zip(params, grads):
        p.grad = framework.to_tensor(numpy.array(g, dtype=numpy.float32))


def test_scaler_unscales_once_and_steps():
    (p, q), opt = _sgd([1.0, 2.0], [3.0])
    scaler = amp.GradScaler(init_scale=4.0)
    loss = framework.to_tensor(numpy.array(1.5, dtype=numpy.float32))
    scaled = scaler.scale(loss)
    assert scaled.item() == 6.0 and scaled.dtype == numpy.float32
    _set_grads((p, q), [4.0, 8.0], [2.0])
    original = p.grad.data
    scaler.unscale_(opt)
    numpy.testing.assert_array_equal(p.grad.numpy(), [1.0, 2.0])
    numpy.testing.assert_array_equal(original, [4.0, 8.0])  # replaced, not changed in place
    with pytest.raises(RuntimeError, match="already called"):
        scaler.unscale_(opt)
    assert scaler.step(opt) is True  # does not unscale a second time
    numpy.testing.assert_array_equal(p.numpy(), [0.0, 0.0])
    numpy.testing.assert_array_equal(q.numpy(), [2.5])
    scaler.update()
    assert scaler.get_scale() == 4.0


@pytest.mark.parametrize("bad", [numpy.inf, -numpy.inf, numpy.nan])
def test_scaler_skips_a_step_with_non_finite_grads_and_halves_the_scale(bad):
    (p, q), opt = _sgd([1.0, 2.0], [3.0])
    scaler = amp.GradScaler(init_scale=8.0, growth_interval=2)
    _set_grads((p, q), [1.0, 1.0], [bad])
    assert scaler.step(opt) is False
    numpy.testing.assert_array_equal(p.numpy(), [1.0, 2.0])
    numpy.testing.assert_array_equal(q.numpy(), [3.0])
    scaler.update()
    assert scaler.get_scale() == 4.0
    assert scaler.state_dict()["_growth_tracker"] == 0


def test_scaler_grows_after_growth_interval_clean_steps():
    (p,), opt = _sgd([0.0])
    scaler = amp.GradScaler(init_scale=2.0, growth_factor=4.0, growth_interval=3)
    scales = []
    for grad in (1.0, 1.0, numpy.inf, 1.0, 1.0, 1.0, 1.0):
        _set_grads((p,), [grad])
        scaler.step(opt)
        scaler.update()
        scales.append(scaler.get_scale())
    assert scales == [2.0, 2.0, 1.0, 1.0, 1.0, 4.0, 4.0]


def test_scaler_state_dict_round_trip_and_errors():
    (p,), opt = _sgd([0.0])
    scaler = amp.GradScaler(init_scale=16.0, growth_interval=5)
    for _ in range(3):
        _set_grads((p,), [1.0])
        scaler.step(opt)
        scaler.update()
    state = scaler.state_dict()
    assert state == {"scale": 16.0, "growth_factor": 2.0, "backoff_factor": 0.5, "growth_interval": 5,
                     "_growth_tracker": 3}
    other = amp.GradScaler()
    other.load_state_dict(state)
    assert other.state_dict() == state
    with pytest.raises(ValueError, match="missing keys"):
        other.load_state_dict({"scale": 2.0})
    with pytest.raises(ValueError, match="empty"):
        other.load_state_dict(amp.GradScaler(enabled=False).state_dict())
    with pytest.raises(RuntimeError, match="no unscale_"):
        other.update()
    with pytest.raises(ValueError, match="growth_factor must be > 1"):
        amp.GradScaler(growth_factor=0.5)


def test_disabled_scaler_passes_through():
    (p,), opt = _sgd([1.0])
    scaler = amp.GradScaler(enabled=False)
    loss = framework.to_tensor(numpy.array(2.0, dtype=numpy.float32))
    assert scaler.scale(loss) is loss and scaler.get_scale() == 1.0
    _set_grads((p,), [numpy.inf])
    assert scaler.step(opt) is True  # no checks: the optimizer steps
    scaler.update()
    assert scaler.state_dict() == {}


def test_clipping_acts_on_unscaled_gradients():
    clip = framework.optimizer.ClipGradByGlobalNorm(1.0)
    results = []
    for scale in (None, 1024.0):
        p = framework.to_tensor(numpy.zeros(2, dtype=numpy.float32), requires_grad=True)
        opt = framework.optimizer.SGD(learning_rate=1.0, parameters=[p], grad_clip=clip)
        grad = numpy.array([0.3, 0.4], dtype=numpy.float32)  # norm 0.5: below the clip when unscaled
        p.grad = framework.to_tensor(grad * (scale or 1.0))
        if scale is None:
            opt.step()
        else:
            amp.GradScaler(init_scale=scale).step(opt)
        results.append(p.numpy())
    numpy.testing.assert_array_equal(results[1], results[0])
    numpy.testing.assert_allclose(results[1], [-0.3, -0.4], rtol=1e-6)


# ---- Trainer and config -------------------------------------------------------

def _cfg(*overrides, amp_option=True):
    cfg = load_config(TINY, list(overrides))
    cfg["train"]["amp"] = amp_option
    return cfg


def test_tiny_config_trains_with_amp(tmp_path):
    cfg = load_config(TINY, ["train.amp=true"])
    trainer, summary = runner.train(cfg, output_dir=str(tmp_path), progress=False)
    losses = [record["train_loss"] for record in summary["history"]]
    assert trainer.amp_dtype == "float16" and trainer.scaler.get_scale() == 2. ** 15
    assert summary["best"] >= 0.9 and losses[-1] < losses[0] / 5
    assert summary["history"][-1]["loss_scale"] == 2. ** 15
    assert load_checkpoint(tmp_path / "last.npz")["trainer"]["scaler"]["scale"] == 2. ** 15


@pytest.mark.parametrize("split_run", [("train.epochs=1",), ("train.max_steps=21",)], ids=["epoch", "mid-epoch"])
def test_resume_with_amp_is_bit_identical(tmp_path, split_run):
    # a huge first scale: the first steps overflow and are skipped, then the scale grows every 4 steps
    option = {"init_scale": 2. ** 40, "growth_interval": 4}
    base = ("train.epochs=2", "model.dropout=0.3")
    runner.train(_cfg(*base, amp_option=option), output_dir=str(tmp_path / "whole"), progress=False)
    runner.train(_cfg(*base, *split_run, amp_option=option), output_dir=str(tmp_path / "split"), progress=False)
    runner.train(_cfg(*base, amp_option=option), output_dir=str(tmp_path / "split"), resume=True, progress=False)
    whole = load_checkpoint(tmp_path / "whole" / "last.npz")
    split = load_checkpoint(tmp_path / "split" / "last.npz")
    assert whole["trainer"]["skipped_steps"] > 0
    assert whole["trainer"]["scaler"] == split["trainer"]["scaler"]
    assert whole["trainer"]["skipped_steps"] == split["trainer"]["skipped_steps"]
    for key in whole["model"]:
        numpy.testing.assert_array_equal(whole["model"][key], split["model"][key], err_msg=key)


def _trainer(cfg, tmp_path, **kwargs):
    task = runner.build_task(cfg)
    train_cfg = runner.check_sections(cfg)
    loader = runner.build_loader(runner.build_dataset(cfg, "train"), task, train_cfg, training=True)
    optimizer = runner.build_optimizer(cfg, task.model, None)
    trainer = Trainer(task, optimizer, loader, output_dir=str(tmp_path), progress=False, **kwargs)
    trainer.progress.stream, trainer.progress.enabled = io.StringIO(), True
    return task, trainer


def test_overflowing_steps_are_skipped_and_logged(tmp_path):
    task, trainer = _trainer(_cfg(), tmp_path, max_steps=40, epochs=None, amp={"init_scale": 2. ** 40})
    before = {k: v.numpy().copy() for k, v in task.model.state_dict().items()}
    trainer.max_steps = 1
    trainer.fit()
    for key, value in task.model.state_dict().items():  # the first step overflowed: weights untouched
        numpy.testing.assert_array_equal(value.numpy(), before[key])
    trainer.max_steps = 40
    summary = trainer.fit()
    skipped = summary["skipped_steps"]
    assert 0 < skipped < 40 and trainer.scaler.get_scale() == 2. ** (40 - skipped)
    log = trainer.progress.stream.getvalue()
    assert "step 1: gradients overflowed at loss scale 1.09951e+12; step skipped, scale now 5.49756e+11" in log
    assert log.count("step skipped") == skipped


def test_non_finite_loss_under_amp_is_skipped_then_stops(tmp_path):
    task, trainer = _trainer(_cfg(), tmp_path, epochs=3, amp=True)
    real_loss, calls = task.loss, []

    def loss(batch):
        calls.append(1)
        value = real_loss(batch)
        return value * float("nan") if len(calls) == 7 or len(calls) > 20 else value

    task.loss = loss
    with pytest.raises(TrainingError) as info:
        trainer.fit()
    message = str(info.value)
    step = 20 + AMP_NONFINITE_LOSS_LIMIT
    assert f"loss is nan at step {step}" in message and f"the {AMP_NONFINITE_LOSS_LIMIT}th in a row" in message
    assert trainer.state["skipped_steps"] == AMP_NONFINITE_LOSS_LIMIT  # 1 at step 7, then the run before the stop
    assert "step 7: loss is nan at loss scale 32768; step skipped, scale now 16384" in trainer.progress.stream.getvalue()


def test_amp_config_errors_name_the_key():
    with pytest.raises(ConfigError, match="did you mean 'dtype'"):
        runner.train(_cfg(amp_option={"dtyp": "float16"}), progress=False)
    with pytest.raises(ConfigError, match="'init_scale' in .*must be a number"):
        runner.train(_cfg(amp_option={"init_scale": "big"}), progress=False)
    with pytest.raises(ConfigError, match="key 'amp': autocast: numpy has no bfloat16 dtype; use dtype='float16'"):
        runner.train(_cfg(amp_option={"dtype": "bfloat16"}), progress=False)
    with pytest.raises(ConfigError, match="'amp' in .* must be true or false or a mapping"):
        runner.check_sections(_cfg(amp_option="yes"))
