"""``oar reproduce slim``: rebuild the compressed zoo models and write one table beside the models they came from.

The compressed cards (those with ``compressed_from``) name the card they are made
from, the compression config (``slim_config``) and whether the model starts from
scratch (``from_scratch``, a distillation student). For each, in catalog order,
:func:`reproduce_slim` runs ``oar compress`` into ``<output_root>/slim/<name>``
(reusing a finished run whose config and source weights are still the ones the
catalog names), ships its ``weights.npz`` to the card's ``weights.path``, and
measures it and the model it came from on the same machine in the same run:
parameters, multiply-adds per example, weights file size, batch-1 latency and
batch-64 throughput on the oar static path (the traced program, exact passes) and
in ONNX Runtime (the float model oar exports, batch norm folded; for int8 cards
the int8 model of :mod:`zoo.slim.onnx_int8`), the test metrics on both paths, and
the speed-ups the targets are about (:func:`speedups`: the compressed model and
its source timed in turn in one loop, best of several rounds, at batch 1 and 64).
The table goes to the ``slim`` block of ``docs/RESULTS.md`` with PaddleSlim's
published MobileNet V1 figures beside it.
"""
import datetime
import json
import os
import shutil
import tempfile

from framework.fetch import sha256_of
from framework.onnx import OnnxProgram, export
from framework.serialization import atomic_write

from ..catalog import ROOT, cards
from ..build import card_config, weighted_task
from ..slim.measure import export_program, ratios, speed, static_program, test_inputs, test_metrics
from ..slim.run import compress, report
from ..slim.runtime import on_runtime
from ..slim.source import open_source
from . import destination, machine_description

__all__ = ["reproduce_slim", "rebuild", "compressed_cards", "results_table", "PADDLESLIM"]

# PaddleSlim's published MobileNet V1 (ImageNet) results, the anchor of the table.
PADDLESLIM = ["uniform filter pruning: -50 % FLOPs, -1.08 top-1",
              "sensitivity filter pruning: -50 % FLOPs, -1.6 top-1 (as quoted in the 2019 release notes)",
              "post-training int8: -0.67 top-1, weights 17 MB -> 4.8 MB",
              "distillation from ResNet-50: +1.06 top-1"]
SINGLES = 10
RUNTIMES = ("static", "onnxruntime")
INT8_SPEEDUP, PRUNED_SPEEDUP = 1.8, 1.6
ROUNDS = (30, 3)           # interleaved rounds of the speed-ups at batch 1 and batch 64


def compressed_cards(table=None):
    """The compressed cards, in catalog order."""
    return [entry for entry in (table or cards()).values() if entry.kind == "compressed"]


def _reusable(run_dir, entry):
    """The report of a finished run in ``run_dir`` made by the card's config from the weights the catalog
    names now, else None."""
    path = os.path.join(run_dir, "report.json")
    if not os.path.isfile(path) or not os.path.isfile(os.path.join(run_dir, "weights.npz")):
        return None
    with open(path, encoding="utf-8") as f:
        done = json.load(f)
    base = cards()[entry.compressed_from]
    same_source = entry.from_scratch or (done.get("source") or {}).get("weights_sha256") == base.weights.sha256
    return done if same_source and done.get("config_sha256") == sha256_of(os.path.join(ROOT, entry.slim_config)) \
        else None


def _runtimes(task, example, folder, onnx_path=None):
    """``{"static": the traced program, "onnxruntime": an OnnxProgram}`` of ``task``'s model: ``onnx_path``, or
    the float model exported into ``folder`` (batch norm folded); ``"onnx_path"``: the file."""
    if onnx_path is None:
        onnx_path = os.path.join(folder, "model.onnx")
        export(export_program(task, example), onnx_path)
    return {"static": static_program(task, example), "onnxruntime": OnnxProgram(onnx_path), "onnx_path": onnx_path}


def _measure(task, cfg, weights, runtimes):
    """One row's figures for ``task`` (eager, its weights file ``weights``) on its ``runtimes``."""
    singles, batch = test_inputs(task, cfg, SINGLES)
    row = {key: speed(runtimes[key], singles, batch) for key in RUNTIMES}
    row["onnx_bytes"] = os.path.getsize(runtimes["onnx_path"])
    with on_runtime(task, runtimes["onnxruntime"]):
        row["test_onnxruntime"] = test_metrics(task, cfg)
    row["test"] = test_metrics(task, cfg)
    row["file_bytes"] = os.path.getsize(weights)
    return row


def speedups(base, compressed, singles, batch):
    """``{runtime: {"wall"|"cpu": [batch-1, batch-64]}}``: the base model's time over the compressed one's on
    each runtime (``base``, ``compressed``: :func:`_runtimes`), both timed in one interleaved loop
    (:func:`~zoo.slim.measure.ratios`), on the first single example and on the batch; wall time and process CPU time."""
    result = {}
    for key in RUNTIMES:
        result[key] = {"wall": [], "cpu": []}
        for args, rounds in ((singles[0], ROUNDS[0]), (batch, ROUNDS[1])):
            ratio = ratios({"base": (base[key], args), "compressed": (compressed[key], args)}, rounds)["compressed"]
            for clock in ("wall", "cpu"):
                result[key][clock].append(ratio[clock])
    return result


def _base_row(name, folder):
    source = open_source(name)
    counted = report(name)
    weights = os.path.join(ROOT, cards()[name].weights.path)
    os.makedirs(os.path.join(folder, name), exist_ok=True)
    example = test_inputs(source.task, source.cfg, 1)[0][0]
    runtimes = _runtimes(source.task, example, os.path.join(folder, name))
    return {"name": name, "made_from": "-", "params": counted["params"], "macs": counted["macs"],
            **_measure(source.task, source.cfg, weights, runtimes)}, runtimes


def _compressed_row(entry, done, weights, run_dir, base_runtimes):
    cfg = card_config(entry)
    task = weighted_task(cfg, weights, entry.kind)
    singles, batch = test_inputs(task, cfg, SINGLES)
    onnx_path = os.path.join(run_dir, "model.int8.onnx") if done["strategy"] == "quant" else None
    runtimes = _runtimes(task, singles[0], run_dir, onnx_path)
    return {"name": entry.name, "made_from": entry.compressed_from, "params": done["after"]["params"],
            "macs": done["after"]["macs"], "float32_bytes": done["before"]["float32_bytes"],
            **_measure(task, cfg, weights, runtimes), "speedup": speedups(base_runtimes, runtimes, singles, batch)}


def _metric(row, key="test"):
    name = next(iter(k for k in row[key] if k in ("acc", "motion_top1", "top1")), next(iter(row[key])))
    return name, row[key][name]


def _verdict(ok):
    return "met" if ok else "MISSED"


def _pair(figures):
    """``figures`` (:func:`speedups` of one runtime) in words: the CPU-time ratios, the wall-time ones after."""
    cpu, wall = figures["cpu"], figures["wall"]
    return f"{cpu[0]:.2f}x at batch 1, {cpu[1]:.2f}x at batch 64 (wall time {wall[0]:.2f}x, {wall[1]:.2f}x)"


def target_lines(rows):
    """One line per compressed model: its figures against the issue's targets, each marked met or MISSED. The
    speed-ups are the interleaved ones of :func:`speedups`."""
    by_name, lines = {row["name"]: row for row in rows}, []
    for row in rows:
        base = by_name.get(row["made_from"])
        if base is None:
            continue
        name, value = _metric(row)
        points = (value - _metric(base)[1]) * 100
        static, ort = row["speedup"]["static"], row["speedup"]["onnxruntime"]
        if row["name"].endswith("_pruned"):
            removed = 1 - row["macs"] / base["macs"]
            lines.append(f"- {row['name']}: {removed:.1%} of the multiply-adds removed "
                         f"({_verdict(removed >= 0.5)}, target 50 %), {name} {points:+.2f} points "
                         f"({_verdict(points >= -1.0)}, target at most -1.0); faster on the oar static path "
                         f"{_pair(static)}, in ONNX Runtime {_pair(ort)} "
                         f"({_verdict(min(static['cpu'] + ort['cpu']) >= PRUNED_SPEEDUP)}, target "
                         f"{PRUNED_SPEEDUP}x at both batches on both).")
        elif row["name"].endswith("_int8"):
            _, ort_value = _metric(row, "test_onnxruntime")
            ort_points = (ort_value - _metric(base, "test_onnxruntime")[1]) * 100
            smaller = row["float32_bytes"] / row["file_bytes"]
            lines.append(f"- {row['name']}: {name} {points:+.2f} points on oar, {ort_points:+.2f} in ONNX Runtime "
                         f"({_verdict(min(points, ort_points) >= -0.5)}, target within 0.5); weights file "
                         f"{smaller:.2f}x smaller than float32 ({_verdict(smaller >= 3.8)}, target 3.8x); ONNX "
                         f"Runtime int8 vs float {_pair(ort)} ({_verdict(min(ort['cpu']) >= INT8_SPEEDUP)}, target "
                         f"{INT8_SPEEDUP}x at both).")
        else:
            lines.append(f"- {row['name']}: {name} {points:+.2f} points over {row['made_from']} trained alone "
                         f"({_verdict(points >= 1.0)}, target +1.0); {row['made_from']}'s time over its own on the "
                         f"oar static path {_pair(static)} (same network).")
    return lines


def results_table(rows, facts=""):
    """The ``slim`` block of ``docs/RESULTS.md``: one line per model (the uncompressed ones first), the targets
    (:func:`target_lines`), then the PaddleSlim anchor and ``facts``."""
    lines = ["| model | made from | params | M mult-adds / example | weights file | oar static: batch-1 ms, "
             "batch-64 /s | ONNX Runtime: batch-1 ms, batch-64 /s | test metric (oar) | test metric (ONNX Runtime) |",
             "|---|---|---|---|---|---|---|---|---|"]
    for row in rows:
        name, value = _metric(row)
        _, ort_value = _metric(row, "test_onnxruntime")
        lines.append(f"| {row['name']} | {row['made_from']} | {row['params']:,} | {row['macs'] / 1e6:.1f} | "
                     f"{row['file_bytes'] / 1e6:.2f} MB | {row['static']['latency_ms']:.2f}, "
                     f"{row['static']['throughput']:,.0f} | {row['onnxruntime']['latency_ms']:.2f}, "
                     f"{row['onnxruntime']['throughput']:,.0f} | {name} {value:.4f} | {ort_value:.4f} |")
    anchor = ["", "Against the targets:"] + target_lines(rows) + [
        "", "PaddleSlim's published MobileNet V1 figures (ImageNet top-1), the anchor: " + "; ".join(PADDLESLIM) + "."]
    return "\n".join(lines + anchor + (["", facts] if facts else []))


def _card_metrics(row):
    metrics = {"split": "test", **row["test"],
               "onnxruntime": row["test_onnxruntime"], "params": row["params"], "macs": int(row["macs"]),
               "file_bytes": row["file_bytes"], "static_batch1_ms": row["static"]["latency_ms"],
               "static_batch64_per_s": row["static"]["throughput"],
               "onnxruntime_batch1_ms": row["onnxruntime"]["latency_ms"],
               "onnxruntime_batch64_per_s": row["onnxruntime"]["throughput"]}
    if "float32_bytes" in row:
        metrics["float32_bytes"] = row["float32_bytes"]
    if "speedup" in row:
        metrics["speedup"] = row["speedup"]
    return metrics


def _weights_entry(card, weights):
    """The card's :class:`~zoo.card.Weights` with the shipped file's sha256 and one for each companion file."""
    return card.weights.replace(sha256=sha256_of(weights), companion_sha256={
        name: sha256_of(os.path.join(ROOT, path)) for name, path in card.weights.companions.items()})


def rebuild(entries, options):
    """Compress each card of ``entries`` into ``<output_root>/slim/<name>`` (reusing a finished run, see
    :func:`_reusable`), ship its weights and measure it beside the model it came from; returns ``(rows,
    models)``: the table rows (each source model first) and ``{name: {"metrics", "weights"}}``."""
    with tempfile.TemporaryDirectory() as folder:
        return _rebuild(entries, options, folder)


def _rebuild(entries, options, folder):
    rows, bases, models = [], {}, {}
    for card in entries:
        run_dir = os.path.join(os.path.abspath(options.output_root), "slim", card.name)
        done = _reusable(run_dir, card) or compress(
            os.path.join(ROOT, card.slim_config), card.compressed_from, run_dir,
            from_scratch=card.from_scratch, device=None if options.device == "cpu" else options.device,
            progress=not options.quiet, finetune_overrides=options.overrides)
        weights = destination(options, card.weights.path)
        os.makedirs(os.path.dirname(weights), exist_ok=True)
        shutil.copyfile(os.path.join(run_dir, "weights.npz"), weights)
        if card.compressed_from not in bases:
            bases[card.compressed_from] = _base_row(card.compressed_from, folder)
            rows.append(bases[card.compressed_from][0])
        rows.append(_compressed_row(card, done, weights, run_dir, bases[card.compressed_from][1]))
        models[card.name] = {"metrics": _card_metrics(rows[-1]), "weights": _weights_entry(card, weights)}
    return rows, models


def _facts(command, minutes):
    return (f"Command: `{command}` ({minutes:.0f} min in all); {machine_description()}; "
            f"{datetime.date.today().isoformat()}. Latency: median of batch-1 calls over the first {SINGLES} test "
            f"examples; throughput: one test batch of 64. The speed-ups against the targets time the model and "
            f"the one it was made from in turn in one loop (best of {ROUNDS[0]} rounds at batch 1, {ROUNDS[1]} "
            f"at batch 64), so a loaded machine slows both alike; the targets are judged on process CPU time (one "
            f"thread: the time computing, not waiting for a core), wall time beside it. File sizes are the "
            f"shipped weights files.")


def reproduce_slim(entry, options):
    """The procedure of every compressed card (module docstring); returns this card's ``metrics`` and
    ``weights``, the other compressed cards' as ``models``, and the table as ``results_text``. With
    ``options.cards`` (``oar reproduce slim --cards …``) only those cards are rebuilt and their rows go to
    ``<output_root>/slim/table.md``, not to RESULTS (a partial table would replace the whole one)."""
    start = datetime.datetime.now()
    wanted = getattr(options, "cards", None)
    rows, models = rebuild([c for c in compressed_cards() if wanted is None or c.name in wanted], options)
    minutes = (datetime.datetime.now() - start).total_seconds() / 60
    own = models.pop(entry.name)
    command = "oar reproduce slim" + (" --cards " + " ".join(wanted) if wanted is not None else "")
    text = results_table(rows, _facts(command, minutes))
    if wanted is not None:
        with atomic_write(os.path.join(os.path.abspath(options.output_root), "slim", "table.md")) as f:
            f.write(text + "\n")
        text = None
    return {**own, "models": models, "results_name": "slim", "results_text": text}
