"""``oar reproduce simnet``: train the SimNet configs, measure them and two lexical peers on the same
test pairs, and write one table (accuracy, AUC, accuracy per negative type).

- Models: ``configs/nlp/simnet_{bow,cnn,gru,lstm}_{pointwise,pairwise}.yaml``,
  trained from scratch (:func:`zoo.reproduce.train_checkpoint`); the best checkpoint
  (dev AUC) carries its dev-chosen threshold; its weights are written in
  float16 (the threshold stays float32) next to the shared vocabulary, and
  those shipped weights are what the table measures.
- Peers (:mod:`zoo.reproduce.peers`), fitted on the same train pairs,
  thresholds chosen on the same dev pairs: *word overlap* (Jaccard of the two
  texts' LAC word sets, threshold only) and *TF-IDF LR* (logistic regression on
  ``[|a - b|, a * b]`` of the TF-IDF vectors of character 1-2-grams, C chosen on
  dev). scikit-learn is imported only there, when the peer runs; oar never depends on it.
- Checks that the data carries no label in trivial features: the AUC of the
  length difference of a pair, and of how much of ``text_b`` is new to
  ``text_a``, restricted to the positives and negatives of the same anchors
  per type (the latter is lexical evidence, reported for reference;
  :func:`nlp.simnet.metrics.length_artefacts`).
"""
import datetime
import json
import os
import shutil
import time

from framework.config import load_config
from framework import engine
from framework.engine import runner
from framework.fetch import oar_home, sha256_of
from framework.serialization import atomic_write, load
from nlp.common import build_text_tokenizer
from nlp.simnet.data import MatchingPairs
from nlp.simnet.pairs import NEG_TYPES, POSITIVE
from nlp.simnet.metrics import length_artefacts, pair_metrics
from nlp.simnet.model import FLOAT32_BUFFERS

from ..catalog import ROOT
from . import destination, machine_description, train_checkpoint
from .peers import matching_tfidf_peer, word_overlap_peer

__all__ = ["SIMNET_MODELS", "WEIGHTS_DIR", "export_weights", "train_and_measure", "split_pairs", "results_table",
           "reproduce", "summarize"]

SIMNET_MODELS = tuple(f"simnet_{e}_{h}" for e in ("bow", "cnn", "gru", "lstm") for h in ("pointwise", "pairwise"))
WEIGHTS_DIR = "zoo/weights"                           # where the shipped weights and vocabulary live (repo-relative)
CONFIG_DIR = os.path.join(ROOT, "configs", "nlp")


def export_weights(checkpoint, path):
    """Write the model weights of ``checkpoint`` to ``path`` as shipped weights
    (:func:`framework.engine.export_weights`): float arrays in float16, except the ``threshold`` buffer
    (float32, so the dev-chosen value is kept exactly; :data:`nlp.simnet.model.FLOAT32_BUFFERS`).
    Returns its sha256."""
    return engine.export_weights(checkpoint, path, keep_float32=FLOAT32_BUFFERS)


def train_and_measure(name, options, weights_dir, config_dir=CONFIG_DIR):
    """Train ``<config_dir>/<name>.yaml`` (:func:`zoo.reproduce.train_checkpoint`, into
    ``<options.output_root>/<name>``), export its best checkpoint to ``<weights_dir>/<name>.npz`` and
    measure those weights on the test pairs.

    Returns ``{"name", "metrics" (test), "dev" (dev metrics), "threshold" (the dev-chosen one the weights
    carry), "wall_seconds", "cpu_seconds", "weights", "sha256", "vocab"}``; the vocabulary (the run's copy,
    :func:`nlp.common.text_task_assets`) is saved as ``<weights_dir>/simnet_<tokenizer>.vocab.txt``.
    """
    cfg = load_config(os.path.join(config_dir, f"{name}.yaml"), list(options.overrides))
    cpu = time.process_time()
    checkpoint, _, minutes = train_checkpoint(cfg, name, options)
    cpu = time.process_time() - cpu
    weights = os.path.join(weights_dir, f"{name}.npz")
    sha = export_weights(checkpoint, weights)
    vocab = os.path.join(weights_dir, f"simnet_{build_text_tokenizer(cfg['task'].get('tokenizer')).signature}"
                                      f".vocab.txt")
    shutil.copyfile(os.path.join(os.path.dirname(checkpoint), "vocab.txt"), vocab)
    return {"name": name, "metrics": runner.evaluate_config(cfg, weights, split="test", device=options.device),
            "dev": runner.evaluate_config(cfg, weights, split="eval", device=options.device),
            "threshold": float(load(weights)["model"]["threshold"][0]), "wall_seconds": minutes * 60,
            "cpu_seconds": cpu, "weights": weights, "sha256": sha, "vocab": vocab}


def _cell(value):
    return "-" if value is None or value != value else f"{value:.3f}"


def results_table(rows, peers, stats, artefacts, command="oar reproduce simnet", machine=""):
    """The markdown block of RESULTS.md: one row per model and peer, then the data and artefact checks.

    ``rows``: :func:`train_and_measure` results; ``peers``: name -> metrics of
    :func:`pair_metrics`; ``stats``: counts of the test pairs by type;
    ``artefacts``: :func:`length_artefacts` of the test pairs.
    """
    columns = ["acc", "auc", "rank_acc"] + [f"acc_{t}" for t in (POSITIVE,) + NEG_TYPES]
    head = ("| model | test acc | AUC | rank acc | pos | swap | exchange | ending | overlap | threshold | "
            "train time (wall / CPU) |")
    lines = [f"Command: `{command}`. {machine}".rstrip(), "",
             "Test pairs: " + ", ".join(f"{k} {v}" for k, v in stats.items()) + ".", "", head,
             "|" + "---|" * (head.count("|") - 1)]
    for row in rows:
        m = row["metrics"]
        lines.append(f"| {row['name']} | " + " | ".join(_cell(m.get(c)) for c in columns) +
                     f" | {_cell(m.get('threshold', row.get('threshold')))} | "
                     f"{row['wall_seconds'] / 60:.1f} / {row['cpu_seconds'] / 60:.1f} min |")
    for name, m in peers.items():
        lines.append(f"| {name} (peer) | " + " | ".join(_cell(m.get(c)) for c in columns) +
                     f" | {_cell(m['threshold'])} | - |")
    lines += ["", "Per-type columns are accuracies on that kind of pair (pos: the positives). AUC of trivial "
              "features on the test pairs (0.5 = no signal): length difference "
              f"{_cell(artefacts['len_diff'])} (" + ", ".join(
                  f"{t} {_cell(artefacts.get(f'len_diff_{t}'))}" for t in NEG_TYPES) +
              f"); share of new characters in text_b {_cell(artefacts['new_chars'])} (lexical evidence)."]
    return "\n".join(lines)


def reproduce(card, options):
    """``oar reproduce`` entry point (``oar reproduce simnet``, or any SimNet card): train the models, measure
    them and the peers, return the outcome for :mod:`zoo.reproduce`.

    ``card``: the zoo card; its ``reproduce.models`` lists the configs to
    train (default: all of :data:`SIMNET_MODELS`, so one run updates every
    SimNet card and the whole table). ``options``: ``overrides``, ``device``,
    ``output_root``, ``quiet``, ``dry_run`` (as ``oar reproduce`` parses them);
    the weights and the vocabulary go to ``zoo/weights/``, or under the
    dry-run folder (:func:`zoo.reproduce.destination`). Returns :func:`summarize`'s outcome.
    """
    names = list(card.reproduce.models if card.reproduce else ()) or list(SIMNET_MODELS)
    weights_dir = destination(options, WEIGHTS_DIR)
    start, start_cpu = time.perf_counter(), time.process_time()
    rows = [train_and_measure(name, options, weights_dir) for name in names]
    return summarize(card, rows, options, wall_seconds=time.perf_counter() - start,
                     cpu_seconds=time.process_time() - start_cpu)


def summarize(card, rows, options, wall_seconds=None, cpu_seconds=None):
    """Measure the peers on the data of the first model's config and make the outcome of :func:`reproduce`:
    ``{"metrics", "weights", "results_name": "simnet", "results_text", "models"}``: metrics and weights
    of the card's model (or of the best model by test accuracy), the markdown table, and ``models``:
    name -> ``{"metrics", "weights": {"path", "sha256", "vocab", "vocab_sha256"}}`` for every model in
    ``rows`` (:func:`train_and_measure` results), to update their cards. ``wall_seconds`` and
    ``cpu_seconds`` (the whole run's, optional) go into the table's first line.
    Also writes ``<output_root>/simnet_summary.json``."""
    cfg = load_config(os.path.join(CONFIG_DIR, f"{rows[0]['name']}.yaml"), list(options.overrides))
    train, dev, test = split_pairs(cfg)
    overlap_scores, overlap_threshold = word_overlap_peer(dev, test, os.path.join(oar_home(), "matching", "peers"))
    tfidf_scores, tfidf_threshold, c = matching_tfidf_peer(train, dev, test)
    peers = {"word overlap": pair_metrics(overlap_scores, test, overlap_threshold),
             f"TF-IDF LR (C={c:g})": pair_metrics(tfidf_scores, test, tfidf_threshold)}
    stats = {"pairs": len(test)}
    for p in test:
        stats[p.neg_type or str(p.label)] = stats.get(p.neg_type or str(p.label), 0) + 1
    facts = f"{machine_description()}; {datetime.date.today().isoformat()}."
    if wall_seconds is not None:
        facts = f"Wall time {wall_seconds / 60:.1f} min, CPU time {cpu_seconds / 60:.1f} min in all; " + facts
    text = results_table(rows, peers, stats, length_artefacts(test), machine=facts)
    models = {row["name"]: {"metrics": {"split": "test", **{k: round(float(v), 4) for k, v in row["metrics"].items()}},
                            "weights": {"path": f"{WEIGHTS_DIR}/{os.path.basename(row['weights'])}",
                                        "sha256": row["sha256"],
                                        "vocab": f"{WEIGHTS_DIR}/{os.path.basename(row['vocab'])}",
                                        "vocab_sha256": sha256_of(row["vocab"])}} for row in rows}
    chosen = card.name if card.name in models else max(models, key=lambda n: models[n]["metrics"]["acc"])
    _write_summary(os.path.join(options.output_root, "simnet_summary.json"), rows, peers)
    return {"metrics": models[chosen]["metrics"], "weights": models[chosen]["weights"], "results_name": "simnet",
            "results_text": text, "models": models}


def split_pairs(cfg):
    """The labelled pairs (train, dev, test) of a matching config: its ``data`` sections read as
    :class:`~nlp.simnet.data.MatchingPairs` with the same split, file, seed and copies (so a pairwise
    config's training triples come back as the pairs they were made from)."""
    keys = ("split", "path", "seed", "train_copies")
    return [MatchingPairs(**{k: v for k, v in cfg["data"][section].items() if k in keys}).pairs
            for section in ("train", "eval", "test")]


def _write_summary(path, rows, peers):
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with atomic_write(path) as f:
        json.dump({"models": rows, "peers": peers}, f, indent=1, default=float)
