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

**A run directory is self-contained.** :func:`train` writes into its output
directory (rank 0), before the first step: ``config.yaml``, the resolved config
(overrides applied, ``${…}`` references resolved) in which the task's files
point at copies inside the directory (paths relative to it), those copies
(every vocabulary, label list, lexicon, tokeniser model or class-names file
the task read or built, :meth:`framework.engine.Task.save_assets`) and
``assets.json``, which records for each config key so rewritten the copy, its
sha256 and the value the config gave. Checkpoints carry the same record.
:func:`run_config` turns the config a user gives ``oar eval|infer`` into the
one to build the task from: the run's ``task`` and ``model`` sections (what
the weights were trained with) with the given data and train sections.
:func:`load_weights` with the task refuses weights whose recorded files differ
from those the task reads.
"""
import copy
import fnmatch
import json
import math
import os
import sys
import tempfile

import yaml

from .. import distributed
from .. import random as fw_random
from ..config import ConfigError, SOURCE_KEY, check_keys, check_type, load_config, location
from ..errors import describe_os_error
from ..fetch import sha256_of
from ..io import DataLoader, DistributedBatchSampler
from ..io.dataset import is_iterable_dataset
from ..optimizer import ClipGradByGlobalNorm
from ..progress import progress_bar
from ..registry import DATASETS, METRICS, MODELS, OPTIMIZERS, SCHEDULERS, TASKS
from .checkpoint import CheckpointError, OutputDirError, load_checkpoint, restore_model
from .trainer import AMP_OPTIONS, Trainer, amp_settings, evaluate

__all__ = ["TRAIN_DEFAULTS", "SECTIONS", "RUN_CONFIG", "RUN_ASSETS", "check_sections", "build_task",
           "build_dataset", "build_loader", "build_scheduler", "build_optimizer", "default_output_dir",
           "save_run", "run_config", "train", "evaluate_config", "infer", "load_weights", "load_task"]

RUN_CONFIG = "config.yaml"      # in a run directory: the resolved config, with the task's files copied beside it
RUN_ASSETS = "assets.json"      # in a run directory: the config keys naming those copies, sha256s, given values

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
_TRAIN_MINIMUM = {"epochs": 1, "max_steps": 1, "batch_size": 1, "eval_batch_size": 1, "eval_every": 1,
                  "early_stop": 1, "log_every": 1, "num_workers": 0, "prefetch": 1, "seed": 0}
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
    """One rule for every train setting: counts have a minimum, choices a list, ``grad_clip`` is positive."""
    if key in _TRAIN_MINIMUM and value < _TRAIN_MINIMUM[key]:
        raise ConfigError(f"train.{key} must be at least {_TRAIN_MINIMUM[key]}, got {value} ({where})")
    if key in _TRAIN_CHOICES and value not in _TRAIN_CHOICES[key]:
        raise ConfigError(f"train.{key} must be one of {', '.join(map(repr, _TRAIN_CHOICES[key]))}, "
                          f"got {value!r} ({where})")
    if key == "grad_clip" and value <= 0:
        raise ConfigError(f"train.grad_clip must be positive (or null for none), got {value} ({where})")


def build_task(cfg):
    """The task of ``cfg`` around the model of ``cfg`` (and the ``metrics`` list, when given)."""
    model = MODELS.build(cfg["model"], where=location(cfg, "model"))
    extra = {}
    if cfg.get("metrics"):
        extra["metrics"] = [METRICS.build(m, where=location(cfg, "metrics")) for m in cfg["metrics"]]
    return TASKS.build(cfg["task"], where=location(cfg, "task"), model=model, **extra)


def build_dataset(cfg, split):
    """``data.<split>`` built through DATASETS, or None when the config has no such split."""
    data = cfg.get("data") or {}
    check_keys(data, ("train", "eval", "test"), location(cfg, "data"))
    if not data.get(split):
        return None
    return DATASETS.build(data[split], where=location(cfg, f"data.{split}"))


def build_loader(dataset, task, train_cfg, training, rank=0, world_size=1):
    """A DataLoader over ``dataset`` with the task's collate function and the train section's options.

    With ``world_size`` > 1 it reads rank ``rank``'s shard and the batch sizes
    are global: in training each rank takes ``batch_size / world_size``
    samples of every global batch (DistributedBatchSampler); in evaluation the
    ranks split the samples without padding (ShardedBatchSampler).
    """
    batch_size = train_cfg["batch_size"] if training else (train_cfg["eval_batch_size"] or train_cfg["batch_size"])
    options = dict(num_workers=train_cfg["num_workers"], worker_type=train_cfg["worker_type"],
                   prefetch=train_cfg["prefetch"], collate_fn=getattr(task, "collate_fn", None), seed=train_cfg["seed"])
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
        _check_assets(task, state["assets"], path, cfg or {})


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


def _check_assets(task, recorded, path, cfg):
    """Raise CheckpointError when a file the task reads differs from the one recorded in checkpoint ``path``."""
    with tempfile.TemporaryDirectory(prefix="oar-assets-") as folder:
        current = _asset_record(task.save_assets(folder) or {}, folder)
    for key, entry in recorded.items():
        if key not in current or _listed(entry.get("sha256")) == _listed(current[key]["sha256"]):
            continue
        trained = ", ".join(os.path.join(os.path.dirname(os.path.abspath(path)), name)
                            for name in _listed(entry.get("value")) if name)
        given = _get_key(cfg, key)
        now = f"{given}" if given is not _MISSING and given is not None else \
            f"one the task built itself ({key} is not set in {cfg.get(SOURCE_KEY, 'the config')})"
        raise CheckpointError(f"the weights of {path} were trained with {trained} ({key}), but the task reads "
                              f"{now}, whose content differs; use the run's own files: give its directory as "
                              f"the output directory, whose {RUN_CONFIG} names them")


def _listed(value):
    return list(value) if isinstance(value, (list, tuple)) else [value]


def _asset_record(overrides, directory):
    """``{key: {"value": file name(s) relative to directory, "sha256": digest(s)}}`` of ``save_assets`` overrides."""
    record = {}
    for key, value in overrides.items():
        if key.partition(".")[0] not in ("task", "model") or not key.partition(".")[2]:
            raise ValueError(f"save_assets: override key {key!r} must name a key of the task or model section")
        files = _listed(value)
        names = [None if f is None else os.path.relpath(f, directory) for f in files]
        digests = [None if f is None else sha256_of(f) for f in files]
        plural = isinstance(value, (list, tuple))
        record[key] = {"value": names if plural else names[0], "sha256": digests if plural else digests[0]}
    return record


_MISSING = object()


def _get_key(cfg, key):
    node = cfg
    for part in key.split("."):
        if not isinstance(node, dict) or part not in node:
            return _MISSING
        node = node[part]
    return node


def _set_key(cfg, key, value):
    *parents, leaf = key.split(".")
    node = cfg
    for part in parents:
        if not isinstance(node.get(part), dict):
            node[part] = {}
        node = node[part]
    node[leaf] = value


def _delete_key(cfg, key):
    *parents, leaf = key.split(".")
    node = cfg
    for part in parents:
        node = node.get(part) if isinstance(node, dict) else None
    if isinstance(node, dict):
        node.pop(leaf, None)


def _plain(value):
    """``value`` with tuples made lists, recursively (what YAML and JSON write and read back)."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def _write_text(path, text):
    """Write ``text`` to ``path`` as UTF-8 through a temporary file in the same folder and a rename."""
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(os.path.abspath(path)),
                               prefix=f".{os.path.basename(path)}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)


def _make_output_dir(output_dir):
    """Create ``output_dir`` (and its parents); an OutputDirError names what is in the way."""
    try:
        os.makedirs(output_dir, exist_ok=True)
    except OSError as err:
        blocker = next((p for p in _ancestors(output_dir) if os.path.exists(p) and not os.path.isdir(p)), None)
        why = f"{blocker} is a file, not a directory" if blocker else describe_os_error(err)
        raise OutputDirError(f"cannot create the output directory {output_dir}: {why}") from None


def _ancestors(path):
    """``path`` and its parents, nearest first (``a/b/c``, ``a/b``, ``a``)."""
    path = os.path.normpath(path)
    while path and path not in (os.sep, "."):
        yield path
        parent = os.path.dirname(path)
        if parent == path:
            break
        path = parent


def save_run(cfg, task, output_dir):
    """Write the run files of ``cfg`` and its built ``task`` into ``output_dir`` (module docstring).

    Returns ``(run config, asset record)``: the config as written to
    ``config.yaml`` (asset paths relative to ``output_dir``) and ``{key:
    {"value", "sha256"}}`` for the checkpoints. An OSError while writing
    becomes an OutputDirError naming the directory.
    """
    _make_output_dir(output_dir)
    try:
        overrides = task.save_assets(output_dir) or {}
        assets = _asset_record(overrides, output_dir)
        run_cfg = _plain({k: v for k, v in cfg.items() if k != SOURCE_KEY})
        manifest = {}
        for key, entry in assets.items():
            given = _get_key(cfg, key)
            manifest[key] = {**entry, **({} if given is _MISSING else {"given": _plain(given)})}
            _set_key(run_cfg, key, entry["value"])
        source = cfg.get(SOURCE_KEY)
        header = (f"# The resolved config of this training run{f' (from {source})' if source else ''}: overrides "
                  f"applied, references\n# resolved; the task's files are copies in this directory, named "
                  f"relative to it ({RUN_ASSETS} lists them).\n")
        _write_text(os.path.join(output_dir, RUN_CONFIG),
                    header + yaml.safe_dump(run_cfg, sort_keys=False, allow_unicode=True))
        _write_text(os.path.join(output_dir, RUN_ASSETS), json.dumps(manifest, ensure_ascii=False, indent=1) + "\n")
    except OSError as err:
        raise OutputDirError(f"cannot write the run files into {output_dir}: {describe_os_error(err)}") from None
    return run_cfg, assets


def run_config(cfg, output_dir):
    """The config to evaluate or predict with the weights of the run in ``output_dir``.

    When ``output_dir/config.yaml`` exists, its ``task`` and ``model`` sections
    (what the weights were trained with) replace those of ``cfg``, their file
    paths (the copies listed in ``assets.json``) made to point into
    ``output_dir``; the other sections (data, train …) and ``cfg``'s source
    stay. A one-line note on stderr says so when the given task or model
    section differs from the one the run was trained from (copies aside).
    Without ``config.yaml``, ``cfg`` is returned unchanged.
    """
    path = os.path.join(output_dir, RUN_CONFIG)
    if not os.path.isfile(path):
        return cfg
    run = load_config(path)
    for section in ("task", "model"):
        if not isinstance(run.get(section), dict):
            raise ConfigError(f"{path}: missing section '{section}' (not a run's config?)")
    manifest = _read_manifest(output_dir)
    sections = {name: copy.deepcopy(run[name]) for name in ("task", "model")}
    trained = copy.deepcopy(sections)                 # the sections as the training config gave them
    for key, entry in manifest.items():
        value = entry.get("value")
        _set_key(sections, key, [_inside(v, output_dir) for v in value] if isinstance(value, list)
                 else _inside(value, output_dir))
        if "given" in entry:
            _set_key(trained, key, entry["given"])
        else:
            _delete_key(trained, key)
    given_is_run = os.path.abspath(str(cfg.get(SOURCE_KEY, ""))) == os.path.abspath(path)
    differences = [] if given_is_run else \
        _differences({name: _plain(cfg.get(name)) for name in ("task", "model")}, trained)
    if differences:
        shown = "; ".join(f"{key}: {theirs!r} in training, {ours!r} here" for key, theirs, ours in differences[:3])
        more = f" and {len(differences) - 3} more" if len(differences) > 3 else ""
        print(f"note: using the task and model sections of {path}, which the weights were trained with; "
              f"{cfg.get(SOURCE_KEY, 'the given config')} differs ({shown}{more})", file=sys.stderr)
    return {**cfg, **sections}


def _inside(value, directory):
    return value if value is None or os.path.isabs(value) else os.path.join(directory, value)


def _read_manifest(output_dir):
    """The ``assets.json`` record of a run directory ({} when there is none)."""
    path = os.path.join(output_dir, RUN_ASSETS)
    if not os.path.isfile(path):
        return {}
    try:
        with open(path, encoding="utf-8") as f:
            manifest = json.load(f)
    except (OSError, ValueError) as err:
        raise ConfigError(f"cannot read {path}: {err}") from None
    if not isinstance(manifest, dict) or not all(isinstance(v, dict) for v in manifest.values()):
        raise ConfigError(f"{path}: expected a mapping of config keys to file records")
    return manifest


def _differences(given, trained, prefix=""):
    """``[(dotted key, trained value, given value)]`` where the nested dicts ``trained`` and ``given`` differ."""
    if isinstance(given, dict) and isinstance(trained, dict):
        found = []
        for key in list(trained) + [k for k in given if k not in trained]:
            found += _differences(given.get(key), trained.get(key), f"{prefix}{key}.")
        return found
    return [] if given == trained else [(prefix.rstrip("."), trained, given)]


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
        _make_output_dir(output_dir)            # a directory that cannot be made fails now, not after an epoch
    fw_random.seed(train_cfg["seed"])
    task = build_task(cfg)
    init_weights = getattr(task.model, "init_weights", None)
    if callable(init_weights):
        init_weights()        # pretrained parts a model loads only for training (mmcv's convention); resume overwrites
    if device:
        task.model.to(device)
    train_set, eval_set = build_dataset(cfg, "train"), build_dataset(cfg, "eval")
    if train_set is None:
        raise ConfigError(f"{location(cfg, 'data')}: training needs data.train")
    run_cfg, assets = save_run(cfg, task, output_dir) if env.rank == 0 else (cfg, None)
    if env.world_size > 1:
        _make_data_parallel(cfg, train_cfg, task, (train_set, eval_set), env)
    shard = dict(rank=env.rank, world_size=env.world_size)
    train_loader = build_loader(train_set, task, train_cfg, training=True, **shard)
    eval_loader = build_loader(eval_set, task, train_cfg, training=False, **shard) if eval_set is not None else None
    scheduler = build_scheduler(cfg)
    optimizer = build_optimizer(cfg, task.model, scheduler, train_cfg["grad_clip"])
    trainer = Trainer(task, optimizer, train_loader, eval_loader, scheduler=scheduler, lr_step=train_cfg["lr_step"],
                      epochs=train_cfg["epochs"], max_steps=train_cfg["max_steps"],
                      eval_every=train_cfg["eval_every"], metric=train_cfg["metric"],
                      metric_mode=train_cfg["metric_mode"], early_stop=train_cfg["early_stop"],
                      output_dir=output_dir, log_every=train_cfg["log_every"], device=device,
                      config=run_cfg, progress=progress, amp=_checked_amp(cfg, train_cfg["amp"], device),
                      assets=assets)
    if resume:
        trainer.resume(None if resume is True else resume)
    return trainer, trainer.fit()


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
    if any(d is not None and is_iterable_dataset(d) for d in datasets):
        raise ConfigError(f"{location(cfg, 'data')}: training on {world} processes needs map-style datasets "
                          "(a stream cannot be sharded between ranks)")
    distributed.check_reducible(task.metrics())
    if train_cfg["sync_bn"]:
        task.model = distributed.convert_sync_batchnorm(task.model)
    task.model = distributed.DataParallel(task.model)
    if env.rank > 0:
        fw_random.seed(distributed.rank_seed(train_cfg["seed"], env.rank))


def evaluate_config(cfg, checkpoint, split="eval", device=None, progress=True):
    """Metrics of the checkpoint's weights on ``data.<split>`` (a progress bar on stderr with ``progress``)."""
    train_cfg = check_sections(cfg)
    task = build_task(cfg)
    load_weights(task.model, checkpoint, task=task, cfg=cfg)
    if device:
        task.model.to(device)
    dataset = build_dataset(cfg, split)
    if dataset is None:
        raise ConfigError(f"{location(cfg, 'data')}: no data.{split} to evaluate on")
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
