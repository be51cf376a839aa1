"""``oar reproduce lac_pku`` and ``oar reproduce lac``: the lexical-analysis cards' own procedures.

Both score on the People's Daily 1998-01 test split with
:class:`~nlp.lac.metrics.LexicalMetrics` / :func:`~nlp.lac.metrics.score_sentences`
(segmentation, POS-aware and entity P/R/F1) and return what
:mod:`zoo.reproduce` writes into the card and ``docs/RESULTS.md``.

- :func:`reproduce_lac_pku` saves the train split's character vocabulary to
  the card's ``weights.vocab`` (the task's ``vocab_file``, so the shipped model
  runs without the corpus) and, when the config uses lexicon features (the
  task's ``lexicon_file``), the train split's words to the card's
  ``weights.lexicon`` (:meth:`PeoplesDailyTagging.lexicon
  <nlp.lac.data.PeoplesDailyTagging.lexicon>` of the training
  data) and, when the training data also matches the official LAC
  dictionaries (``official_lexicon``), their words to
  ``weights.official_lexicon`` (the task's second lexicon file), then trains
  the card's config, evaluates the best dev checkpoint on test and exports
  float16 weights.
- :func:`reproduce_lac` runs the official LAC model on the test split's raw
  text (one corpus line per input) and scores its words and tags against the
  gold ones, renaming its entity tags with :data:`nlp.lac.metrics.OFFICIAL_TAG_MAP`.
- :func:`reproduce_lac_seg` and :func:`reproduce_lac_small` do the same for
  the official seg model (its words only: segmentation P/R/F1) and the 2019
  PaddleNLP LAC (words and tags, its entity tags renamed the same way).
"""
import datetime
import json
import os
import time

from framework.config import ConfigError, location
from framework.fetch import sha256_of
from framework.registry import DATASETS, MODELS
from nlp.data.peoples_daily import read_sentences
from nlp.lac.lexicon import save_lexicon
from nlp.lac.metrics import OFFICIAL_TAG_MAP, score_sentences
from nlp.lac.official import official_words
from nlp.lac.task import load_official_task

from . import recipe_config, destination, machine_description, train_and_measure

__all__ = ["reproduce_lac_pku", "reproduce_lac", "reproduce_lac_seg", "reproduce_lac_small", "metrics_table"]


def metrics_table(metrics):
    """A Markdown table (str) of segmentation, POS-aware and entity P/R/F1, and per-type entity F1."""
    rows = ["| | P | R | F1 |", "|---|---|---|---|"]
    for key, label in (("seg", "segmentation"), ("pos", "POS-aware"), ("entity", "entities (nr, ns, nt)")):
        rows.append(f"| {label} | {metrics[key + '_p']:.4f} | {metrics[key + '_r']:.4f} | {metrics[key + '_f1']:.4f} |")
    for kind in ("nr", "ns", "nt"):
        rows.append(f"| entity {kind} | {metrics['entity_p_' + kind]:.4f} | {metrics['entity_r_' + kind]:.4f} | "
                    f"{metrics['entity_f1_' + kind]:.4f} |")
    return "\n".join(rows)


def _rounded(split, metrics):
    return {"split": split, **{k: round(float(v), 4) for k, v in metrics.items()}}


def _run_facts(wall, cpu, load_before, options):
    """One paragraph: command, wall and CPU time, machine, load averages, date."""
    threads = os.environ.get("OPENBLAS_NUM_THREADS", "default")
    load_after = os.getloadavg()[0]
    return (f"Wall time {wall / 60:.1f} min, CPU time {cpu / 60:.1f} min (OPENBLAS_NUM_THREADS={threads}); "
            f"{machine_description()}, 1-minute load average {load_before:.1f} at the start and {load_after:.1f} "
            f"at the end (the machine is shared). Date: {datetime.date.today().isoformat()}.")


def reproduce_lac_pku(entry, options):
    """Train and measure ``lac_pku`` (see the module docstring); returns the outcome for :mod:`zoo.reproduce`.

    The vocabulary is the config's training dataset's (``data.train``), saved
    where the card's ``weights.vocab`` says (under the dry-run folder with
    ``--dry_run``) and given to the task as ``vocab_file``; its size must equal
    ``model.vocab_size``. The lexicon (when the task has a ``lexicon_file``)
    is saved where ``weights.lexicon`` says and given as ``lexicon_file``.
    """
    start_wall, start_cpu, load_before = time.time(), time.process_time(), os.getloadavg()[0]
    cfg = recipe_config(entry, options)
    train = DATASETS.build(cfg["data"]["train"], where=f"{entry.config}: data.train")
    vocab = train.vocab
    if len(vocab) != cfg["model"]["vocab_size"]:
        raise ConfigError(f"{entry.config}: model.vocab_size is {cfg['model']['vocab_size']} but the training "
                          f"data's vocabulary has {len(vocab)} entries; set model.vocab_size={len(vocab)}")
    vocab_path = destination(options, entry.weights.companions["vocab"])
    os.makedirs(os.path.dirname(vocab_path), exist_ok=True)
    vocab.save(vocab_path)
    overrides, shipped = [f"task.vocab_file={vocab_path}"], {"vocab": vocab_path}
    lexicon = None
    if cfg["task"].get("lexicon_file"):
        lexicon = _save_lexicon(entry, options, train)
        shipped.update(lexicon["files"])
        # a JSON list is a YAML flow sequence whose quoted paths may hold commas, colons or brackets
        overrides.append(f"task.lexicon_file={json.dumps(list(lexicon['files'].values()))}")
    outcome = train_and_measure(entry, options, extra_overrides=overrides)
    wall, cpu = time.time() - start_wall, time.process_time() - start_cpu
    outcome["weights"] = outcome["weights"].replace(
        companion_sha256={**entry.weights.companion_sha256, **{key: sha256_of(path) for key, path in shipped.items()}})
    summary, metrics = outcome["summary"], outcome["metrics"]
    kept = f"step {summary['best_step']}" if summary.get("best_step") is not None else "the last step"
    outcome["results_text"] = (
        f"### lac_pku (`oar reproduce lac_pku`)\n\n"
        f"`{entry.config}` ({_features_text(cfg, lexicon)}) trained on the People's Daily 1998-01 train "
        f"split for {summary['epoch']} epochs ({summary['step']} steps); the checkpoint kept is the best on dev by "
        f"`pos_f1` ({kept}). Scores on the {metrics['split']} split:\n\n{metrics_table(metrics)}\n\n"
        f"{_run_facts(wall, cpu, load_before, options)}")
    return outcome


def _save_lexicon(entry, options, train):
    """Save the training data's lexicon where the card's ``weights.lexicon`` says, and the official
    dictionaries' words where ``weights.official_lexicon`` says when the data matches them; returns
    ``{"files": {card key: path, in the task's order}, "words", "official_words", "min_freq", "max_len",
    "folds"}``."""
    lexicons = {"lexicon": train.lexicon()}
    if train.official_lexicon:
        lexicons["official_lexicon"] = official_words(train.lexicon_max_len)
    files = {}
    for key, words in lexicons.items():
        if key not in entry.weights.companions:
            raise ConfigError(f"{entry.config}: the task reads lexicon features but the card {entry.name!r} "
                              f"names no weights.{key} to write those words to")
        files[key] = destination(options, entry.weights.companions[key])
        save_lexicon(words, files[key])
    return {"files": files, "words": len(lexicons["lexicon"]),
            "official_words": len(lexicons.get("official_lexicon", ())), "min_freq": train.lexicon_min_freq,
            "max_len": train.lexicon_max_len, "folds": train.lexicon_folds}


def _features_text(cfg, lexicon):
    """The network, its options beyond the official LAC, the lexicon and the decoding of ``cfg``, in words."""
    parts = [MODELS.build(cfg["model"], where=location(cfg, "model")).describe()]
    if lexicon:
        jackknife = (f"; in training each sample is matched against the words of the train lines outside its fold "
                     f"({lexicon['folds']} folds)" if lexicon["folds"] else "")
        parts.append(f"the lexicon: the {lexicon['words']} train-split words of 2..{lexicon['max_len']} characters "
                     f"seen >= {lexicon['min_freq']} times, flagged per word length where one starts, ends or lies "
                     f"across a character{jackknife}")
        if lexicon["official_words"]:
            parts.append(f"a second lexicon, flagged the same way: the {lexicon['official_words']} words of "
                         f"2..{lexicon['max_len']} characters of the official LAC model's dictionaries")
    if cfg["data"]["train"].get("official_chars"):
        parts.append("the vocabulary also holds the official LAC model's characters unseen in train")
    if cfg["model"].get("official_embedding_vocab"):
        parts.append("the embedding starts from the official LAC model's character embedding")
    if cfg["task"].get("constrain_decoding"):
        parts.append("decoding constrained to well-formed label sequences")
    return "; ".join(parts)


def reproduce_lac(entry, options):
    """Score the official LAC model on the test split (see the module docstring); returns the outcome.

    ``options.overrides`` may hold ``limit=N`` to score only the first N test
    lines (a quick rehearsal); nothing else is accepted.
    """
    limit = _limit(options.overrides)
    start_wall, start_cpu, load_before = time.time(), time.process_time(), os.getloadavg()[0]
    gold = read_sentences("test")[:limit]
    metrics = score_sentences(load_official_task().predict_raw, gold, tag_map=OFFICIAL_TAG_MAP)
    wall, cpu = time.time() - start_wall, time.process_time() - start_cpu
    split = "test" if limit is None else f"test[:{limit}]"
    mapping = ", ".join(f"{k} -> {v}" for k, v in OFFICIAL_TAG_MAP.items())
    text = (f"### lac (`oar reproduce lac`)\n\n"
            f"Baidu's official LAC 2.1.2 model on oar, run on the raw text of the People's Daily 1998-01 "
            f"{split} split ({len(gold)} lines, one input each) and scored against the PKU gold words and tags. "
            f"Its entity tags are renamed {mapping}; every other tag is kept as LAC writes it. LAC follows its own "
            f"segmentation standard and tag set: it writes a personal name as one word (江泽民/PER where PKU has "
            f"江/nr 泽民/nr; the entity scores merge PKU's surname and given name into one person span, so this "
            f"matches there), joins numbers with their measure words and many multi-word names (２０周年/m against "
            f"２０/m 周年/q, 人民大会堂/LOC against 人民/n 大会堂/n), and has no tags for PKU's Ng, Vg, j, l, i, b, "
            f"z and others. The scores therefore measure agreement with the PKU annotation, not LAC's accuracy "
            f"on its own standard.\n\n"
            f"{metrics_table(metrics)}\n\n{_run_facts(wall, cpu, load_before, options)}")
    tags = "/".join(OFFICIAL_TAG_MAP) + " as " + "/".join(OFFICIAL_TAG_MAP.values())
    return {"metrics": _rounded(f"{split}, {tags}", metrics), "results_text": text}


def _limit(overrides):
    """The ``limit=N`` override of :func:`reproduce_lac` (None when absent)."""
    limit = None
    for item in overrides:
        key, _, value = item.partition("=")
        if key != "limit" or not value.isdigit() or int(value) < 1:
            raise ConfigError(f"oar reproduce lac: the only override is limit=N (N >= 1 test lines), got {item!r}")
        limit = int(value)
    return limit


def _scored(options, predict, tag_map=None):
    """(gold sentences, metrics, split name, run facts) of ``predict`` (texts -> ``{"words", "tags"}``) on the
    test split, or its first N lines with the override ``limit=N``."""
    limit = _limit(options.overrides)
    start_wall, start_cpu, load_before = time.time(), time.process_time(), os.getloadavg()[0]
    gold = read_sentences("test")[:limit]
    metrics = score_sentences(predict, gold, tag_map=tag_map)
    facts = _run_facts(time.time() - start_wall, time.process_time() - start_cpu, load_before, options)
    return gold, metrics, "test" if limit is None else f"test[:{limit}]", facts


def reproduce_lac_seg(entry, options):
    """Score the official seg model's words on the test split (segmentation P/R/F1; ``limit=N`` as for
    :func:`reproduce_lac`); returns the outcome."""
    from nlp.lac.seg import load_official_seg_task
    task = load_official_seg_task()

    def predict(texts):
        return [{"words": r["words"], "tags": [""] * len(r["words"])} for r in task.predict_raw(texts)]
    gold, metrics, split, facts = _scored(options, predict)
    metrics = {k: v for k, v in metrics.items() if k.startswith("seg_")}
    text = (f"### lac_seg (`oar reproduce lac_seg`)\n\n"
            f"Baidu's official LAC 2.1.2 segmentation model (`LAC(mode=\"seg\")`) on oar, run on the raw text of "
            f"the People's Daily 1998-01 {split} split ({len(gold)} lines, one input each); its words scored "
            f"against the PKU gold words (LAC's own segmentation standard, see `lac` above).\n\n"
            f"| | P | R | F1 |\n|---|---|---|---|\n| segmentation | {metrics['seg_p']:.4f} | {metrics['seg_r']:.4f} | "
            f"{metrics['seg_f1']:.4f} |\n\n{facts}")
    return {"metrics": _rounded(split, metrics), "results_text": text}


def reproduce_lac_small(entry, options):
    """Score the 2019 PaddleNLP LAC on the test split as :func:`reproduce_lac` scores the official model;
    returns the outcome."""
    from nlp.lac.small import load_small_task
    gold, metrics, split, facts = _scored(options, load_small_task().predict_raw, tag_map=OFFICIAL_TAG_MAP)
    mapping = ", ".join(f"{k} -> {v}" for k, v in OFFICIAL_TAG_MAP.items())
    text = (f"### lac_small (`oar reproduce lac_small`)\n\n"
            f"The 2019 PaddleNLP LAC (the parameters jieba 0.42.1 ships) on oar, run on the raw text of the "
            f"People's Daily 1998-01 {split} split ({len(gold)} lines, one input each) and scored against the PKU "
            f"gold words and tags, its entity tags renamed {mapping} (it also writes nr, ns, nt and t itself).\n\n"
            f"{metrics_table(metrics)}\n\n{facts}")
    tags = "/".join(OFFICIAL_TAG_MAP) + " as " + "/".join(OFFICIAL_TAG_MAP.values())
    return {"metrics": _rounded(f"{split}, {tags}", metrics), "results_text": text}
