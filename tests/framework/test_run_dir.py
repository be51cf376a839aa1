"""A run directory is self-contained (config.yaml + the task's files), run_config, the checks of weights against
those files and of state-dict shapes, train-section value rules, output-directory errors and progress on stderr."""
import errno
import json
import os

import numpy
import pytest
import yaml

from framework.config import ConfigError, load_config
from framework.engine import CheckpointError, runner
from framework.engine import trainer as trainer_module
from framework.engine.checkpoint import OutputDirError, load_checkpoint
from framework.engine.task import copy_asset
from framework.errors import UserError
from framework.registry import TASKS

from zoo.toy import VectorClassification
from tests.framework.test_trainer import TINY


@TASKS.register()
class LabelledVectors(VectorClassification):
    """The toy task with class names read from a file (one per line): an asset the run directory must hold."""

    def __init__(self, model, labels: str = None, metrics=None):
        super().__init__(model, metrics)
        self.labels_file = labels
        with open(labels, encoding="utf-8") as f:
            self.names = f.read().split()

    def save_assets(self, directory):
        return {"task.labels": copy_asset(self.labels_file, directory, "labels.txt")}

    def postprocess(self, outputs):
        return [{**r, "name": self.names[r["label"]]} for r in super().postprocess(outputs)]


def _labels(path, names):
    path.write_text("\n".join(names) + "\n", encoding="utf-8")
    return str(path)


def _cfg(tmp_path, *overrides, names=("inner", "outer")):
    return load_config(TINY, ["task.type=LabelledVectors", f"task.labels={_labels(tmp_path / 'names.txt', names)}",
                              "train.epochs=2", *overrides])


POINTS = ["0 0", "0.1 -0.2", "2 2", "-1.5 1.2"]


def test_a_run_holds_its_resolved_config_and_its_files(tmp_path):
    run = tmp_path / "run"
    trainer, _ = runner.train(_cfg(tmp_path, "model.hidden=16"), output_dir=str(run), progress=False)
    written = yaml.safe_load((run / "config.yaml").read_text(encoding="utf-8"))
    assert written["task"] == {"type": "LabelledVectors", "labels": "labels.txt"}     # relative to the run dir
    assert written["model"]["hidden"] == 16 and written["train"]["epochs"] == 2       # overrides applied
    assert (run / "labels.txt").read_text(encoding="utf-8") == "inner\nouter\n"
    manifest = json.loads((run / "assets.json").read_text(encoding="utf-8"))
    assert manifest["task.labels"]["value"] == "labels.txt"
    assert manifest["task.labels"]["given"] == os.path.join("..", "names.txt")      # relative to the run dir
    assert len(manifest["task.labels"]["sha256"]) == 64
    for name in ("best.npz", "last.npz"):                                             # checkpoints carry the record
        state = load_checkpoint(str(run / name))
        assert state["assets"]["task.labels"] == {k: manifest["task.labels"][k] for k in ("value", "sha256")}
        assert json.loads(state["config"])["task"]["labels"] == "labels.txt"


def test_run_config_uses_what_the_weights_were_trained_with(tmp_path, capsys):
    run = str(tmp_path / "run")
    trainer, _ = runner.train(_cfg(tmp_path, "model.hidden=16"), output_dir=run, progress=False)
    runner.load_weights(trainer.task.model, os.path.join(run, "best.npz"))
    expected = trainer.task.predict(POINTS)
    (tmp_path / "names.txt").unlink()                                   # the run does not need the original file
    plain = load_config(TINY, ["task.type=LabelledVectors", "task.labels=elsewhere.txt"])
    capsys.readouterr()
    cfg = runner.run_config(plain, run)
    note = capsys.readouterr()
    assert cfg["task"] == {"type": "LabelledVectors", "labels": os.path.join(run, "labels.txt")}
    assert cfg["model"]["hidden"] == 16 and cfg["train"] == plain["train"] and cfg["data"] == plain["data"]
    assert note.out == "" and note.err.count("\n") == 1
    assert "model.hidden: 16 in training, 32 here" in note.err and "task.labels" in note.err
    assert runner.infer(cfg, os.path.join(run, "best.npz"), POINTS, progress=False) == expected
    assert [r["name"] for r in expected] == [("inner", "outer")[r["label"]] for r in expected]
    same = _cfg(tmp_path, "model.hidden=16")                            # the training config itself: no note
    capsys.readouterr()
    runner.run_config(same, run)
    assert capsys.readouterr().err == ""
    assert runner.run_config(plain, str(tmp_path / "no_run")) is plain  # no config.yaml: unchanged


def test_weights_and_files_that_disagree_are_refused(tmp_path):
    run = str(tmp_path / "run")
    runner.train(_cfg(tmp_path), output_dir=run, progress=False)
    other = _cfg(tmp_path / "..", names=("outer", "inner"))             # the same model, other class names
    with pytest.raises(CheckpointError) as info:
        runner.infer(other, os.path.join(run, "best.npz"), POINTS, progress=False)
    message = str(info.value)
    assert os.path.join(run, "labels.txt") in message and other["task"]["labels"] in message
    assert "task.labels" in message and "\n" not in message
    with pytest.raises(CheckpointError, match="labels.txt"):
        runner.evaluate_config(other, os.path.join(run, "best.npz"), progress=False)
    assert runner.evaluate_config(runner.run_config(other, run), os.path.join(run, "best.npz"),
                                  progress=False)["acc"] > 0.5


def test_a_state_dict_that_does_not_fit_names_the_parameter_shapes_and_key(tmp_path):
    runner.train(load_config(TINY, ["train.epochs=1"]), output_dir=str(tmp_path), progress=False)
    cfg = load_config(TINY, ["model.hidden=16"])
    with pytest.raises(CheckpointError) as info:
        runner.load_weights(runner.build_task(cfg).model, str(tmp_path / "last.npz"), cfg=cfg)
    assert str(info.value) == (f"checkpoint {tmp_path / 'last.npz'} does not fit this model: parameter "
                               "'net.0.weight' has shape (2, 32) in the checkpoint and (2, 16) in the model; "
                               "model.hidden (16 here) probably differs from the value it was trained with (32)")
    cfg = load_config(TINY, ["model.num_layers=3"])
    with pytest.raises(CheckpointError, match=r"the checkpoint lacks 'net\.6\.weight', 'net\.6\.bias'; it was "
                                              r"probably trained with another model type or layout "
                                              r"\(model.type is 'MLP' here\)$"):
        runner.load_weights(runner.build_task(cfg).model, str(tmp_path / "last.npz"), cfg=cfg)


@pytest.mark.parametrize("override, message", [
    ("train.batch_size=0", "train.batch_size must be at least 1, got 0"),
    ("train.epochs=0", "train.epochs must be at least 1, got 0"),
    ("train.eval_every=0", "train.eval_every must be at least 1, got 0"),
    ("train.eval_batch_size=-4", "train.eval_batch_size must be at least 1, got -4"),
    ("train.log_every=0", "train.log_every must be at least 1, got 0"),
    ("train.num_workers=-1", "train.num_workers must be at least 0, got -1"),
    ("train.lr_step=batch", "train.lr_step must be one of 'epoch', 'step', got 'batch'"),
    ("train.grad_clip=0.0", "train.grad_clip must be positive"),
])
def test_train_values_are_checked_by_one_rule(override, message):
    with pytest.raises(ConfigError) as info:
        runner.train(load_config(TINY, [override]), progress=False)
    assert message in str(info.value) and TINY in str(info.value) and "section 'train'" in str(info.value)


def test_an_output_dir_that_cannot_be_made_is_one_clear_error(tmp_path):
    blocker = tmp_path / "notes.txt"
    blocker.write_text("a file\n")
    for output_dir in (blocker / "run", blocker):
        with pytest.raises(OutputDirError) as info:
            runner.train(load_config(TINY), output_dir=str(output_dir), progress=False)
        assert isinstance(info.value, UserError) and isinstance(info.value, OSError)
        assert str(info.value) == f"cannot create the output directory {output_dir}: {blocker} is a file, " \
                                  "not a directory"


def test_a_checkpoint_that_cannot_be_written_names_its_path(tmp_path, monkeypatch):
    def full_disk(path, *args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device", path)

    monkeypatch.setattr(trainer_module, "save_checkpoint", full_disk)
    with pytest.raises(OutputDirError) as info:
        runner.train(load_config(TINY, ["train.epochs=1"]), output_dir=str(tmp_path), progress=False)
    path = tmp_path / "last.npz"
    assert str(info.value) == f"cannot write the checkpoint {path}: No space left on device: {path}"


def test_training_shows_its_figures_on_stderr_only(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("OAR_PROGRESS", raising=False)           # stderr is not a terminal here: plain lines
    runner.train(load_config(TINY, ["train.epochs=2"]), output_dir=str(tmp_path / "plain"))
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.splitlines()
    steps = [line for line in lines if line.startswith("epoch ")]
    assert [line.split()[:4] for line in steps] == [["epoch", "1/2", "step", "8/32"], ["epoch", "1/2", "step", "16/32"],
                                                    ["epoch", "2/2", "step", "24/32"],
                                                    ["epoch", "2/2", "step", "32/32"]]
    assert all(" loss " in line and " lr " in line and line.endswith(" samples/s") for line in steps)
    assert [line.split(":")[0] for line in lines if line.startswith("eval")] == ["eval at step 16", "eval at step 32"]
    monkeypatch.setenv("OAR_PROGRESS", "1")                     # a bar (as on a terminal): tqdm's, on stderr
    runner.train(load_config(TINY, ["train.epochs=2"]), output_dir=str(tmp_path / "bar"))
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "\repoch 1/2:   0%|" in captured.err and "/32 [" in captured.err     # tqdm's bar, from step 0
    assert "eval at step 32: acc" in captured.err and "step 8/32 loss" not in captured.err


def test_evaluation_and_inference_show_a_bar_on_stderr(tmp_path, capsys, monkeypatch):
    runner.train(load_config(TINY, ["train.epochs=1"]), output_dir=str(tmp_path), progress=False)
    monkeypatch.setenv("OAR_PROGRESS", "1")
    capsys.readouterr()
    metrics = runner.evaluate_config(load_config(TINY), str(tmp_path / "best.npz"))
    captured = capsys.readouterr()
    assert captured.out == "" and "\reval:   0%|" in captured.err and "/8 [" in captured.err and metrics["acc"] > 0.5
    points = [f"{x} {y}" for x, y in numpy.random.default_rng(0).normal(size=(50, 2)).round(3)]
    results = runner.infer(load_config(TINY), str(tmp_path / "best.npz"), points, batch_size=16)
    captured = capsys.readouterr()
    assert captured.out == "" and "\rinfer:   0%|" in captured.err and "/50 [" in captured.err and len(results) == 50
    monkeypatch.setenv("OAR_PROGRESS", "0")
    assert runner.infer(load_config(TINY), str(tmp_path / "best.npz"), points, batch_size=16) == results
    assert capsys.readouterr().err == ""
