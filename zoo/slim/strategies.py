"""The three strategies of ``oar compress``, each on a :class:`~zoo.slim.source.Source`, writing into a folder.

Each returns ``(recipe, notes)``: the recipe saved with the weights
(:func:`framework.slim.save_compressed`) and a dict for the report. The model
of ``source.task`` is compressed in place.

- :func:`prune`: channel groups of the traced model, the layers chosen
  (``prune.layers``), a plan (uniform or from the sensitivity table measured on
  ``dev_samples`` examples of ``dev_split``) meeting ``flops_target`` with widths
  that are multiples of ``channel_multiple``, the surgery,
  then fine-tuning with the model's config and the ``finetune`` overrides.
  ``plan.json``, ``sensitivity.json`` and ``sensitivity.md`` are written.
- :func:`quantize`: calibration on ``calibration_samples`` examples of
  ``calibration_split``, then :func:`framework.slim.int8.quantize`.
- :func:`distill`: the teacher zoo model (``best``: the card of the student's
  task with the highest headline test metric), the distillation task and the
  normal Trainer.
"""
import difflib
import json
import os

from framework.config import apply_overrides, resolve_references
from framework.engine import runner
from framework.engine.run_dir import best_checkpoint
from framework.engine.task import to_tensors
from framework.errors import UserError
from framework.serialization import atomic_write
from framework.slim import DistillationTask, SlimError, channel_groups, costs, int8
from framework.slim.finetune import finetune
from framework.slim.plan import aligned, pruned_macs, sensitivity_plan, uniform_plan
from framework.slim.prune import apply, kept_channels, named_tensors
from framework.slim.sensitivity import drops, sensitivities, table_text

from ..catalog import cards
from ..tasks import TASK_TABLE
from .source import batches_of, open_source, traced

__all__ = ["prune", "quantize", "distill", "finetune_config", "best_teacher"]


def _write_json(path, value):
    with atomic_write(path) as f:
        json.dump(value, f, indent=1, sort_keys=False)
        f.write("\n")


def finetune_config(source, overrides, notes):
    """The source's config with the ``finetune`` overrides applied (and ``${…}`` references resolved). An
    override of a section the model's config does not have (``lr.T_max`` for a model trained without a
    schedule) is left out and listed in ``notes["finetune_left_out"]``."""
    kept = [item for item in overrides if item.partition("=")[0].partition(".")[0] in source.cfg]
    left_out = [item for item in overrides if item not in kept]
    if left_out:
        notes["finetune_left_out"] = {"overrides": left_out, "why": "the model's config has no such section"}
    return resolve_references(apply_overrides(source.cfg, kept), source.cfg.get("_source_", "<config>"))


def _chosen(groups, layers):
    """The prunable groups named by ``prune.layers`` (all prunable ones for None); unknown names are errors."""
    prunable = [g for g in groups if g.prunable]
    if layers is None:
        return prunable
    by_name = {g.name: g for g in groups}
    for name in layers:
        if name not in by_name:
            close = difflib.get_close_matches(name, list(by_name), n=3, cutoff=0.5)
            hint = f"; did you mean {', '.join(close)}?" if close else ""
            raise SlimError(f"prune.layers: the model has no prunable layer {name!r}{hint} "
                            f"(prunable: {', '.join(g.name for g in prunable)})")
        if not by_name[name].prunable:
            raise SlimError(f"prune.layers: {name!r} cannot be pruned: {by_name[name].blocked}")
    return [by_name[name] for name in layers]


def _metric_name(source):
    metric = runner.check_sections(source.cfg).get("metric")
    if not metric:
        raise SlimError("prune: the model's config names no train.metric to measure sensitivities with")
    return metric


def prune(source, settings, output_dir, device=None, progress=True):
    """Prune ``source``'s model (module docstring); returns ``(recipe, notes)``."""
    s = settings["prune"]
    program = traced(source)
    groups = channel_groups(program, named_tensors(source.model))
    chosen = _chosen(groups, s["layers"])
    if not chosen:
        raise SlimError("prune: no layer of this model can be pruned (every channel group is blocked)")
    listed = [g for g in groups if g in chosen or not g.prunable]
    node_costs, target, notes, multiple = costs(program), s["flops_target"], {}, s["channel_multiple"]
    if s["ratio"] is not None:
        plan = aligned(groups, {g.name: s["ratio"] for g in chosen}, multiple)
    elif s["mode"] == "uniform":
        plan = uniform_plan(node_costs, [g for g in groups if g in chosen], target, s["max_ratio"],
                            multiple=multiple)
    else:
        dev = [to_tensors(b, device) for b in batches_of(source, s["dev_split"], s["dev_samples"],
                                                         "prune.dev")]
        metric = _metric_name(source)
        evaluate = lambda: runner.evaluate(source.task, dev, device)[metric]          # noqa: E731
        baseline, table = sensitivities(source.model, chosen, evaluate, s["ratios"], progress)
        plan = sensitivity_plan(node_costs, listed, drops(baseline, table), target, multiple=multiple)
        _write_json(os.path.join(output_dir, "sensitivity.json"),
                    {"metric": metric, "split": s["dev_split"], "samples": sum(len(b[next(iter(b))]) for b in dev),
                     "unpruned": baseline, "table": {k: {str(r): v for r, v in row.items()} for k, row in
                                                     table.items()}})
        with atomic_write(os.path.join(output_dir, "sensitivity.md")) as f:
            f.write(f"Sensitivity ({metric} on {s['dev_split']}, L1-norm filter pruning)\n\n")
            f.write(table_text(baseline, table))
        notes["sensitivity_baseline"] = baseline
    kept = kept_channels(source.model, groups, plan, "prune.ratio" if s["ratio"] is not None else "prune.ratios")
    before = sum(c.macs for c in node_costs)
    after = pruned_macs(node_costs, groups, plan)
    _write_json(os.path.join(output_dir, "plan.json"),
                {"mode": "uniform" if s["ratio"] is not None else s["mode"], "flops_target": target,
                 "macs_before": before, "macs_after": after, "ratios": plan,
                 "channels": {g.name: [g.size, len(kept.get(g.name, range(g.size)))] for g in groups if g.prunable},
                 "blocked": {g.name: g.blocked for g in groups if not g.prunable}})
    apply(source.model, groups, kept)
    notes.update(plan=plan, macs_removed=1.0 - after / before)
    notes["finetune"] = _train(source.task, finetune_config(source, settings["finetune"], notes),
                               os.path.join(output_dir, "finetune"), device, progress)
    return {"pruned": {"ratios": plan, "source": source.origin}}, notes


def _train(task, cfg, run_dir, device, progress):
    """Train ``task`` on ``cfg`` into ``run_dir`` and keep the best checkpoint's weights in the model."""
    summary = finetune(task, cfg, run_dir, device, progress)
    best = best_checkpoint(run_dir)
    if os.path.isfile(best):
        runner.load_weights(task.model, best)
    task.model.eval()
    return {k: v for k, v in summary.items() if k != "history"}


def _runner(task):
    """``run_batch(batch)``: the task's prediction on a batch of Tensors; a batch this model cannot take is
    a SlimError (calibration data of the wrong kind)."""
    def run(batch):
        try:
            return task.predict_batch(batch)
        except (KeyError, TypeError, ValueError) as err:
            if isinstance(err, UserError):
                raise
            raise SlimError(f"quant.calibration_split: the calibration batches do not fit this model "
                            f"({type(err).__name__}: {err})") from None
    return run


def quantize(source, settings, output_dir, device=None, progress=True):
    """Post-training int8 quantisation of ``source``'s model (module docstring); returns ``(recipe, notes)``."""
    s = settings["quant"]
    batches = [to_tensors(b, device) for b in batches_of(source, s["calibration_split"], s["calibration_samples"],
                                                         "quant.calibration")]
    recipe = int8.quantize(source.model, _runner(source.task), batches, s["activation"])
    counted = {"weights": len(recipe["weights"]),
               "activations": sum(site["activation"] for site in recipe["weights"].values())}
    return {"int8": recipe, "source": source.origin}, {"quantised": counted, "calibration": {
        "split": s["calibration_split"], "samples": sum(len(b[next(iter(b))]) for b in batches),
        "method": s["activation"]}}


def best_teacher(kind, exclude=()):
    """The card of task ``kind`` with the highest first headline test metric (not in ``exclude``)."""
    headline = TASK_TABLE[kind].headline if kind in TASK_TABLE else ("acc",)
    scored = []
    for entry in cards().values():
        if entry.task == kind and entry.name not in exclude and entry.kind == "trained":
            key = next((k for k in headline if k in entry.metrics), None)
            if key is not None:
                scored.append((entry.metrics[key], entry.name))
    if not scored:
        raise SlimError(f"distill.teacher: no {kind} model in the zoo to learn from")
    return max(scored)[1]


def _labels(task):
    for attr in ("class_names", "label_names"):
        names = getattr(task, attr, None)
        if names is not None:
            return list(names)
    return None


def distill(source, settings, output_dir, device=None, progress=True):
    """Train ``source``'s model as the student of the teacher (module docstring); returns ``(recipe, notes)``."""
    s = settings["distill"]
    name = best_teacher(source.kind, exclude=[source.origin.get("model")]) if s["teacher"] == "best" else s["teacher"]
    teacher = open_source(name)
    if teacher.kind != source.kind:
        raise SlimError(f"distill.teacher: {name} is a {teacher.kind} model, the student a {source.kind} model")
    ours, theirs = _labels(source.task), _labels(teacher.task)
    if ours is not None and theirs is not None and ours != theirs:
        raise SlimError(f"distill.teacher: {name} predicts the labels {theirs}, the student {ours}; "
                        f"distillation needs one label set")
    task = DistillationTask(source.task, teacher.model, s["inputs"], s["label"], s["temperature"], s["alpha"],
                            s["features"])
    table = cards()
    notes = {"teacher": name, "teacher_metrics": dict(table[name].metrics) if name in table else None}
    notes["finetune"] = _train(task, finetune_config(source, settings["finetune"], notes),
                               os.path.join(output_dir, "train"), device, progress)
    return {"distilled": {"teacher": name, "temperature": s["temperature"], "alpha": s["alpha"],
                          "features": s["features"]}, "source": source.origin}, notes
