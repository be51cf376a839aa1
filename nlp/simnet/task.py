"""Text matching (SimNet): two raw texts -> tokens -> ids -> a SimNet model -> a score and a 0/1 label.

:class:`TextMatching` owns the text pipeline that it shares with sentiment
classification (:mod:`nlp.common`): a tokeniser (:mod:`nlp.data.tokenizers`,
characters by default or LAC words), a vocabulary built from the training
pairs' texts (or loaded from a file) and truncation to ``max_len`` tokens. The
datasets (:mod:`nlp.simnet.data`)
yield raw pairs or triples and the task's ``collate_fn`` makes the batches:

- pairs ``{"a_ids", "a_lengths", "b_ids", "b_lengths", "label", "neg_type", "query_id"}``;
- triples ``{"q_ids", "q_lengths", "p_ids", "p_lengths", "n_ids", "n_lengths"}``.

Training: a pointwise model (logits (N, 2)) learns from pairs with softmax
cross entropy; a pairwise model (cosine scores) from triples with the hinge
loss ``mean(max(0, margin - cos(q, p) + cos(q, n)))``.

**Threshold.** A pair matches when its score (the probability of "match" for
pointwise models, the cosine for pairwise ones) reaches the model's
``threshold`` buffer, which is saved with the weights. While the task trains
(once it has computed a loss), every evaluation — the Trainer's, on
``data.eval``, the dev pairs — sets the threshold to the one that maximises
accuracy there (:class:`~nlp.simnet.metrics.ThresholdSearch`), so each
checkpoint carries the threshold chosen on dev for its weights; evaluating
outside training never changes it.

Metrics: accuracy at the threshold, AUC, pairwise ranking accuracy and
accuracy per negative type (:mod:`nlp.simnet.metrics`).

**Your own pairs.** A TSV file ``text_a<TAB>text_b<TAB>label`` (label 0 or 1;
``examples/matching_pairs.tsv`` has 20) trains and evaluates with the shipped
configs: point the data sections and the vocabulary's corpus at your files
(a pairwise config makes its training triples from the pairs of each
``text_a`` that has both a positive and a negative)::

    oar train -c configs/nlp/simnet_cnn_pointwise.yaml --output_dir outputs/my_matching \
      -o task.corpus=my_train.tsv data.train.path=my_train.tsv data.eval.path=my_dev.tsv data.test.path=my_test.tsv
    oar eval -c configs/nlp/simnet_cnn_pointwise.yaml --output_dir outputs/my_matching --split test -o ...(same)

The vocabulary is built from the training file's texts (add
``task.min_freq=1`` for a small file: the default 2 drops characters seen once);
the run's directory keeps a copy (``save_assets``), which ``oar eval`` and
``oar infer --output_dir`` read, so the ``-o task.corpus=…`` need not be repeated there.
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
from nlp.data.vocab import Vocab

from .builder import builder_file
from .pairs import read_pair_file
from .metrics import MatchAccuracy, MatchAUC, NegTypeAccuracy, RankingAccuracy, ScoredPairs, ThresholdSearch

__all__ = ["MatchingCollator", "TextMatching", "corpus_texts", "prepare_vocab"]

_PAIR_SIDES = (("a", "text_a"), ("b", "text_b"))
_TRIPLE_SIDES = (("q", "query"), ("p", "pos"), ("n", "neg"))


class MatchingCollator(TokenEncoder):
    """Raw pair or triple samples -> a padded batch of token ids.

    Each text is tokenised (at most ``max_len * 8`` of its characters), cut
    to ``max_len`` tokens and mapped through ``vocab``; a text with no token
    (empty, or only spaces) becomes one unknown token, so every length is >= 1.

    Pairs ``{"text_a", "text_b"}`` (+ ``"label"``, ``"neg_type"``, ``"query_id"``
    when present) -> ``a_ids`` (N, L), ``a_lengths`` (N,), ``b_ids`` (N, L), ``b_lengths`` (every side
    padded to the batch's longest text, as the model stacks the sides to encode them at once)
    (+ ``label`` (N,) int64, ``neg_type`` list of N str, ``query_id`` (N,) int64).
    Triples ``{"query", "pos", "neg"}`` -> ``q_*``, ``p_*``, ``n_*`` ids and lengths.
    """

    def __call__(self, samples):
        sides = _TRIPLE_SIDES if "pos" in samples[0] else _PAIR_SIDES
        encoded = [self.encode([s[key] for s in samples]) for _, key in sides]
        ids, lengths = pad_sequences([i for side in encoded for i in side], pad_value=Vocab.PAD_ID,
                                     dtype=numpy.int64)           # every side padded to one width
        batch = {}
        for k, (prefix, _) in enumerate(sides):
            rows = slice(k * len(samples), (k + 1) * len(samples))
            batch[f"{prefix}_ids"], batch[f"{prefix}_lengths"] = ids[rows], lengths[rows]
        if "label" in samples[0]:
            batch["label"] = numpy.asarray([s["label"] for s in samples], dtype=numpy.int64)
        if "neg_type" in samples[0]:
            batch["neg_type"] = [s["neg_type"] for s in samples]
        if "query_id" in samples[0]:
            batch["query_id"] = numpy.asarray([s["query_id"] for s in samples], dtype=numpy.int64)
        return batch


def corpus_texts(corpus):
    """(key, train texts, other texts) of a corpus: 'peoples_daily' (the builder's pairs, default seed:
    the train split's texts, and those of dev and test) or the path of a user's pair file (no other texts).

    ``key`` names the corpus in cache folders.
    """
    if corpus == "peoples_daily":
        train = read_pair_file(builder_file("train.tsv"))
        other = [t for split in ("dev", "test") for p in read_pair_file(builder_file(f"{split}.tsv"))
                 for t in (p.text_a, p.text_b)]
        key = os.path.basename(os.path.dirname(builder_file("train.tsv")))
    else:
        train, other, key = read_pair_file(corpus), [], f"file-{sha256_of(corpus)[:16]}"
    texts = list(dict.fromkeys(t for p in train for t in (p.text_a, p.text_b)))
    return key, texts, list(dict.fromkeys(other))


def prepare_vocab(tokenizer, corpus="peoples_daily", min_freq=2, max_size=None):
    """Fit ``tokenizer`` on the corpus's training texts and build (or load the cached) vocabulary.

    The vocabulary holds the tokens seen at least ``min_freq`` times in the
    training texts, most frequent first, at most ``max_size`` entries with pad
    and unk. The tokeniser's artefacts (e.g. the LAC words of every text) and
    the vocabulary are cached under ``$OAR_HOME/matching/vocab/<corpus>/<tokeniser>/``
    (:func:`~nlp.common.cached_vocab`).
    """
    key, train, other = corpus_texts(corpus)
    return cached_vocab(tokenizer, os.path.join(oar_home(), "matching", "vocab", key, tokenizer.signature), train,
                        other, min_freq, max_size)


def _as_pair(item, index):
    """``(text_a, text_b)`` from a pair (tuple/list of two str) or a str ``text_a<TAB>text_b``, optionally
    followed by ``<TAB>label`` (0 or 1) and ``<TAB>neg_type`` as in a pair file (those are ignored)."""
    if isinstance(item, str):
        fields = item.split("\t")
        if len(fields) == 2 or (len(fields) in (3, 4) and fields[2].strip() in ("0", "1")):
            return fields[0], fields[1]
    elif isinstance(item, (tuple, list)) and len(item) == 2 and all(isinstance(t, str) for t in item):
        return tuple(item)
    raise InputTypeError(f"a matching input must be a pair [text_a, text_b] or 'text_a<TAB>text_b' "
                         f"(optionally followed by '<TAB>label'), got {_described(item)}", index=index)


def _described(item):
    """What a wrong matching input is, in a few words: ``a str with 3 tab-separated columns 'a\\tb\\tc'``."""
    if isinstance(item, str):
        columns = item.count("\t") + 1
        shape = "no tab" if columns == 1 else f"{columns} tab-separated columns"
        return f"a str with {shape} {item[:40]!r}"
    if isinstance(item, (tuple, list)):
        kinds = ", ".join(type(t).__name__ for t in item[:4]) + (", …" if len(item) > 4 else "")
        return f"a {type(item).__name__} of {len(item)} item(s) ({kinds})"
    return f"a {type(item).__name__}"


@TASKS.register()
class TextMatching(Task):
    """Do two texts say the same thing? A score and a label 1 (match) or 0.

    Args:
        model: a SimNet model (:mod:`nlp.simnet.model`): ``encode``, ``match``,
            ``head`` ('pointwise' or 'pairwise'), ``vocab_size`` and a ``threshold`` buffer.
        tokenizer: tokeniser config (``{type: char}`` by default, ``{type: lac_word}``, or ``{type: lac}``,
            LAC's own tokens, with a model on LAC's trunk).
        vocab: a vocabulary file (:meth:`Vocab.save` format); when None it is
            built from ``corpus``'s training texts (and cached), capped at the
            model's ``vocab_size``.
        corpus: 'peoples_daily' (the builder's pairs) or the path of a user's pair file.
        min_freq: tokens rarer than this in the training texts become unknown.
        max_len: tokens kept per text (the rest is cut off).
        margin: the hinge loss margin of pairwise training.
        calibrate: choose the threshold on each evaluation while training (see the module docstring).
        metrics: metric objects (default: accuracy, AUC, accuracy per negative type, ranking accuracy).

    ``predict([(text_a, text_b), ...])`` -> ``[{"score": s, "label": 0|1}]``.
    """

    dynamic_axes = {"a_ids": {0: "batch", 1: "seq"}, "a_lengths": {0: "batch"},
                    "b_ids": {0: "batch", 1: "seq"}, "b_lengths": {0: "batch"}}
    input_length = staticmethod(text_length)

    def __init__(self, model, tokenizer: dict = None, vocab: str = None, corpus: str = "peoples_daily",
                 min_freq: int = 2, max_len: int = 128, margin: float = 0.1, calibrate: bool = True, metrics=None):
        self.model, self.margin, self.calibrate = model, float(margin), bool(calibrate)
        self._metrics = metrics
        self._training = False
        self.tokenizer = build_text_tokenizer(tokenizer)
        self.vocab = task_vocab("TextMatching", vocab, model,
                                lambda capacity: prepare_vocab(self.tokenizer, corpus, min_freq, capacity))
        self.collate_fn = MatchingCollator(self.tokenizer, self.vocab, max_len)
        if hasattr(model, "use_vocabulary"):
            model.use_vocabulary(self.vocab.tokens)           # a trunk starts its rows by token

    @property
    def threshold(self):
        """The model's threshold (a float)."""
        return float(self.model.threshold.numpy()[0])

    def set_threshold(self, value):
        """Store ``value`` as the model's threshold."""
        self.model.threshold.data[...] = value

    def loss(self, batch):
        self._training = True
        model = self.model
        if model.head == "pairwise":
            if "q_ids" not in batch:
                raise ValueError("TextMatching: a pairwise model trains on triples (query, pos, neg); "
                                 "use MatchingTriples for data.train")
            query, pos, neg = model.encode_many(*((batch[f"{k}_ids"], batch[f"{k}_lengths"]) for k in "qpn"))
            positive, negative = model.match(query, pos), model.match(query, neg)
            return F.relu(negative - positive + self.margin).mean()
        if "a_ids" not in batch:
            raise ValueError("TextMatching: a pointwise model trains on labelled pairs; "
                             "use MatchingPairs for data.train")
        return F.cross_entropy(model(batch["a_ids"], batch["a_lengths"], batch["b_ids"], batch["b_lengths"]),
                               batch["label"])

    def scores(self, batch):
        """Scores (N,) of a pair batch: P(match) for pointwise models, the cosine for pairwise ones."""
        out = self.model(batch["a_ids"], batch["a_lengths"], batch["b_ids"], batch["b_lengths"])
        return F.softmax(out, axis=-1)[:, 1] if self.model.head == "pointwise" else out

    def predict_batch(self, batch):
        if "a_ids" not in batch:
            raise ValueError("TextMatching: predictions and evaluation take pairs (MatchingPairs), not triples")
        scores = self.scores(batch)
        threshold = self.threshold
        return {"score": scores, "pred": (scores >= threshold).astype("int64"), "threshold": threshold}

    def metrics(self):
        metrics = self._metrics if self._metrics is not None else [MatchAccuracy(), MatchAUC(), NegTypeAccuracy(),
                                                                   RankingAccuracy()]
        if self.calibrate and self._training:
            targets = [m for m in metrics if isinstance(m, ScoredPairs)]
            return [ThresholdSearch(targets=targets, on_choose=self.set_threshold)] + list(metrics)
        return metrics

    def save_assets(self, directory):
        """The vocabulary (``task.vocab``) and a tokeniser model, if any
        (:func:`~nlp.common.text_task_assets`)."""
        return text_task_assets(self, directory)

    def preprocess(self, inputs):
        if not inputs:
            raise InputError("TextMatching: predict needs at least one pair")
        pairs = [_as_pair(item, i) for i, item in enumerate(inputs)]
        return self.collate_fn([{"text_a": a, "text_b": b} for a, b in pairs])

    def postprocess(self, outputs):
        scores, preds = to_numpy(outputs["score"]), to_numpy(outputs["pred"])
        return [{"score": float(s), "label": int(p)} for s, p in zip(scores.tolist(), preds.tolist())]
