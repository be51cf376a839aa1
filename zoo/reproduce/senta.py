"""``oar reproduce senta``: train the Senta family, measure it on dev and test, and write one table.

:func:`reproduce` trains the configs ``configs/nlp/senta_*.yaml`` and
evaluates them on dev and test (accuracy and macro-F1,
:mod:`nlp.senta.metrics`); :func:`reproduce_senta` is the zoo cards' procedure
around it (float16 weights and the shared vocabulary of the shipped models,
their cards and the ``senta`` block of ``docs/RESULTS.md``, with the TF-IDF peer
when scikit-learn is importable); :func:`results_table` writes that block.
"""
import datetime
import os
import time

from framework.config import ConfigError, load_config
from framework.engine import export_weights, runner
from framework.fetch import sha256_of
import nlp.senta.data  # noqa: F401  (registers the datasets, the models and the task the configs name)
import nlp.senta.model  # noqa: F401
import nlp.senta.task  # noqa: F401
from nlp.pretrain.skipgram import SKIPGRAM_SETTINGS, skipgram_path, skipgram_vectors
from nlp.pretrain.vectors import SKIPGRAM_SOURCE

from ..catalog import ROOT, cards
from . import destination, machine_description, train_checkpoint
from .peers import sentiment_tfidf_peer

__all__ = ["CHAR_MODELS", "ALL_CONFIGS", "pretrain_vectors", "reproduce", "results_table", "reproduce_senta"]

CHAR_MODELS = ("senta_bow", "senta_cnn", "senta_gru", "senta_lstm", "senta_bilstm")
ALL_CONFIGS = CHAR_MODELS + tuple(f"{name}_{inputs}" for inputs in ("word", "spm") for name in CHAR_MODELS)
CONFIG_DIR = os.path.join(ROOT, "configs", "nlp")


def pretrain_vectors(names, options, config_dir=CONFIG_DIR):
    """The procedure's first step: oar's skip-gram character vectors (:mod:`nlp.pretrain.skipgram`), trained
    into the cache when a config among ``names`` (with ``options.overrides``) starts from ``model.pretrained:
    skipgram`` and they are not cached yet. Returns a sentence for the table's facts ("" when no config uses them).
    """
    uses = [name for name in names if (load_config(os.path.join(config_dir, f"{name}.yaml"), list(options.overrides))
                                       ["model"].get("pretrained")) == SKIPGRAM_SOURCE]
    if not uses:
        return ""
    cached, start = os.path.isfile(skipgram_path()), time.time()
    skipgram_vectors(progress=not options.quiet)
    settings = ", ".join(f"{key} {value}" for key, value in SKIPGRAM_SETTINGS.items())
    how = "read from the cache" if cached else f"trained in {(time.time() - start) / 60:.1f} min"
    return (f"Skip-gram character vectors (People's Daily and the training reviews; {settings}): {how}; "
            f"used by {', '.join(uses)}. ")


def reproduce(names, options, config_dir=CONFIG_DIR, exports=None):
    """Train each config ``<config_dir>/<name>.yaml`` and evaluate its best checkpoint on dev and test.

    Returns one row per name: ``{"name", "input", "dev_acc", "dev_macro_f1",
    "test_acc", "test_macro_f1", "train_seconds", "checkpoint"}``; each config
    trains into ``<options.output_root>/<name>`` and the checkpoint is
    :func:`zoo.reproduce.train_checkpoint`'s (``best.npz``, ``last.npz`` when
    the budget ended before any evaluation). ``options``: ``overrides``
    (``key=value`` strings applied to every config), ``device``, ``output_root``
    and ``quiet``, as ``oar reproduce`` parses them. ``exports``: optional dict
    name -> path; that model's checkpoint is written there as float16 weights
    (:func:`framework.engine.export_weights`), those weights are the ones scored
    and the row gets their ``"sha256"``.
    """
    exports = exports or {}
    rows = []
    for name in names:
        cfg = load_config(os.path.join(config_dir, f"{name}.yaml"), list(options.overrides))
        checkpoint, _, minutes = train_checkpoint(cfg, {"name": name}, options)
        row = {"name": name, "input": (cfg["task"].get("tokenizer") or {"type": "char"})["type"]}
        if name in exports:
            row["sha256"] = export_weights(checkpoint, exports[name])
            checkpoint = exports[name]
        dev = runner.evaluate_config(cfg, checkpoint, split="eval", device=options.device)
        test = runner.evaluate_config(cfg, checkpoint, split="test", device=options.device)
        row.update({"dev_acc": dev["acc"], "dev_macro_f1": dev["macro_f1"], "test_acc": test["acc"],
                    "test_macro_f1": test["macro_f1"], "train_seconds": minutes * 60, "checkpoint": checkpoint})
        rows.append(row)
    return rows


def results_table(rows, facts="", peer=None):
    """The Markdown block of ``docs/RESULTS.md``: one line per :func:`reproduce` row (model, input, dev
    accuracy, test accuracy and macro-F1, train time), the peer's line (a
    :func:`~zoo.reproduce.peers.sentiment_tfidf_peer` dict; None: a sentence saying it was not measured),
    then ``facts`` (how and where it was measured)."""
    lines = ["| model | input | dev acc | test acc | test macro-F1 | train time |", "|---|---|---|---|---|---|"]
    for row in rows:
        lines.append(f"| {row['name']} | {row['input']} | {row['dev_acc']:.3f} | {row['test_acc']:.3f} | "
                     f"{row['test_macro_f1']:.3f} | {row['train_seconds'] / 60:.1f} min |")
    if peer is not None:
        lines.append(f"| peer: TF-IDF + logistic regression (C={peer['C']:g}) | char 1-3-grams | "
                     f"{peer['dev_acc']:.3f} | {peer['test_acc']:.3f} | {peer['test_macro_f1']:.3f} | - |")
    notes = [] if peer is not None else ["The peer (TF-IDF over character 1-3-grams + logistic regression) was not "
                                         "measured: scikit-learn is not importable here."]
    return "\n".join(lines + [""] * bool(notes or facts) + notes + ([facts] if facts else []))


def reproduce_senta(entry, options):
    """``oar reproduce senta`` (or any Senta card): the procedure of the cards whose ``reproduce.function``
    names this function.

    Trains the card's ``reproduce.models`` (default :data:`ALL_CONFIGS`, the
    five models on characters, LAC words and SentencePiece pieces) and
    measures them on dev and test, and the TF-IDF peer when scikit-learn is
    importable (:mod:`zoo.reproduce.peers`). The shipped models (those of
    :data:`CHAR_MODELS` that have a card) are exported in float16 to their
    cards' ``weights.path`` and scored from there; their shared vocabulary (the
    task's, built from the training texts) is saved to ``weights.vocab``.
    With ``options.dry_run`` these files go under the dry-run folder
    (:func:`zoo.reproduce.destination`). Returns the outcome for
    :mod:`zoo.reproduce`: this card's ``metrics`` and ``weights``, ``models``
    (the other shipped cards' ones), and the table as ``results_text`` for the
    ``senta`` block of ``docs/RESULTS.md``.
    """
    names = list((entry.get("reproduce") or {}).get("models") or ALL_CONFIGS)
    shipped = {name: card for name, card in cards().items() if name in CHAR_MODELS and name in names}
    if entry["name"] not in shipped:
        raise ConfigError(f"card {entry['name']!r}: reproduce_senta serves the cards of {', '.join(CHAR_MODELS)}, "
                          f"and reproduce.models must include the card's own model")
    vocab_file = entry["weights"]["vocab"]
    vocab_path = destination(options, vocab_file)
    cfg = load_config(os.path.join(ROOT, entry["config"]), list(options.overrides))
    os.makedirs(os.path.dirname(vocab_path), exist_ok=True)
    runner.build_task(cfg).vocab.save(vocab_path)
    exports = {name: destination(options, card["weights"]["path"]) for name, card in shipped.items()}
    start, start_cpu = time.time(), time.process_time()
    pretrained = pretrain_vectors(names, options)
    rows = reproduce(names, options, exports=exports)
    peer = _measured_peer()
    facts = (f"{pretrained}Command: `oar reproduce senta`. Wall time {(time.time() - start) / 60:.1f} min, CPU time "
             f"{(time.process_time() - start_cpu) / 60:.1f} min in all; {machine_description()}; "
             f"{datetime.date.today().isoformat()}.")
    vocab = {"vocab": vocab_file, "vocab_sha256": sha256_of(vocab_path)}
    models = {row["name"]: {"metrics": {"split": "test", "acc": round(row["test_acc"], 4),
                                        "macro_f1": round(row["test_macro_f1"], 4)},
                            "weights": {"path": shipped[row["name"]]["weights"]["path"], "sha256": row["sha256"],
                                        **vocab}}
              for row in rows if row["name"] in shipped}
    own = models.pop(entry["name"])
    return {**own, "models": models, "results_name": "senta", "results_text": results_table(rows, facts, peer)}


def _measured_peer():
    """:func:`~zoo.reproduce.peers.sentiment_tfidf_peer`'s result, or None without scikit-learn."""
    try:
        return sentiment_tfidf_peer()
    except ImportError:
        return None
