"""The Trainer: exact resume, best checkpoint, early stop, NaN stop, checkpoint mismatch."""
import json
import os

import numpy
import pytest

import framework
from framework.config import load_config
from framework.engine import CheckpointError, Trainer, TrainingError, runner
from framework.engine.checkpoint import load_checkpoint
from framework.engine.metrics import Metric
from framework.io import DataLoader

import zoo.toy  # noqa: F401  (registers the tiny task)

TINY = os.path.join(os.path.dirname(__file__), "..", "..", "configs", "_test", "tiny.yaml")


def _cfg(*overrides):
    return load_config(TINY, list(overrides))


def _weights(path):
    return load_checkpoint(path)["model"]


def _assert_same_weights(a, b):
    assert sorted(a) == sorted(b)
    for key in a:
        numpy.testing.assert_array_equal(a[key], b[key], err_msg=key)


def test_tiny_config_trains_to_high_accuracy(tmp_path):
    trainer, summary = runner.train(_cfg(), output_dir=str(tmp_path), progress=False)
    assert summary["epoch"] == 8
    assert summary["best"] >= 0.9
    lines = [json.loads(l) for l in open(tmp_path / "metrics.jsonl")]
    assert len(lines) == 8 and [l["step"] for l in lines] == [16 * (i + 1) for i in range(8)]
    assert (tmp_path / "best.npz").exists() and (tmp_path / "last.npz").exists()


@pytest.mark.parametrize("split_run", [("train.epochs=1",), ("train.max_steps=21",)], ids=["epoch", "mid-epoch"])
def test_resume_is_bit_identical(tmp_path, split_run):
    base = ("train.epochs=2", "model.dropout=0.3")
    runner.train(_cfg(*base), output_dir=str(tmp_path / "whole"), progress=False)
    runner.train(_cfg(*base, *split_run), output_dir=str(tmp_path / "split"), progress=False)
    runner.train(_cfg(*base), output_dir=str(tmp_path / "split"), resume=True, progress=False)
    _assert_same_weights(_weights(tmp_path / "whole" / "last.npz"), _weights(tmp_path / "split" / "last.npz"))
    whole = load_checkpoint(tmp_path / "whole" / "last.npz")
    split = load_checkpoint(tmp_path / "split" / "last.npz")
    for key in whole["optimizer"]["state"]["group0"]:
        for name, value in whole["optimizer"]["state"]["group0"][key].items():
            numpy.testing.assert_array_equal(value, split["optimizer"]["state"]["group0"][key][name])


def test_best_checkpoint_holds_the_best_evaluation(tmp_path):
    runner.train(_cfg("train.epochs=3", "train.eval_every=5"), output_dir=str(tmp_path), progress=False)
    records = [json.loads(l) for l in open(tmp_path / "metrics.jsonl")]
    best = max(records, key=lambda r: r["acc"])
    first_best_step = next(r["step"] for r in records if r["acc"] == best["acc"])
    state = load_checkpoint(tmp_path / "best.npz")
    assert int(state["trainer"]["best_step"]) == first_best_step
    metrics = runner.evaluate_config(_cfg(), str(tmp_path / "best.npz"), split="eval")
    assert metrics["acc"] == pytest.approx(best["acc"])


def test_steps_after_the_last_multiple_of_eval_every_are_evaluated(tmp_path):
    """512 samples / 32 = 16 steps an epoch; 3 epochs with eval_every=5 evaluate at 5 … 45 and at 48."""
    runner.train(_cfg("train.epochs=3", "train.eval_every=5"), output_dir=str(tmp_path), progress=False)
    steps = [json.loads(line)["step"] for line in open(tmp_path / "metrics.jsonl")]
    assert steps == [5, 10, 15, 20, 25, 30, 35, 40, 45, 48]
    assert int(load_checkpoint(tmp_path / "last.npz")["trainer"]["step"]) == 48


class _Constant(Metric):
    def reset(self):
        pass

    def update(self, outputs, batch):
        pass

    def compute(self):
        return {"const": 1.0}


def _trainer(cfg, tmp_path, **kwargs):
    task = runner.build_task(cfg)
    train_cfg = runner.check_sections(cfg)
    loader = runner.build_loader(runner.build_dataset(cfg, "train"), task, train_cfg, training=True)
    eval_loader = runner.build_loader(runner.build_dataset(cfg, "eval"), task, train_cfg, training=False)
    optimizer = runner.build_optimizer(cfg, task.model, None)
    return task, Trainer(task, optimizer, loader, eval_loader, output_dir=str(tmp_path), progress=False, **kwargs)


def test_early_stop_after_patience(tmp_path):
    task, trainer = _trainer(_cfg(), tmp_path, epochs=10, eval_every=4, early_stop=2)
    task.metrics = lambda: [_Constant()]
    summary = trainer.fit()
    assert summary["stopped_early"] and summary["step"] == 12  # evals at 4 (best), 8, 12 -> stop


def test_nan_loss_stops_with_step_and_last_checkpoint(tmp_path):
    task, trainer = _trainer(_cfg(), tmp_path, epochs=3, eval_every=5)
    real_loss, calls = task.loss, []

    def loss(batch):
        calls.append(1)
        value = real_loss(batch)
        return value * float("nan") if len(calls) == 7 else value

    task.loss = loss
    with pytest.raises(TrainingError) as info:
        trainer.fit()
    message = str(info.value)
    assert "nan" in message and "step 7" in message and str(tmp_path / "last.npz") in message
    assert int(load_checkpoint(tmp_path / "last.npz")["trainer"]["step"]) == 5


def test_checkpoint_of_another_model_is_refused(tmp_path):
    runner.train(_cfg("train.epochs=1"), output_dir=str(tmp_path), progress=False)
    with pytest.raises(CheckpointError) as info:
        runner.evaluate_config(_cfg("model.hidden=8"), str(tmp_path / "last.npz"))
    assert "does not fit this model" in str(info.value) and "net.0.weight" in str(info.value)


def test_unknown_train_key_names_the_closest():
    with pytest.raises(framework.config.ConfigError) as info:
        runner.check_sections(_cfg("train.epoch=3"))
    assert "epoch" in str(info.value) and "did you mean 'epochs'" in str(info.value)


def test_trainer_without_eval_loader_saves_last(tmp_path):
    cfg = _cfg()
    task = runner.build_task(cfg)
    loader = DataLoader(runner.build_dataset(cfg, "train"), batch_size=64)
    optimizer = framework.optimizer.SGD(learning_rate=0.1, parameters=task.model.parameters())
    summary = Trainer(task, optimizer, loader, max_steps=3, epochs=None, output_dir=str(tmp_path),
                      progress=False).fit()
    assert summary["step"] == 3 and (tmp_path / "last.npz").exists()


def test_plot_writes_a_png_of_the_curves(tmp_path):
    pytest.importorskip("matplotlib")
    from framework.engine.plot import plot_curves
    runner.train(_cfg("train.epochs=2"), output_dir=str(tmp_path), progress=False)
    png = plot_curves(str(tmp_path / "metrics.jsonl"), str(tmp_path / "curves.png"))
    with open(png, "rb") as f:
        assert f.read(8) == b"\x89PNG\r\n\x1a\n"
