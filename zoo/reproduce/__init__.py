"""``oar reproduce NAME|nlp|senta|simnet|video|all``: retrain and re-measure the models behind the cards.

For a card with a ``config``, reproduce trains it (``framework.engine.runner``),
evaluates the best checkpoint on the card's split, writes the model weights as
float16 to the card's ``weights.path``, and rewrites the card (metrics, sha256,
date, time taken) and the card's block in ``docs/RESULTS.md``. A card may name
its own procedure instead (``reproduce: {procedure: NAME}``, a key of
:data:`PROCEDURES` — a fixed table, so a card names no code — called with the
card and the options, returning ``{"metrics": …, "weights": …}`` (a dict and a
:class:`~zoo.card.Weights`; a procedure that chooses among configs also
``"config"`` and ``"overrides"``) and
optionally ``"results_text"``, the block to write, ``"results_name"``, the
block's name when it is not the card's, and ``"models"``, ``{name: {"metrics",
"weights"}}`` of other cards the same run measured: those cards are updated too
and not run again in the same ``reproduce``); it can reuse
:func:`train_and_measure` (or its steps :func:`recipe_config` and
:func:`train_checkpoint`) and :func:`destination`. ``oar reproduce senta``
runs the sentiment cards (one procedure trains the whole Senta family),
``oar reproduce simnet`` the matching cards (one procedure trains all eight SimNet models),
``oar reproduce slim`` the compressed cards (:mod:`zoo.reproduce.slim` rebuilds all four).

With ``--dry_run`` nothing in the repository changes: the weights, the other
exported files, the catalog and RESULTS.md are written under
``<output_root>/dry_run/`` instead (the catalog and RESULTS.md copied there
first), so a small budget (``-o train.max_steps=3``) can rehearse the whole
procedure.
"""
import datetime
import importlib
import json
import os
import shutil
import time

from framework.config import dump_config, load_config
from framework.distributed import DistributedError
from framework.engine import runner
from framework.engine.checkpoint import export_weights
from framework.engine.run_dir import best_checkpoint
from framework.serialization import atomic_write

from ..card import Weights
from ..catalog import CATALOG_PATH, ROOT, CatalogError, card, cards, write_card
from ..launch import launch_training
from ..tasks import TASK_TABLE
from ..usage import UsageError

__all__ = ["groups", "RESULTS_PATH", "PROCEDURES", "reproduce", "update_results", "destination",
           "train_and_measure", "recipe_config", "train_checkpoint", "logged_train_minutes", "machine_description"]


def groups():
    """``{group: task names}`` that ``oar reproduce GROUP`` runs: ``nlp`` (every task with text instances),
    and each task of the table by its name and its aliases (``senta``, ``simnet``, ``video`` …); a card's
    own name wins over a group of the same name."""
    table = {"nlp": tuple(name for name, spec in TASK_TABLE.items() if spec.kind in ("text", "pair"))}
    for spec in TASK_TABLE.values():
        table.update({name: (spec.name,) for name in (spec.name,) + spec.aliases})
    return table

RESULTS_PATH = os.path.join(ROOT, "docs", "RESULTS.md")


def machine_description():
    """One line: CPU model and core count (from :func:`zoo.bench.machine_info`)."""
    from ..bench import machine_info
    info = machine_info()
    return f"{info['cpu']}, {info['cores']} cores"


def destination(options, relative_path):
    """Where reproduce writes the repository file ``relative_path``: under the repo, or under
    ``<output_root>/dry_run/`` when ``options.dry_run``."""
    if getattr(options, "dry_run", False):
        return os.path.join(os.path.abspath(options.output_root), "dry_run", relative_path)
    return os.path.join(ROOT, relative_path)


def update_results(name, row_text, path=RESULTS_PATH):
    """Replace (or append) the block between ``<!-- reproduce:NAME -->`` markers in RESULTS.md."""
    start, end = f"<!-- reproduce:{name} -->", f"<!-- /reproduce:{name} -->"
    block = f"{start}\n{row_text.rstrip()}\n{end}"
    text = open(path, encoding="utf-8").read() if os.path.exists(path) else "# Measured results\n"
    if start in text and end in text:
        text = text[:text.index(start)] + block + text[text.index(end) + len(end):]
    else:
        text = text.rstrip() + "\n\n" + block + "\n"
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with atomic_write(path) as f:
        f.write(text)


def recipe_config(entry, options, extra_overrides=()):
    """The card's config, resolved with overrides in this order: the card's ``reproduce.overrides``,
    ``extra_overrides`` (from a card's own procedure), then the command line's."""
    recipe = entry.reproduce
    overrides = list(recipe.overrides if recipe else ()) + list(extra_overrides) + list(options.overrides)
    return load_config(os.path.join(ROOT, entry.config), overrides)


def logged_train_minutes(run_dir):
    """Training time of a finished run from its ``metrics.jsonl`` (the time to the first record extrapolated
    back to step 0 at the run's mean time per step), in minutes; None for a folder that holds weights but no
    training log (weights taken as they are, e.g. shipped ones scored again)."""
    log = os.path.join(run_dir, "metrics.jsonl")
    if not os.path.isfile(log):
        return None
    with open(log, encoding="utf-8") as f:
        records = [json.loads(line) for line in f if line.strip()]
    first, last = records[0], records[-1]
    per_step = (last["time"] - first["time"]) / max(last["step"] - first["step"], 1)
    return (last["time"] - first["time"] + per_step * first["step"]) / 60


def train_checkpoint(cfg, name, options, from_run=None, nproc=1):
    """Train ``cfg`` into ``<output_root>/<name>``; returns ``(checkpoint, summary, minutes)``.

    The checkpoint is ``best.npz``, or ``last.npz`` when the budget ended before
    any evaluation; ``summary`` is the trainer's, ``minutes`` the training's wall
    time. ``from_run``: the directory of a finished run (``oar train``) to take
    instead of training (summary None, minutes from :func:`logged_train_minutes`).
    ``nproc`` above one trains as ``oar train --nproc`` does, on that many
    data-parallel processes (the config is written as ``<output_root>/<name>.yaml``;
    summary None).
    """
    if from_run:
        output_dir, summary, minutes = from_run, None, logged_train_minutes(from_run)
    else:
        output_dir, start = os.path.join(options.output_root, name), time.time()
        if nproc > 1:
            _train_distributed(cfg, name, options, output_dir, nproc)
            summary = None
        else:
            _, summary = runner.train(cfg, output_dir=output_dir, device=options.device, progress=not options.quiet)
        minutes = (time.time() - start) / 60
    return best_checkpoint(output_dir), summary, minutes


def _train_distributed(cfg, name, options, output_dir, nproc):
    """Train ``cfg`` on ``nproc`` processes through ``oar train --nproc`` (the summary stays in the run's
    files)."""
    config_path = os.path.join(options.output_root, f"{name}.yaml")
    dump_config(cfg, config_path)
    argv = ["-c", config_path, "--output_dir", output_dir, "--device", options.device, "--nproc", str(nproc)]
    status = launch_training(nproc, argv + (["--quiet"] if options.quiet else []))
    if status != 0:
        raise DistributedError(f"training {name} on {nproc} processes failed (exit status {status}); "
                               f"its run directory is {output_dir}")


def train_and_measure(entry, options, extra_overrides=(), cfg=None, from_run=None):
    """Train the card's config, evaluate the best checkpoint on the card's split and export it in float16.

    The config is :func:`recipe_config` (``cfg`` when the procedure resolved it
    already); the checkpoint and ``from_run`` are :func:`train_checkpoint`'s.
    Returns ``{"metrics": {"split": …, name: value, …}, "weights": the card's
    :class:`~zoo.card.Weights` with the new sha256, "summary": …, "checkpoint":
    path, "train_minutes": …}`` (the trainer's summary; the training's wall time).
    """
    cfg = cfg if cfg is not None else recipe_config(entry, options, extra_overrides)
    nproc = entry.reproduce.nproc if entry.reproduce else 1
    best, summary, minutes = train_checkpoint(cfg, entry.name, options, from_run, nproc)
    split = entry.reproduce.split if entry.reproduce else "test"
    metrics = runner.evaluate_config(cfg, best, split=split, device=options.device)
    sha = export_weights(best, destination(options, entry.weights.path))
    return {"metrics": {"split": split, **{k: round(float(v), 4) for k, v in metrics.items()}},
            "weights": entry.weights.replace(sha256=sha), "summary": summary,
            "checkpoint": best, "train_minutes": minutes}


# What a card's ``reproduce.procedure`` may name: procedure -> (module of this package, function).
PROCEDURES = {"lac": (".lac", "reproduce_lac"), "lac_pku": (".lac", "reproduce_lac_pku"),
              "lac_seg": (".lac", "reproduce_lac_seg"), "lac_small": (".lac", "reproduce_lac_small"),
              "senta": (".senta", "reproduce_senta"), "simnet": (".simnet", "reproduce"),
              "slim": (".slim", "reproduce_slim"), "video": (".video", "reproduce_video"),
              "detection": (".detection", "reproduce_detection")}


def _procedure(entry):
    """The function that reproduces ``entry``: its recipe's procedure from :data:`PROCEDURES`, else
    :func:`train_and_measure` for a trained card."""
    if entry.reproduce is not None:
        if entry.reproduce.procedure not in PROCEDURES:
            raise CatalogError(f"model {entry.name!r}: unknown reproduce procedure {entry.reproduce.procedure!r} "
                               f"(known: {', '.join(PROCEDURES)})")
        module, function = PROCEDURES[entry.reproduce.procedure]
        return getattr(importlib.import_module(module, __package__), function)
    if entry.kind == "trained":
        return train_and_measure
    raise CatalogError(f"model {entry.name!r} has no reproduce recipe")


def _measured(outcome):
    """The card fields an outcome sets: ``metrics``, ``weights`` (a Weights, or the catalog's mapping) and, for a
    procedure that chooses among configs, ``config`` and ``overrides``."""
    fields = {key: outcome[key] for key in ("metrics", "config", "overrides") if key in outcome}
    if "weights" in outcome:
        weights = outcome["weights"]
        fields["weights"] = weights if isinstance(weights, Weights) else Weights.from_mapping(weights, "reproduce")
    return fields


def _run_one(entry, options, catalog_path, results_path):
    start = time.time()
    outcome = _procedure(entry)(entry, options)
    minutes = (time.time() - start) / 60
    today = datetime.date.today().isoformat()
    # an evaluation of earlier runs (--from_runs) keeps the card's time: it did not reproduce the training
    took = entry.reproduce_minutes if getattr(options, "from_runs", None) else round(minutes, 1)
    updated = entry.replace(**_measured(outcome), date=today, reproduce_minutes=took)
    write_card(updated, catalog_path)
    table, others = cards(catalog_path), []
    for name, measured in (outcome.get("models") or {}).items():
        if name != entry.name and name in table:
            others.append(table[name].replace(**_measured(measured), date=today))
            write_card(others[-1], catalog_path)
    metrics = ", ".join(f"{k} {v}" for k, v in updated.metrics.items())
    if "results_text" in outcome and outcome["results_text"] is None:
        return [updated] + others                           # a partial rebuild writes no block
    row = (outcome.get("results_text") or
           f"| {entry.name} | {metrics} | `oar reproduce {entry.name}` | {minutes:.1f} min | "
           f"{machine_description()} | {updated.date} |")
    update_results(outcome.get("results_name", entry.name), row, results_path)
    return [updated] + others


def _targets(options):
    """(catalog path, RESULTS.md path) that reproduce writes: the repository's, or copies under the dry-run folder."""
    if not getattr(options, "dry_run", False):
        return CATALOG_PATH, RESULTS_PATH
    catalog_path = destination(options, os.path.relpath(CATALOG_PATH, ROOT))
    results_path = destination(options, os.path.relpath(RESULTS_PATH, ROOT))
    for source, target in ((CATALOG_PATH, catalog_path), (RESULTS_PATH, results_path)):
        os.makedirs(os.path.dirname(target), exist_ok=True)
        if os.path.exists(source) and not os.path.exists(target):
            shutil.copyfile(source, target)
    return catalog_path, results_path


def reproduce(target, options):
    """Reproduce one card, a group (``nlp``, ``senta``, ``simnet``, ``video``) or ``all``; returns the updated cards."""
    table = cards()
    if target == "all":
        chosen = list(table.values())
    elif target in table:
        chosen = [table[target]]
    elif target == "slim":                                  # the compressed cards (zoo.reproduce.slim)
        chosen = [c for c in table.values() if c.kind == "compressed"]
        wanted = getattr(options, "cards", None)
        unknown = sorted(set(wanted or ()) - {c.name for c in chosen})
        if unknown:
            raise UsageError(f"--cards: not compressed cards: {', '.join(unknown)} "
                               f"(known: {', '.join(c.name for c in chosen)})")
        chosen = [c for c in chosen if wanted is None or c.name in wanted]
    elif target in groups():
        chosen = [c for c in table.values() if c.task in groups()[target] and c.kind != "compressed"]
    else:
        card(target)  # raises with close names
    catalog_path, results_path = _targets(options)
    updated = []
    for entry in chosen:
        if (entry.reproduce or entry.kind == "trained") and entry.name not in {u.name for u in updated}:
            updated += _run_one(entry, options, catalog_path, results_path)
    return updated

