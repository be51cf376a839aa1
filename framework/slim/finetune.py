"""Train a model that is already built (a pruned model, a distillation student) with the normal Trainer.

:func:`framework.engine.runner.train` builds its model from the config; a
compressed model exists only in memory, so :func:`finetune` takes the task as it
is, reads the config's datasets and trains it with the Trainer
:func:`framework.engine.runner.build_trainer` assembles for ``oar train`` too.
"""
from .. import random as fw_random
from ..config import ConfigError, location
from ..engine import runner
from ..engine.run_dir import make_output_dir

__all__ = ["finetune"]


def finetune(task, cfg, output_dir, device=None, progress=True):
    """Train ``task`` (its model as it stands) on ``cfg``'s data with ``cfg``'s optimizer, schedule and
    ``train`` section, writing checkpoints and ``metrics.jsonl`` into ``output_dir``; returns the
    trainer's summary (best metric, checkpoint paths)."""
    train_cfg = runner.check_sections(cfg)
    make_output_dir(output_dir)
    fw_random.seed(train_cfg["seed"])
    train_set, eval_set = runner.build_dataset(cfg, "train"), runner.build_dataset(cfg, "eval")
    if train_set is None:
        raise ConfigError(f"{location(cfg, 'data')}: fine-tuning needs data.train")
    if device:
        task.model.to(device)
    return runner.build_trainer(cfg, task, (train_set, eval_set), output_dir, device=device, progress=progress).fit()
