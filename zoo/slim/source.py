"""The model ``oar compress --model`` starts from: anything :func:`zoo.resolver.resolve` takes (a zoo name, a
run directory, an export directory) or a config (with weights), its task built, its traced program at hand,
and batches of its own data.

:class:`Source` holds the eager task, the resolved config (the card's config
with its overrides; a run's config with its files inside the run; or the
given config), where it came from (``origin``: the model as given or the
config path, with the weights' sha256) and the program the
model traces on a sample of its inputs (:func:`zoo.exported.trace_task`),
which the pruning graph and the FLOPs counter read.
"""
import dataclasses
import os

from framework import jit
from framework.config import load_config
from framework.engine import runner
from framework.engine.task import batch_size_of
from framework.fetch import sha256_of
from framework.slim import SlimError

from ..build import card_config, checked_weights, resolve_repo_files
from ..registration import register_everything
from ..exported import trace_task
from ..resolver import resolve
from ..tasks import TASK_TABLE, spec_of_type
from .measure import model_inputs, static_program

__all__ = ["Source", "open_source", "traced", "batches_of"]


@dataclasses.dataclass
class Source:
    """See the module docstring. ``kind``: the task kind of the zoo's table (``video``, ``sentiment`` …)."""
    task: object
    cfg: dict
    kind: str
    origin: dict
    program: object = None

    @property
    def model(self):
        return self.task.model


def _kind_of(cfg):
    """The zoo task of a config (the task table's entry for its ``task.type``), else the type itself."""
    task_type = (cfg.get("task") or {}).get("type")
    spec = spec_of_type(task_type)
    return spec.name if spec else task_type


def open_source(model, weights=None, overrides=(), pretrained=True):
    """The :class:`Source` of ``model``: a zoo name, a run or an export directory (its checked weights, or
    ``weights``; freshly initialised with ``pretrained=False``), or a config file (with ``weights``, a
    checkpoint, or none: the freshly built model); ``overrides`` apply to the config (a run's files stay the
    run's own)."""
    register_everything()
    if os.path.isfile(model):
        cfg = load_config(model, list(overrides))
        resolve_repo_files(cfg.get("task") or {})
        origin = {"config": model}
        kind = _kind_of(cfg)
    else:
        card = resolve(model)                            # an unknown name lists the close ones
        if card.kind != "trained":
            raise SlimError(f"--model: {model} is a {card.kind} model, not one a config trains; compress "
                            f"a trained model")
        cfg = card_config(card, overrides)
        weights = weights or (checked_weights(card) if pretrained else None)
        origin = {"model": model, "config": card.config, "overrides": list(card.overrides)}
        kind = card.task
    task = runner.build_task(cfg)
    if weights:
        runner.load_weights(task.model, weights)
        origin["weights_sha256"] = sha256_of(weights)
    task.model.eval()
    return Source(task, cfg, kind, origin)


def traced(source):
    """The program of ``source``'s model on one example (the model stays eager in the task): the zoo's
    sample input for its task kinds (a sentence, a pair, a generated video), else the first example of the
    config's data (test, eval or train split)."""
    if source.kind in TASK_TABLE:
        eager = source.task.model
        source.task.model = jit.to_static(eager, dynamic_axes=source.task.dynamic_axes, passes=jit.EXACT_PASSES)
        try:
            return trace_task(source.task, source.kind)
        finally:
            source.task.model = eager
    split = next((s for s in ("test", "eval", "train") if (source.cfg.get("data") or {}).get(s)), None)
    if split is None:
        raise SlimError("--model: the config has no data to take an example input from")
    inputs = model_inputs(source.task, batches_of(source, split, 1, "--model: data")[0])
    return static_program(source.task, tuple(a[:1] for a in inputs), passes=jit.EXACT_PASSES)


def batches_of(source, split, samples, setting):
    """Up to ``samples`` examples of ``split`` (``train``, ``eval`` or ``test``) of the source's config as a
    list of batches (eval batch size, in dataset order, the split's own transforms). ``setting``: the
    settings' prefix for errors (``quant.calibration``: ``…_split``, ``…_samples``)."""
    if split not in ("train", "eval", "test"):
        raise SlimError(f"{setting}_split: the split must be train, eval or test, got {split!r}")
    dataset = runner.build_dataset(source.cfg, split)
    if dataset is None:
        raise SlimError(f"{setting}_split: the model's config has no data.{split}")
    if samples is not None and samples < 1:
        raise SlimError(f"{setting}_samples: give at least one sample, got {samples}")
    train_cfg = runner.check_sections(source.cfg)
    loader = runner.build_loader(dataset, source.task, train_cfg, training=False)
    batches, count = [], 0
    for batch in loader:
        batches.append(batch)
        count += batch_size_of(batch)
        if samples is not None and count >= samples:
            break
    if not batches:
        raise SlimError(f"{setting}_split: data.{split} of the model's config is empty")
    return batches

