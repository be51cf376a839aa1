"""``oar reproduce senta``: train the Senta family, measure it on dev and test, and write one table.

:func:`reproduce` trains the configs ``configs/nlp/senta_*.yaml``, each with
``options.seeds`` seeds (``--seeds N``: seeds 0 .. N-1, each run in
``<output_root>/<name>/seed<k>``; a finished run there made by the same config
is reused), scores every seed on dev and test and picks the median seed on dev
as the model's; :func:`reproduce_senta` is the zoo cards' procedure around it:
the optional label cleaning (:func:`label_cleaning`), the choice of each card's
model on dev (:func:`shipped_rows`: the head on characters, ``senta_<head>``, or
the same head on LAC's trunk, ``senta_<head>_lac``, where the card's recipe
trains both), float16 weights of the picked seeds, the vocabularies the shipped
models read, their cards, and the ``senta`` block of ``docs/RESULTS.md``
(:func:`results_table`: each model's mean and spread over the seeds, a paired
McNemar test of the shipped seed against the TF-IDF peer, and the ensemble of
the shipped models), with the peer when scikit-learn is importable.
"""
import datetime
import hashlib
import json
import os
import time

import numpy

from framework.atomic import atomic_write
from framework.config import ConfigError, load_config
from framework.engine import export_weights, runner
from framework.fetch import sha256_of
import nlp.senta.data  # noqa: F401  (registers the datasets, the models and the task the configs name)
import nlp.senta.model  # noqa: F401
import nlp.senta.task  # noqa: F401
from nlp.senta.data import LABEL_NAMES, write_drop_file
from nlp.senta.metrics import mcnemar_p, scores_of
from nlp.pretrain.skipgram import SKIPGRAM_SETTINGS, skipgram_path, skipgram_vectors
from nlp.pretrain.vectors import SKIPGRAM_SOURCE

from ..catalog import ROOT, cards
from . import destination, machine_description, train_checkpoint
from .peers import noisy_training_lines, out_of_fold_label_confidence, sentiment_tfidf_peer

__all__ = ["CHAR_MODELS", "TRUNK_SUFFIX", "ALL_CONFIGS", "pretrain_vectors", "reproduce", "label_cleaning",
           "ensemble", "results_table", "shipped_rows", "ship", "reproduce_senta"]

CHAR_MODELS = ("senta_bow", "senta_cnn", "senta_gru", "senta_lstm", "senta_bilstm")
TRUNK_SUFFIX = "_lac"                   # senta_<head>_lac: the same head on LAC's fine-tuned trunk
ALL_CONFIGS = CHAR_MODELS + tuple(f"{name}_{inputs}" for inputs in ("word", "spm", TRUNK_SUFFIX[1:])
                                  for name in CHAR_MODELS)
CONFIG_DIR = os.path.join(ROOT, "configs", "nlp")
CHAR_VOCAB = "zoo/weights/senta_char_vocab.txt"   # the character models' shared vocabulary (repository path)
_SCORES = "scores.json"          # a seed run's scores, written once it is trained and scored


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


def _examples(cfg, split):
    """The (text, label) pairs of the config's ``data.<split>`` dataset."""
    return [(item["text"], item["label"]) for item in runner.build_dataset(cfg, split)]


def _probabilities(cfg, checkpoint, texts, device):
    """P(positive) of each text under the checkpoint's weights: (N,) float64."""
    results = runner.infer(cfg, checkpoint, texts, device=device, progress=False)
    positive = LABEL_NAMES.index("positive")
    return numpy.array([r["score"] if r["label"] == LABEL_NAMES[positive] else 1.0 - r["score"] for r in results])


def _score(cfg, checkpoint, device):
    """Dev and test scores of the checkpoint: ``{"dev_acc", "dev_macro_f1", "test_acc", "test_macro_f1",
    "dev_prob", "test_prob"}`` (the probabilities as lists, in split order)."""
    row = {}
    for name, split in (("dev", "eval"), ("test", "test")):
        examples = _examples(cfg, split)
        prob = _probabilities(cfg, checkpoint, [text for text, _ in examples], device)
        scores = scores_of((prob >= 0.5).astype(numpy.int64), [label for _, label in examples])
        row.update({f"{name}_acc": scores["acc"], f"{name}_macro_f1": scores["macro_f1"],
                    f"{name}_prob": prob.tolist()})
    return row


def _config_sha256(cfg):
    return hashlib.sha256(json.dumps(cfg, sort_keys=True, default=str).encode("utf-8")).hexdigest()


def _seed_run(name, cfg, seed, options):
    """Train (or reuse) and score the seed run ``<output_root>/<name>/seed<seed>``: the :func:`_score` dict plus
    ``"seed"``, ``"train_seconds"`` and ``"checkpoint"``. A run is reused (``"reused": True``) when its
    ``scores.json`` records the same resolved config."""
    cfg = {**cfg, "train": {**cfg["train"], "seed": seed}}
    run_name = os.path.join(name, f"seed{seed}")
    run_dir, sha = os.path.join(options.output_root, run_name), _config_sha256(cfg)
    path = os.path.join(run_dir, _SCORES)
    if os.path.isfile(path):
        with open(path, encoding="utf-8") as f:
            done = json.load(f)
        if done.get("config_sha256") == sha and os.path.isfile(done["checkpoint"]):
            return {**done, "reused": True}
    checkpoint, _, minutes = train_checkpoint(cfg, run_name, options)
    row = {"seed": seed, "train_seconds": minutes * 60, "checkpoint": checkpoint, "config_sha256": sha,
           **_score(cfg, checkpoint, options.device)}
    with atomic_write(path) as f:
        json.dump(row, f)
    return row


def _median_seed(runs):
    """The index of the run whose dev accuracy is the median (the lower middle for an even count; the
    earlier seed among equals)."""
    order = sorted(range(len(runs)), key=lambda i: (runs[i]["dev_acc"], runs[i]["seed"]))
    return order[(len(order) - 1) // 2]


def reproduce(names, options, config_dir=CONFIG_DIR, extra_overrides=()):
    """Train each config ``<config_dir>/<name>.yaml`` with ``options.seeds`` seeds and score each seed's best
    checkpoint on dev and test.

    Returns one row per name: ``{"name", "input", "config", "runs", "seed", "dev_acc", "dev_macro_f1",
    "test_acc", "test_macro_f1", "dev_prob", "test_prob", "dev_labels", "test_labels", "train_seconds",
    "checkpoint"}``: ``config`` is the resolved config, ``runs`` holds every seed's scores (:func:`_seed_run`),
    the other keys are those of the seed picked (the median on dev accuracy), ``train_seconds`` the seeds'
    total, ``dev_labels`` and ``test_labels`` the splits' labels. Seed k trains into
    ``<options.output_root>/<name>/seed<k>`` with ``train.seed=k`` (:func:`zoo.reproduce.train_checkpoint`).
    ``options``: ``overrides`` (``key=value`` strings applied to every config, after ``extra_overrides``),
    ``device``, ``output_root``, ``quiet`` and ``seeds``, as ``oar reproduce`` parses them. The seeds train
    round by round (seed 0 of every model, then seed 1 …), so the finished rounds of a run cut short are
    reused by a run with fewer seeds.
    """
    configs = {name: load_config(os.path.join(config_dir, f"{name}.yaml"),
                                 list(extra_overrides) + list(options.overrides)) for name in names}
    runs = {name: [] for name in names}
    for seed in range(options.seeds):                   # seed by seed: a cut-short run leaves whole rounds
        for name in names:
            runs[name].append(_seed_run(name, configs[name], seed, options))
    rows = []
    for name, cfg in configs.items():
        picked = runs[name][_median_seed(runs[name])]
        rows.append({"name": name, "input": (cfg["task"].get("tokenizer") or {"type": "char"})["type"],
                     "config": cfg, "runs": runs[name],
                     **{key: value for key, value in picked.items() if key not in ("config_sha256", "reused")},
                     "train_seconds": sum(run["train_seconds"] for run in runs[name]),
                     **{f"{part}_labels": [label for _, label in _examples(cfg, split)]
                        for part, split in (("dev", "eval"), ("test", "test"))}})
    return rows


def shipped_rows(rows, card_names):
    """Which trained model each card ships: ``{card: row}`` for each name in ``card_names`` that has a row.

    A card ``senta_<head>`` ships its character model's row, or the row of the same head on LAC's trunk
    (``senta_<head>_lac``) when that one was trained too and its picked seed's dev accuracy is higher (a tie
    keeps the character model): the choice is made on dev only.
    """
    by_name = {row["name"]: row for row in rows}
    chosen = {}
    for card_name in card_names:
        candidates = [by_name[name] for name in (card_name, card_name + TRUNK_SUFFIX) if name in by_name]
        if candidates:
            chosen[card_name] = max(candidates, key=lambda row: row["dev_acc"])     # the first among equals
    return chosen


def ship(row, path, device):
    """Write the row's picked checkpoint as float16 weights to ``path`` and score those weights again (the
    shipped file is what the table reports); returns the row updated with ``sha256`` and ``checkpoint``."""
    sha = export_weights(row["checkpoint"], path)
    return {**row, **_score(row["config"], path, device), "checkpoint": path, "sha256": sha}


def label_cleaning(splits, thresholds, folds, folder):
    """The label cleaning of the training lines, its threshold chosen on dev.

    ``splits``: ``{"train", "dev", "test"}`` -> (text, label) lists. Each
    training line gets the peer's out-of-fold probability of its own label
    (``folds`` folds, :func:`~zoo.reproduce.peers.out_of_fold_label_confidence`);
    for each threshold in ``thresholds`` (and 0, no cleaning) the peer is fitted
    without the lines below it, and the threshold whose peer is most accurate on
    dev wins (the smallest among equals). The dropped texts are written to
    ``folder/drop.txt`` (:func:`nlp.senta.data.write_drop_file`). Returns
    ``{"threshold", "dropped", "drop_file" (None when nothing is dropped), "dev_acc" {threshold: peer's dev
    accuracy}, "drop" (the set of dropped texts)}``.
    """
    texts, labels = zip(*splits["train"])
    confidence = out_of_fold_label_confidence(texts, labels, folds=folds)
    dev, drops = {}, {}
    for threshold in sorted({0.0, *map(float, thresholds)}):
        drops[threshold] = {texts[i] for i in noisy_training_lines(confidence, threshold)}
        dev[threshold] = sentiment_tfidf_peer(splits, drop=drops[threshold])["dev_acc"]
    best = max(dev, key=lambda t: (dev[t], -t))
    path = None
    if drops[best]:
        os.makedirs(folder, exist_ok=True)
        path = os.path.join(folder, "drop.txt")
        write_drop_file(path, sorted(drops[best]))
    return {"threshold": best, "dropped": len(drops[best]), "drop_file": path, "dev_acc": dev, "drop": drops[best]}


def ensemble(rows):
    """The models' ensemble: the mean of the rows' P(positive), scored on dev and test: ``{"models" (how many),
    "input" (their inputs, e.g. ``char+lac``), "dev_acc", "dev_macro_f1", "test_acc", "test_macro_f1",
    "test_pred"}``."""
    result = {"models": len(rows), "input": "+".join(dict.fromkeys(row["input"] for row in rows))}
    for split in ("dev", "test"):
        pred = (numpy.mean([row[f"{split}_prob"] for row in rows], axis=0) >= 0.5).astype(numpy.int64)
        result.update({f"{split}_{key}": value for key, value in scores_of(pred, rows[0][f"{split}_labels"]).items()})
        result[f"{split}_pred"] = pred.tolist()
    return result


def _spread(values):
    """'mean ± sample sd (min-max)' of the seeds' values ('mean' alone for one seed)."""
    values = numpy.asarray(values)
    if values.size == 1:
        return f"{values[0]:.3f}"
    return f"{values.mean():.3f} ± {values.std(ddof=1):.3f} ({values.min():.3f}-{values.max():.3f})"


def results_table(rows, facts="", peer=None, combined=None, uncleaned=None, shipped=None):
    """The Markdown block of ``docs/RESULTS.md``: one line per :func:`reproduce` row (model, input, the
    picked seed (the median on dev), its dev accuracy, test accuracy and macro-F1, the test accuracy over the seeds, the McNemar
    p-value of the picked seed against the peer on test, train time of all seeds), the ensemble's line
    (``combined``, :func:`ensemble`'s dict, or None), the peer's line (a
    :func:`~zoo.reproduce.peers.sentiment_tfidf_peer` dict; None: a sentence saying it was not measured),
    the peer fitted on all training lines when the models' were cleaned (``uncleaned``, for reference; the
    p-values compare with ``peer``), a sentence naming the model each card ships (``shipped``: ``{card: row
    name}``, :func:`shipped_rows`), then ``facts`` (how and where it was measured)."""
    lines = ["| model | input | seeds | dev acc | test acc | test macro-F1 | test acc over the seeds "
             "(mean ± sd, min-max) | McNemar p vs peer | train time |", "|---|---|---|---|---|---|---|---|---|"]

    def p_value(pred, labels):
        if peer is None:
            return "-"
        labels = numpy.asarray(labels)
        return f"{mcnemar_p(numpy.asarray(pred) == labels, numpy.asarray(peer['test_pred']) == labels):.2g}"

    for row in rows:
        pred = (numpy.asarray(row["test_prob"]) >= 0.5).astype(numpy.int64)
        lines.append(f"| {row['name']} | {row['input']} | {len(row['runs'])} (median: seed {row['seed']}) | "
                     f"{row['dev_acc']:.3f} | {row['test_acc']:.3f} | {row['test_macro_f1']:.3f} | "
                     f"{_spread([run['test_acc'] for run in row['runs']])} | {p_value(pred, row['test_labels'])} | "
                     f"{row['train_seconds'] / 60:.1f} min |")
    if combined is not None:
        lines.append(f"| ensemble of the {combined['models']} shipped (mean probability) | {combined['input']} | - | "
                     f"{combined['dev_acc']:.3f} | "
                     f"{combined['test_acc']:.3f} | {combined['test_macro_f1']:.3f} | - | "
                     f"{p_value(combined['test_pred'], rows[0]['test_labels'])} | - |")
    for title, result in (("", peer), (", without the label cleaning", uncleaned)):
        if result is not None:
            lines.append(f"| peer: TF-IDF + logistic regression (C={result['C']:g}){title} | char 1-3-grams | - | "
                         f"{result['dev_acc']:.3f} | {result['test_acc']:.3f} | {result['test_macro_f1']:.3f} | "
                         f"- | - | - |")
    notes = [] if peer is not None else ["The peer (TF-IDF over character 1-3-grams + logistic regression) was not "
                                         "measured: scikit-learn is not importable here."]
    if shipped:
        notes.append("The cards ship, chosen on dev: " + ", ".join(
            f"{card} ({name})" for card, name in shipped.items()) + ".")
    return "\n".join(lines + [""] * bool(notes or facts) + notes + ([facts] if facts else []))


def reproduce_senta(entry, options):
    """``oar reproduce senta`` (or any Senta card): the procedure of the cards whose ``reproduce.procedure``
    names this function.

    Trains the card's ``reproduce.models`` (default :data:`ALL_CONFIGS`, the
    five heads on characters, LAC words, SentencePiece pieces and LAC's trunk),
    each with ``options.seeds`` seeds, and measures them on dev and test, with
    the shipped models' ensemble and the TF-IDF peer when scikit-learn is
    importable (:mod:`zoo.reproduce.peers`). With ``reproduce.label_cleaning:
    {thresholds: [...], folds: k}`` on the card, the training lines that
    :func:`label_cleaning` drops are left out for the models
    (``data.train.drop``) and the peer alike. Each card of :data:`CHAR_MODELS`
    among the models ships the model :func:`shipped_rows` picks on dev (its
    character config, or the same head on LAC's trunk when trained and better
    on dev), exported in float16 (the median seed on dev) to the card's
    ``weights.path`` and scored from there; a character model reads the
    shared vocabulary built from the training texts, saved to
    :data:`CHAR_VOCAB`, a trunk model LAC's fixed one. With
    ``options.dry_run`` these files go under the dry-run folder
    (:func:`zoo.reproduce.destination`). Returns the outcome for
    :mod:`zoo.reproduce`: this card's ``metrics``, ``weights``, ``config`` and
    ``overrides``, ``models`` (the other shipped cards' ones), and the table as
    ``results_text`` for the ``senta`` block of ``docs/RESULTS.md``.
    """
    recipe = entry.reproduce
    names = list(recipe.models or ALL_CONFIGS)
    shipped = {name: card for name, card in cards().items() if name in CHAR_MODELS and name in names}
    if entry.name not in shipped:
        raise ConfigError(f"card {entry.name!r}: reproduce_senta serves the cards of {', '.join(CHAR_MODELS)}, "
                          f"and reproduce.models must include the card's own model")
    cfg = load_config(os.path.join(CONFIG_DIR, f"{entry.name}.yaml"), list(options.overrides))
    vocab_path = destination(options, CHAR_VOCAB)
    os.makedirs(os.path.dirname(vocab_path), exist_ok=True)
    runner.build_task(cfg).vocab.save(vocab_path)
    start, start_cpu = time.time(), time.process_time()
    pretrained = pretrain_vectors(names, options)
    splits = {part: _examples(cfg, split) for part, split in (("train", "train"), ("dev", "eval"), ("test", "test"))}
    cleaning = _cleaning(recipe.label_cleaning, splits, options)
    extra = [f"data.train.drop={cleaning['drop_file']}"] if cleaning and cleaning["drop_file"] else []
    rows = reproduce(names, options, extra_overrides=extra)
    chosen = {card: ship(row, destination(options, shipped[card].weights.path), options.device)
              for card, row in shipped_rows(rows, shipped).items()}
    exported = {row["name"]: row for row in chosen.values()}          # scored again from the float16 files
    rows = [exported.get(row["name"], row) for row in rows]
    peer = _measured_peer(splits, cleaning["drop"] if cleaning else frozenset())
    uncleaned = _measured_peer(splits, frozenset()) if cleaning and cleaning["drop"] else None
    combined = ensemble(list(chosen.values())) if len(chosen) > 1 else None
    reused = sum(run.get("reused", False) for row in rows for run in row["runs"])
    reuse = (f" ({reused} of the {sum(len(row['runs']) for row in rows)} seed runs were finished by an earlier "
             f"invocation in the same output folder and reused; the train time column counts their training)"
             if reused else "")
    facts = (f"{pretrained}{_cleaning_sentence(cleaning)}Command: `oar reproduce senta"
             f"{f' --seeds {options.seeds}' if options.seeds > 1 else ''}`{reuse}. Wall time "
             f"{(time.time() - start) / 60:.1f} min, CPU time {(time.process_time() - start_cpu) / 60:.1f} min in "
             f"all; {machine_description()}; {datetime.date.today().isoformat()}.")
    models = {card: _card_fields(row, shipped[card].weights.path, vocab_path) for card, row in chosen.items()}
    own = models.pop(entry.name)
    return {**own, "models": models, "results_name": "senta",
            "results_text": results_table(rows, facts, peer, combined, uncleaned,
                                          {card: row["name"] for card, row in chosen.items()})}


def _card_fields(row, weights_path, vocab_path):
    """What a card that ships ``row`` (a :func:`ship`-ed row) records: its test ``metrics``, its ``config``,
    its ``weights`` and, for a model on characters, the shared vocabulary as a companion and the override
    that reads it."""
    weights = {"path": weights_path, "sha256": row["sha256"]}
    overrides = []
    if row["input"] == "char":
        weights.update(vocab=CHAR_VOCAB, vocab_sha256=sha256_of(vocab_path))
        overrides = [f"task.vocab={CHAR_VOCAB}"]
    return {"metrics": {"split": "test", "acc": round(row["test_acc"], 4), "macro_f1": round(row["test_macro_f1"], 4)},
            "weights": weights, "config": os.path.relpath(os.path.join(CONFIG_DIR, f"{row['name']}.yaml"), ROOT),
            "overrides": overrides}


def _cleaning(spec, splits, options):
    """:func:`label_cleaning`'s result for the card's ``label_cleaning`` section (None: no cleaning)."""
    if not spec:
        return None
    try:
        return label_cleaning(splits, spec.get("thresholds", ()), spec.get("folds", 5),
                              os.path.join(options.output_root, "label_cleaning"))
    except ImportError as err:
        raise ConfigError(f"reproduce.label_cleaning: {err}") from None


def _cleaning_sentence(cleaning):
    """A sentence for the table's facts on the label cleaning ("" without one)."""
    if cleaning is None:
        return ""
    tried = ", ".join(f"{t:g}: {acc:.3f}" for t, acc in cleaning["dev_acc"].items())
    return (f"Label cleaning: the training lines whose out-of-fold probability of their own label under the peer "
            f"is below {cleaning['threshold']:g} are dropped ({cleaning['dropped']} lines) for the models and the "
            f"peer alike; the threshold chosen on the peer's dev accuracy (threshold: dev acc, {tried}). ")


def _measured_peer(splits, drop):
    """:func:`~zoo.reproduce.peers.sentiment_tfidf_peer`'s result on ``splits`` without the training lines in
    ``drop``, or None without scikit-learn."""
    try:
        return sentiment_tfidf_peer(splits, drop=drop)
    except ImportError:
        return None
