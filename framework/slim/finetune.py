"""Train a model that is already built (a pruned model, a distillation student) with the normal Trainer.

:func:`framework.engine.runner.train` builds its model from the config; a
compressed model exists only in memory, so :func:`finetune` takes the task as it
is and builds everything else — datasets, loaders, schedule, optimizer and
:class:`~framework.engine.trainer.Trainer` — from the config with the runner's
own builders, exactly as ``oar train`` would.
"""
from .. import random as fw_random
from ..config import ConfigError, location
from ..engine import runner
from ..engine.run_dir import make_output_dir
from ..engine.trainer import Trainer

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
    train_loader = runner.build_loader(train_set, task, train_cfg, training=True)
    eval_loader = runner.build_loader(eval_set, task, train_cfg, training=False) if eval_set is not None else None
    scheduler = runner.build_scheduler(cfg)
    optimizer = runner.build_optimizer(cfg, task.model, scheduler, train_cfg["grad_clip"])
    trainer = Trainer(task, optimizer, train_loader, eval_loader, scheduler=scheduler, lr_step=train_cfg["lr_step"],
                      epochs=train_cfg["epochs"], max_steps=train_cfg["max_steps"],
                      eval_every=train_cfg["eval_every"], metric=train_cfg["metric"],
                      metric_mode=train_cfg["metric_mode"], early_stop=train_cfg["early_stop"],
                      output_dir=output_dir, log_every=train_cfg["log_every"], device=device, config=cfg,
                      progress=progress)
    return trainer.fit()
