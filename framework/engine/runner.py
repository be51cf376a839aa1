"""Config -> objects -> Trainer: what ``oar train|eval|infer`` and ``tools/*.py`` run.

A config has the sections ``task``, ``model``, ``data`` (``train``, ``eval``,
``test`` datasets), ``optimizer``, ``lr``, ``train`` and ``metrics``. Every
section builds through a registry, so its keys are checked against what the
builder takes. The domain packages must be imported first (``zoo`` does it) so
their names are registered.

Under an MPI launcher ``train`` runs data parallel: ``train.batch_size`` is
the global batch (each of N ranks takes batch_size / N), the model is wrapped
in ``DataParallel`` (with ``train.sync_bn``, its BatchNorms become
SyncBatchNorm), and each rank reads its own shard of the training and
evaluation data, so one config gives the same training on 1 or N processes.

``train.amp: true`` (or a mapping ``{dtype: float16, init_scale: 32768, …}``,
keys as ``framework.engine.trainer.AMP_OPTIONS``) trains in mixed precision.

:func:`train` makes its output directory self-contained and ``oar eval|infer``
read it back through :func:`run_config` (:mod:`framework.engine.run_dir`).
"""
import fnmatch
import math
import os

from .. import distributed
from .. import random as fw_random
from ..config import ConfigError, SOURCE_KEY, check_keys, check_type, location
from ..io import DataLoader, DistributedBatchSampler
from ..io.dataset import is_iterable_dataset
from ..optimizer import ClipGradByGlobalNorm
from ..progress import progress_bar
from ..ranges import COMMON, COUNT, NONNEGATIVE, POSITIVE, check_range
from ..registry import DATASETS, METRICS, MODELS, OPTIMIZERS, SCHEDULERS, TASKS
from .checkpoint import load_checkpoint, restore_model
from .label_counts import check_label_counts, fill_label_count
from .run_dir import RUN_ASSETS, RUN_CONFIG, check_assets, make_output_dir, run_config, save_run
from .test_file import with_test_file
from .trainer import AMP_OPTIONS, Trainer, amp_settings, evaluate

__all__ = ["TRAIN_DEFAULTS", "SECTIONS", "RUN_CONFIG", "RUN_ASSETS", "check_sections", "build_task", "build_trainer",
           "build_dataset", "build_loader", "build_scheduler", "build_optimizer", "default_output_dir",
           "save_run", "run_config", "with_test_file", "train", "evaluate_config", "infer", "load_weights", "load_task"]


SECTIONS = ("task", "model", "data", "optimizer", "lr", "train", "metrics")
TRAIN_DEFAULTS = {
    "epochs": 1, "max_steps": None, "batch_size": 32, "eval_batch_size": None, "eval_every": None,
    "metric": None, "metric_mode": "max", "early_stop": None, "log_every": 10, "seed": 0,
    "lr_step": "epoch", "grad_clip": None, "num_workers": 0, "worker_type": "thread", "prefetch": 2,
    "shuffle": True, "drop_last": False, "sync_bn": False, "amp": False,
}
_TRAIN_TYPES = {"epochs": int, "max_steps": int, "batch_size": int, "eval_batch_size": int, "eval_every": int,
                "metric": str, "metric_mode": str, "early_stop": int, "log_every": int, "seed": int,
                "lr_step": str, "grad_clip": float, "num_workers": int, "worker_type": str, "prefetch": int,
                "shuffle": bool, "drop_last": bool, "sync_bn": bool, "amp": (bool, dict)}
_TRAIN_RANGES = {**dict.fromkeys(("epochs", "max_steps", "batch_size", "eval_batch_size", "eval_every", "early_stop",
                                  "log_every", "prefetch"), COUNT),
                 "num_workers": NONNEGATIVE, "seed": NONNEGATIVE, "grad_clip": POSITIVE}
_TRAIN_CHOICES = {"metric_mode": ("max", "min"), "lr_step": ("epoch", "step"), "worker_type": ("thread", "process")}


def check_sections(cfg):
    """The train section with its defaults, after checking the config's sections and train keys.

    Unknown top-level sections or train keys are errors naming the key, the file
    and the closest key; so is a value of the wrong type, a count below its
    minimum (``batch_size``, ``epochs``, ``eval_every`` … at least 1,
    ``num_workers`` and ``seed`` at least 0), a non-positive ``grad_clip`` or a
    choice that is not one of its options (``metric_mode``, ``lr_step``,
    ``worker_type``).
    """
    check_keys({k: v for k, v in cfg.items() if k != SOURCE_KEY}, SECTIONS, cfg.get(SOURCE_KEY, "<config>"))
    for section in ("task", "model"):
        if section not in cfg:
            raise ConfigError(f"{cfg.get(SOURCE_KEY, '<config>')}: missing section '{section}'")
    train_cfg = cfg.get("train") or {}
    check_keys(train_cfg, TRAIN_DEFAULTS, location(cfg, "train"))
    for key, value in train_cfg.items():
        if value is not None:
            check_type(value, _TRAIN_TYPES[key], key, location(cfg, "train"))
            _check_value(key, value, location(cfg, "train"))
    return {**TRAIN_DEFAULTS, **train_cfg}


def _check_value(key, value, where):
    """One rule for every train setting: numbers have a range (counts a minimum, ``grad_clip`` is positive),
    choices a list."""
    if key in _TRAIN_RANGES:
        check_range(value, _TRAIN_RANGES[key], f"train.{key}", where)
    if key in _TRAIN_CHOICES and value not in _TRAIN_CHOICES[key]:
        raise ConfigError(f"train.{key} must be one of {', '.join(map(repr, _TRAIN_CHOICES[key]))}, "
                          f"got {value!r} ({where})")


def build_task(cfg):
    """The task of ``cfg`` around the model of ``cfg`` (and the ``metrics`` list, when given)."""
    model = MODELS.build(cfg["model"], where=location(cfg, "model"))
    extra = {}
    if cfg.get("metrics"):
        extra["metrics"] = [METRICS.build(m, where=location(cfg, "metrics")) for m in cfg["metrics"]]
    return TASKS.build(cfg["task"], where=location(cfg, "task"), model=model, **extra)


def build_dataset(cfg, split):
    """``data.<split>`` built through DATASETS, or None when the config has no such split.

    A dataset type that lists its ``SPLITS`` (the values its ``split`` key takes) has the section's ``split``
    checked first: another value is a ConfigError naming the key and the accepted values.
    """
    data = cfg.get("data") or {}
    check_keys(data, ("train", "eval", "test"), location(cfg, "data"))
    if not data.get(split):
        return None
    section, where = data[split], location(cfg, f"data.{split}")
    accepted = getattr(DATASETS.get(section.get("type"), where), "SPLITS", None) if isinstance(section, dict) \
        and "type" in section else None
    if accepted is not None and "split" in section and section["split"] not in accepted:
        raise ConfigError(f"data.{split}.split must be one of {', '.join(map(repr, accepted))}, got "
                          f"{section['split']!r} ({where}, type '{section['type']}')")
    return DATASETS.build(section, where=where)


def build_loader(dataset, task, train_cfg, training, rank=0, world_size=1):
    """A DataLoader over ``dataset`` with the task's collate function and the train section's options.

    With ``world_size`` > 1 it reads rank ``rank``'s shard and the batch sizes
    are global: in training each rank takes ``batch_size / world_size``
    samples of every global batch (DistributedBatchSampler); in evaluation the
    ranks split the samples without padding (ShardedBatchSampler). An iterable dataset (a
    :class:`~framework.io.shards.ShardDataset`) is read as it streams: it splits its shards over the ranks
    and shuffles within its own buffer, so the loader only batches it.
    """
    batch_size = train_cfg["batch_size"] if training else (train_cfg["eval_batch_size"] or train_cfg["batch_size"])
    options = dict(num_workers=train_cfg["num_workers"], worker_type=train_cfg["worker_type"],
                   prefetch=train_cfg["prefetch"], collate_fn=getattr(task, "collate_fn", None), seed=train_cfg["seed"])
    if is_iterable_dataset(dataset):        # a stream (tar shards): it splits itself over ranks and shuffles itself
        return DataLoader(dataset, batch_size=batch_size // world_size if training else
                          math.ceil(batch_size / world_size), drop_last=training and train_cfg["drop_last"], **options)
    if world_size == 1:
        return DataLoader(dataset, batch_size=batch_size, shuffle=training and train_cfg["shuffle"],
                          drop_last=training and train_cfg["drop_last"], **options)
    if training:
        sampler = DistributedBatchSampler(dataset, batch_size // world_size, rank, world_size,
                                          shuffle=train_cfg["shuffle"], seed=train_cfg["seed"],
                                          drop_last=train_cfg["drop_last"])
    else:
        sampler = distributed.ShardedBatchSampler(dataset, math.ceil(batch_size / world_size), rank, world_size)
    return DataLoader(dataset, batch_sampler=sampler, **options)


def build_scheduler(cfg):
    """The ``lr`` section as an LRScheduler (None when absent).

    Its ``learning_rate`` defaults to the optimizer's; a nested ``learning_rate:
    {type: …}`` builds an inner schedule (e.g. LinearWarmup around a decay).
    """
    lr_cfg = cfg.get("lr")
    if not lr_cfg:
        return None
    base = check_type((cfg.get("optimizer") or {}).get("learning_rate", 0.001), float, "learning_rate",
                      location(cfg, "optimizer"))
    check_range(base, COMMON["learning_rate"], "'learning_rate'", location(cfg, "optimizer"))

    def build(section, where):
        section = dict(section)
        inner = section.get("learning_rate", base)
        section["learning_rate"] = build(inner, where + ".learning_rate") if isinstance(inner, dict) else inner
        return SCHEDULERS.build(section, where=where)

    return build(lr_cfg, location(cfg, "lr"))


def build_optimizer(cfg, model, scheduler, grad_clip=None):
    """The ``optimizer`` section over ``model``'s parameters.

    ``groups: [{params: "embedding.*", learning_rate: 5.0}, …]`` puts the
    parameters whose names match the glob into a group with its own settings
    (``learning_rate`` multiplies the base rate); the rest form the first group.
    """
    opt_cfg = dict(cfg.get("optimizer") or {"type": "Adam"})
    groups_cfg = opt_cfg.pop("groups", None) or []
    named = list(model.named_parameters())
    taken, groups = set(), []
    for i, group in enumerate(groups_cfg):
        where = f"{location(cfg, 'optimizer')}.groups[{i}]"
        if not isinstance(group, dict) or "params" not in group:
            raise ConfigError(f"{where}: a group needs 'params' (a name glob)")
        params = [p for name, p in named if fnmatch.fnmatch(name, group["params"]) and id(p) not in taken]
        if not params:
            raise ConfigError(f"{where}: no parameter name matches {group['params']!r} "
                              f"(names look like {', '.join(n for n, _ in named[:3])})")
        taken.update(id(p) for p in params)
        groups.append({**{k: v for k, v in group.items() if k != "params"}, "params": params})
    rest = [p for _, p in named if id(p) not in taken]
    parameters = ([{"params": rest}] if rest else []) + groups if groups else rest
    extra = {"parameters": parameters, "grad_clip": ClipGradByGlobalNorm(grad_clip) if grad_clip else None}
    if scheduler is not None:
        opt_cfg.pop("learning_rate", None)
        extra["learning_rate"] = scheduler
    return OPTIMIZERS.build(opt_cfg, where=location(cfg, "optimizer"), **extra)


def default_output_dir(cfg):
    """``outputs/<config file stem>``."""
    stem = os.path.splitext(os.path.basename(cfg.get(SOURCE_KEY, "run")))[0]
    return os.path.join("outputs", stem)


def load_weights(model, path, task=None, cfg=None):
    """Load the model weights of checkpoint ``path`` into ``model``.

    A state dict that does not fit is a CheckpointError naming the parameter,
    the checkpoint's shape and the model's, and the key of ``cfg``'s model
    section that probably differs. With ``task`` (whose model is ``model``),
    the files it reads (vocabulary, labels, lexicons …, :meth:`Task.save_assets`)
    must be the ones the checkpoint was trained with, where the checkpoint
    records them (a run's checkpoints do, shipped weights do not): otherwise a
    CheckpointError names both.
    """
    state = load_checkpoint(path)
    restore_model(model, state, path, (cfg or {}).get("model"))
    if task is not None and state.get("assets"):
        check_assets(task, state["assets"], path, cfg or {})


def load_task(cfg, checkpoint, device=None):
    """The task of ``cfg`` with the weights of ``checkpoint`` (checked against its files, :func:`load_weights`),
    on ``device``, in eval mode: what ``oar infer`` predicts with."""
    task = build_task(cfg)
    if checkpoint:
        load_weights(task.model, checkpoint, task=task, cfg=cfg)
    if device:
        task.model.to(device)
    task.model.eval()
    task.device = device
    return task


def train(cfg, output_dir=None, resume=None, device=None, seed=None, progress=True):
    """Train from a resolved config; returns (trainer, summary).

    A model with an ``init_weights()`` method has it called once, after it is
    built and before any checkpoint is resumed. ``resume`` is None, True (the
    last checkpoint in ``output_dir``) or a path. Rank 0 writes the run files
    (:func:`save_run`) into ``output_dir`` before the first step.
    """
    env = distributed.init_parallel_env(device)
    train_cfg = check_sections(cfg)
    if seed is not None:
        train_cfg["seed"] = seed
    output_dir = output_dir or default_output_dir(cfg)
    if env.rank == 0:
        make_output_dir(output_dir)             # a directory that cannot be made fails now, not after an epoch
    fw_random.seed(train_cfg["seed"])
    train_set, eval_set = build_dataset(cfg, "train"), build_dataset(cfg, "eval")
    if train_set is None:
        raise ConfigError(f"{location(cfg, 'data')}: training needs data.train")
    cfg = fill_label_count(cfg, train_set)      # model.num_classes / num_tags from the data when not given
    task = build_task(cfg)
    check_label_counts(cfg, {"train": train_set, "eval": eval_set})
    init_weights = getattr(task.model, "init_weights", None)
    if callable(init_weights):
        init_weights()        # pretrained parts a model loads only for training (mmcv's convention); resume overwrites
    if device:
        task.model.to(device)
    run_cfg, assets = save_run(cfg, task, output_dir) if env.rank == 0 else (cfg, None)
    if env.world_size > 1:
        _make_data_parallel(cfg, train_cfg, task, (train_set, eval_set), env)
    trainer = build_trainer(cfg, task, (train_set, eval_set), output_dir, device=device, progress=progress,
                            config=run_cfg, assets=assets, rank=env.rank, world_size=env.world_size)
    if resume:
        trainer.resume(None if resume is True else resume)
    return trainer, trainer.fit()


def build_trainer(cfg, task, datasets, output_dir, device=None, progress=True, config=None, assets=None, rank=0,
                  world_size=1):
    """The :class:`Trainer` of ``task`` (its model as it stands) on ``datasets`` (``(train, eval or None)``)
    with ``cfg``'s optimizer, schedule and ``train`` section; training (:func:`train`) and compression
    fine-tuning (:func:`framework.slim.finetune`) both build theirs here.

    ``config``: the config recorded in the checkpoints (default ``cfg``); ``assets``: the run's asset record
    (:func:`save_run`); ``rank`` / ``world_size``: the data shard this process reads.
    """
    train_cfg = check_sections(cfg)
    train_set, eval_set = datasets
    shard = dict(rank=rank, world_size=world_size)
    train_loader = build_loader(train_set, task, train_cfg, training=True, **shard)
    eval_loader = build_loader(eval_set, task, train_cfg, training=False, **shard) if eval_set is not None else None
    scheduler = build_scheduler(cfg)
    optimizer = build_optimizer(cfg, task.model, scheduler, train_cfg["grad_clip"])
    return Trainer(task, optimizer, train_loader, eval_loader, scheduler=scheduler, lr_step=train_cfg["lr_step"],
                   epochs=train_cfg["epochs"], max_steps=train_cfg["max_steps"],
                   eval_every=train_cfg["eval_every"], metric=train_cfg["metric"],
                   metric_mode=train_cfg["metric_mode"], early_stop=train_cfg["early_stop"],
                   output_dir=output_dir, log_every=train_cfg["log_every"], device=device,
                   config=cfg if config is None else config, progress=progress,
                   amp=_checked_amp(cfg, train_cfg["amp"], device), assets=assets)


def _checked_amp(cfg, option, device):
    """``train.amp`` after checking its keys, types and values (dtype available on ``device``)."""
    where = location(cfg, "train") + ", key 'amp'"
    if isinstance(option, dict):
        check_keys(option, AMP_OPTIONS, where)
        for key, value in option.items():
            check_type(value, AMP_OPTIONS[key], key, where)
    try:
        amp_settings(option, device)
    except ValueError as err:
        raise ConfigError(f"{where}: {err}") from None
    return option


def _make_data_parallel(cfg, train_cfg, task, datasets, env):
    """Check that ``cfg`` can train on ``env.world_size`` ranks; wrap the task's model in DataParallel.

    Ranks other than 0 then reseed the framework's generator (dropout) from
    ``(seed, rank)``, so their random streams differ.
    """
    world = env.world_size
    if train_cfg["batch_size"] % world:
        raise ConfigError(f"{location(cfg, 'train')}: batch_size {train_cfg['batch_size']} is the global batch; "
                          f"it must divide evenly over the {world} processes")
    if any(d is not None and is_iterable_dataset(d) and not hasattr(d, "rank_lengths") for d in datasets):
        raise ConfigError(f"{location(cfg, 'data')}: training on {world} processes needs map-style datasets "
                          "or tar shards (ShardDataset); this stream cannot be split between ranks")
    train = datasets[0] if datasets else None
    if train is not None and hasattr(train, "rank_lengths"):
        lengths = train.rank_lengths()
        per_rank = train_cfg["batch_size"] // world
        steps = {n // per_rank if train_cfg["drop_last"] else -(-n // per_rank) for n in lengths}
        if len(steps) > 1:
            raise ConfigError(f"{location(cfg, 'data.train')}: the ranks' shards hold {lengths} samples, which "
                              f"give them different numbers of steps; write shards that split evenly over "
                              f"{world} processes (a multiple of {world} shards of equal size) or set "
                              f"train.drop_last")
    distributed.check_reducible(task.metrics())
    if train_cfg["sync_bn"]:
        task.model = distributed.convert_sync_batchnorm(task.model)
    task.model = distributed.DataParallel(task.model)
    if env.rank > 0:
        fw_random.seed(distributed.rank_seed(train_cfg["seed"], env.rank))


def evaluate_config(cfg, checkpoint, split="eval", device=None, progress=True, load=None):
    """Metrics of the checkpoint's weights on ``data.<split>`` (a progress bar on stderr with ``progress``).

    ``oar eval --test_file F`` makes F the ``data.test`` of ``cfg`` first (:func:`with_test_file`). The
    dataset is built and its label count checked against the model before the weights are read, so a
    bad file is reported first. ``load(task, checkpoint, cfg)`` reads weights another way than a plain
    checkpoint (the compressed weights of ``oar compress``).
    """
    train_cfg = check_sections(cfg)
    dataset = build_dataset(cfg, split)
    if dataset is None:
        raise ConfigError(f"{location(cfg, 'data')}: no data.{split} to evaluate on"
                          + ("; give your labelled test file with --test_file F" if split == "test" else ""))
    check_label_counts(cfg, {split: dataset})
    task = build_task(cfg)
    if load is None:
        load_weights(task.model, checkpoint, task=task, cfg=cfg)
    else:
        load(task, checkpoint, cfg)
    if device:
        task.model.to(device)
    return evaluate(task, build_loader(dataset, task, train_cfg, training=False), device, progress=progress)


def infer(cfg, checkpoint, inputs, device=None, batch_size=None, progress=True):
    """Predictions (a list of plain dicts) of the checkpoint's weights on raw ``inputs``, ``batch_size`` at a
    time (default: the eval batch size); a progress bar over the inputs on stderr with ``progress``."""
    train_cfg = check_sections(cfg)
    task = load_task(cfg, checkpoint, device)
    size = batch_size or train_cfg["eval_batch_size"] or train_cfg["batch_size"]
    results = []
    enabled = progress and distributed.get_rank() == 0
    with progress_bar(total=len(inputs), desc="infer", unit="input", enabled=enabled) as bar:
        for start in range(0, len(inputs), size):
            chunk = inputs[start:start + size]
            results.extend(task.predict_raw(chunk, device))
            bar.update(len(chunk))
    return results
