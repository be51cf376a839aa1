"""``oar reproduce NAME|nlp|video|all``: retrain and re-measure the models behind the cards.

For a card with a ``config``, reproduce trains it (``framework.engine.runner``),
evaluates the best checkpoint on the card's split, writes the model weights as
float16 to the card's ``weights.path``, and rewrites the card (metrics, sha256,
date, time taken) and the card's row in ``docs/RESULTS.md``. A card may name
its own procedure instead (``reproduce: "module:function"``, called with the
card and the options, returning ``{"metrics": …, "weights": …}``).
"""
import datetime
import importlib
import os
import time

import numpy

import framework
from framework.config import load_config
from framework.engine import runner
from framework.engine.checkpoint import load_checkpoint
from framework.fetch import sha256_of

from .catalog import ROOT, CatalogError, cards, write_card

__all__ = ["GROUPS", "reproduce", "export_weights", "update_results"]

GROUPS = {"nlp": ("lexical_analysis", "sentiment", "matching"), "video": ("video",)}
RESULTS_PATH = os.path.join(ROOT, "docs", "RESULTS.md")


def export_weights(checkpoint, path):
    """Write the model state of ``checkpoint`` to ``path`` in float16 (float arrays only); returns its sha256."""
    state = load_checkpoint(checkpoint)["model"]
    half = {k: v.astype(numpy.float16) if v.dtype.kind == "f" else v for k, v in state.items()}
    os.makedirs(os.path.dirname(path), exist_ok=True)
    framework.save(half, path)
    return sha256_of(path)


def _machine():
    from .bench import machine_info
    info = machine_info()
    return f"{info['cpu']}, {info['cores']} cores"


def update_results(name, row_text, path=RESULTS_PATH):
    """Replace (or append) the block between ``<!-- reproduce:NAME -->`` markers in RESULTS.md."""
    start, end = f"<!-- reproduce:{name} -->", f"<!-- /reproduce:{name} -->"
    block = f"{start}\n{row_text.rstrip()}\n{end}"
    text = open(path, encoding="utf-8").read() if os.path.exists(path) else "# Measured results\n"
    if start in text and end in text:
        text = text[:text.index(start)] + block + text[text.index(end) + len(end):]
    else:
        text = text.rstrip() + "\n\n" + block + "\n"
    with open(path + ".tmp", "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(path + ".tmp", path)


def _train_and_measure(entry, options):
    recipe = entry.get("reproduce") or {}
    cfg = load_config(os.path.join(ROOT, entry["config"]), list(recipe.get("overrides", [])) + options.overrides)
    output_dir = os.path.join(options.output_root, entry["name"])
    runner.train(cfg, output_dir=output_dir, device=options.device, progress=not options.quiet)
    best = os.path.join(output_dir, "best.npz")
    split = recipe.get("split", "test")
    metrics = runner.evaluate_config(cfg, best, split=split, device=options.device)
    weights_path = entry["weights"]["path"]
    sha = export_weights(best, os.path.join(ROOT, weights_path))
    return {"metrics": {"split": split, **{k: round(float(v), 4) for k, v in metrics.items()}},
            "weights": {"path": weights_path, "sha256": sha}}


def _run_one(entry, options):
    start = time.time()
    custom = (entry.get("reproduce") or {}).get("function")
    if custom:
        module_name, _, function = custom.partition(":")
        outcome = getattr(importlib.import_module(module_name), function)(entry, options)
    elif "config" in entry:
        outcome = _train_and_measure(entry, options)
    else:
        raise CatalogError(f"model {entry['name']!r} has no reproduce recipe")
    minutes = (time.time() - start) / 60
    updated = dict(entry)
    updated.update({k: v for k, v in outcome.items() if k in ("metrics", "weights")})
    updated["date"] = datetime.date.today().isoformat()
    updated["reproduce_minutes"] = round(minutes, 1)
    write_card(updated)
    metrics = ", ".join(f"{k} {v}" for k, v in updated["metrics"].items())
    row = (outcome.get("results_text") or
           f"| {entry['name']} | {metrics} | `oar reproduce {entry['name']}` | {minutes:.1f} min | "
           f"{_machine()} | {updated['date']} |")
    update_results(entry["name"], row)
    return updated


def reproduce(target, options):
    """Reproduce one card, a group (``nlp``, ``video``) or ``all``; returns the updated cards."""
    table = cards()
    if target == "all":
        chosen = list(table.values())
    elif target in GROUPS:
        chosen = [c for c in table.values() if c["task"] in GROUPS[target]]
    elif target in table:
        chosen = [table[target]]
    else:
        from .catalog import card
        card(target)  # raises with close names
    return [_run_one(entry, options) for entry in chosen if entry.get("reproduce") or "config" in entry]
