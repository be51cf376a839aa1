"""Lexical-analysis metrics: word segmentation, part of speech and named entities, scored on spans.

A sentence's analysis is a list of words with a type each. From character
labels in LAC's scheme (``X-B``, ``X-I``, ``O``) words are read with this rule
(:func:`spans`): **a word starts at every ``-B`` label, and at an ``-I`` or
``O`` label whose type differs from the previous character's** (``O`` counts as
its own type, so a run of ``O`` is one word of type ``O``); every other
character continues the current word. For well-formed sequences (``X-I`` only
after ``X-B``/``X-I``, as in the corpus) this is the plain reading. LAC's own
postprocessing differs on ill-formed ones: it starts words only at ``-B`` (or
``-S``) labels, appends any ``-I`` or ``O`` character to the previous word
whatever its type, and names a word after its *last* character; so
``n-B v-I`` is one word there and two words (``n``, ``v``) here.

Scores (micro-averaged over all words of all sentences):

- segmentation (``seg_*``): a predicted word is right when its span (start,
  end) equals a gold word's;
- POS-aware (``pos_*``): span and type right;
- entities (``entity_*``): spans of the ``entity_types`` (default ``nr``, ``ns``,
  ``nt``), span and type right, per type (``entity_f1_nr`` …) and together.
  Adjacent words of the person type (``nr``: surname + given name, ``江/nr
  泽民/nr``) are first merged into one person span, in gold and prediction.

P = right / predicted, R = right / gold, F1 = 2PR / (P + R); each is 0.0 when
its denominator is 0.

:class:`LexicalMetrics` (registered) scores batches of label ids;
:func:`score_words` scores lists of ``(words, tags)`` against gold ones (e.g.
the official LAC's output, with ``tag_map`` turning its ``PER``/``LOC``/``ORG``/``TIME``
into ``nr``/``ns``/``nt``/``t``, :data:`OFFICIAL_TAG_MAP`); :func:`score_sentences`
runs a tagger on gold sentences' raw text and scores its words.
"""
import numpy

from framework.engine.metrics import Metric, to_numpy
from framework.registry import METRICS

from nlp.data.peoples_daily import TAGSET as PEOPLES_DAILY_TAGSET
from nlp.data.text import full_to_half
from nlp.data.vocab import TagSet

__all__ = ["ENTITY_TYPES", "OFFICIAL_TAG_MAP", "spans", "word_spans", "SpanCounts", "score_words",
           "score_sentences", "LexicalMetrics"]

ENTITY_TYPES = ("nr", "ns", "nt")
#: The official LAC model's entity tags -> the PKU tags they correspond to.
OFFICIAL_TAG_MAP = {"PER": "nr", "LOC": "ns", "ORG": "nt", "TIME": "t"}


def _span_starts(begins, types, sequence_starts):
    """Bool (P,): where words start, given per-character ``begins`` (bool), ``types`` (int) and sequence starts."""
    starts = begins | sequence_starts
    starts[1:] |= types[1:] != types[:-1]
    return starts


def _span_table(starts, types):
    """(start, end, type) int64 arrays of the words that begin at ``starts`` (end exclusive)."""
    first = numpy.flatnonzero(starts)
    end = numpy.append(first[1:], len(starts))
    return first, end, types[first]


def spans(labels):
    """Words of one sentence's LAC-scheme labels: a list of ``(start, end, type)``, ``end`` exclusive.

    ``labels``: a sequence of label names (``"n-B"``, ``"n-I"``, ``"O"``); the
    rule for where words start is in the module docstring.
    """
    labels = list(labels)
    if not labels:
        return []
    tagset = TagSet(dict.fromkeys(labels))
    ids = tagset.encode(labels)
    sequence_starts = numpy.zeros(len(ids), dtype=bool)
    sequence_starts[0] = True
    first, end, types = _span_table(_span_starts(tagset.begins[ids], tagset.type_ids[ids], sequence_starts),
                                    tagset.type_ids[ids])
    return [(s, e, tagset.type_names[t]) for s, e, t in zip(first.tolist(), end.tolist(), types.tolist())]


def word_spans(words, tags):
    """Spans of a segmented sentence: a list of ``(start, end, tag)`` in characters, ``end`` exclusive."""
    ends = numpy.cumsum([len(w) for w in words], dtype=numpy.int64).tolist()
    return [(e - len(w), e, t) for w, t, e in zip(words, tags, ends)]


class SpanCounts:
    """Running counts (right, predicted, gold) of words, typed words and entities; :meth:`result` gives P/R/F1.

    ``entity_types``: the word types scored as entities; adjacent words of
    ``person_type`` are merged into one entity before scoring.
    """

    def __init__(self, entity_types=ENTITY_TYPES, person_type="nr"):
        self.entity_types = tuple(entity_types)
        self.person_type = person_type
        self.reset()

    def reset(self):
        """Forget all counts."""
        self.counts = {key: numpy.zeros(3, dtype=numpy.int64)
                       for key in ["seg", "pos", "entity"] + [f"entity_{t}" for t in self.entity_types]}

    def add(self, pred_types, pred_begins, gold_types, gold_begins, sequence_starts, type_names):
        """Count the words of a batch of sentences laid end to end (P characters in all).

        ``pred_types``/``gold_types``: int (P,) indices into ``type_names`` (one
        list for both); ``pred_begins``/``gold_begins``: bool (P,), True at ``-B``
        labels; ``sequence_starts``: bool (P,), True at each sentence's first character.
        """
        pred_types, gold_types = numpy.asarray(pred_types), numpy.asarray(gold_types)
        sequence_starts = numpy.asarray(sequence_starts, dtype=bool)
        size = len(gold_types)
        if not (len(pred_types) == len(pred_begins) == len(gold_begins) == len(sequence_starts) == size):
            raise ValueError("SpanCounts.add: the predicted and gold arrays must have the same length")
        if size == 0:
            return
        num_types = len(type_names)
        person = type_names.index(self.person_type) if self.person_type in type_names else -1
        entity_ids = {t: type_names.index(t) for t in self.entity_types if t in type_names}
        found = {}
        for side, types, begins in (("pred", pred_types, pred_begins), ("gold", gold_types, gold_begins)):
            starts = _span_starts(numpy.asarray(begins, dtype=bool), types, sequence_starts)
            first, end, span_types = _span_table(starts, types)
            span_keys = first * (size + 1) + end                     # unique per span
            found[side, "seg"] = span_keys
            found[side, "pos"] = span_keys * num_types + span_types
            is_person = types == person
            merged = starts.copy()
            merged[1:] &= ~(is_person[1:] & is_person[:-1] & ~sequence_starts[1:])
            first, end, span_types = _span_table(merged, types)
            for name, type_id in entity_ids.items():
                keep = span_types == type_id
                found[side, f"entity_{name}"] = first[keep] * (size + 1) + end[keep]
        for key in ["seg", "pos"] + [f"entity_{t}" for t in entity_ids]:
            pred, gold = found["pred", key], found["gold", key]
            step = numpy.asarray([len(numpy.intersect1d(pred, gold, assume_unique=True)), len(pred), len(gold)])
            self.counts[key] += step
            if key.startswith("entity_"):
                self.counts["entity"] += step

    def result(self):
        """Floats ``{"seg_p", "seg_r", "seg_f1", "pos_p", …, "entity_f1", "entity_p_nr", …, "entity_f1_nt"}``."""
        out = {}
        for key, counts in self.counts.items():
            right, predicted, gold = (int(c) for c in counts)
            p = right / predicted if predicted else 0.0
            r = right / gold if gold else 0.0
            f1 = 2 * p * r / (p + r) if p + r else 0.0
            if key.startswith("entity_"):
                name = key[len("entity_"):]
                out.update({f"entity_p_{name}": p, f"entity_r_{name}": r, f"entity_f1_{name}": f1})
            else:
                out.update({f"{key}_p": p, f"{key}_r": r, f"{key}_f1": f1})
        return out


def _sentence_arrays(words, tags, type_index, tag_map):
    """Per-character (types int64, begins bool) of one segmented sentence; new tags are added to ``type_index``."""
    lengths = numpy.fromiter(map(len, words), dtype=numpy.int64, count=len(words))
    word_types = numpy.fromiter((type_index.setdefault(tag_map.get(t, t), len(type_index)) for t in tags),
                                dtype=numpy.int64, count=len(tags))
    keep = lengths > 0
    lengths, word_types = lengths[keep], word_types[keep]
    begins = numpy.zeros(int(lengths.sum()), dtype=bool)
    begins[numpy.cumsum(lengths) - lengths] = True
    return numpy.repeat(word_types, lengths), begins


def score_words(pred, gold, tag_map=None, gold_tag_map=None, entity_types=ENTITY_TYPES, person_type="nr"):
    """Scores of segmented, tagged sentences against gold ones: the dict of :meth:`SpanCounts.result`.

    ``pred``, ``gold``: equally long sequences of ``(words, tags)`` pairs (lists
    of str, one tag per word; extra fields are ignored). Sentence i of both must
    spell the same text up to :func:`~nlp.data.text.full_to_half`.
    ``tag_map`` / ``gold_tag_map``: dicts renaming predicted / gold tags (tags
    not in them are kept), e.g. ``{"PER": "nr", "LOC": "ns", "ORG": "nt", "TIME": "t"}``.
    """
    if len(pred) != len(gold):
        raise ValueError(f"score_words: {len(pred)} predicted sentences for {len(gold)} gold ones")
    counts = SpanCounts(entity_types, person_type)
    type_index = {}
    columns = {"pred_types": [], "pred_begins": [], "gold_types": [], "gold_begins": [], "sequence_starts": []}
    for i, (p, g) in enumerate(zip(pred, gold)):
        p_words, p_tags, g_words, g_tags = p[0], p[1], g[0], g[1]
        for side, words, tags in (("predicted", p_words, p_tags), ("gold", g_words, g_tags)):
            if len(words) != len(tags):
                raise ValueError(f"score_words: sentence {i}: {len(words)} {side} words but {len(tags)} tags")
            if not all(isinstance(w, str) for w in words):
                raise TypeError(f"score_words: sentence {i}: {side} words must be strings")
        if full_to_half("".join(p_words)) != full_to_half("".join(g_words)):
            raise ValueError(f"score_words: sentence {i}: the predicted words spell "
                             f"{''.join(p_words)[:40]!r}…, the gold ones {''.join(g_words)[:40]!r}…")
        p_types, p_begins = _sentence_arrays(p_words, p_tags, type_index, tag_map or {})
        g_types, g_begins = _sentence_arrays(g_words, g_tags, type_index, gold_tag_map or {})
        starts = numpy.zeros(len(g_types), dtype=bool)
        starts[:1] = True
        for key, value in zip(columns, (p_types, p_begins, g_types, g_begins, starts)):
            columns[key].append(value)
    if pred:
        arrays = {key: numpy.concatenate(values) for key, values in columns.items()}
        counts.add(type_names=list(type_index), **arrays)
    return counts.result()


def score_sentences(predict, sentences, tag_map=None):
    """:func:`score_words` of a tagger on gold sentences: ``predict`` (a list of str -> a list of
    ``{"words", "tags"}``, e.g. a LexicalAnalysis task's ``predict_raw``) runs on each sentence's words
    joined (one input per sentence); ``sentences`` have ``words`` and ``tags`` (corpus Sentences);
    ``tag_map`` renames the predicted tags (e.g. :data:`OFFICIAL_TAG_MAP`)."""
    predicted = predict(["".join(sentence.words) for sentence in sentences])
    return score_words([(p["words"], p["tags"]) for p in predicted], [(s.words, s.tags) for s in sentences],
                       tag_map=tag_map)


@METRICS.register()
class LexicalMetrics(Metric):
    """Segmentation, POS-aware and entity P/R/F1 of predicted label paths against gold labels.

    ``tags``: the label set, as a :class:`~nlp.data.vocab.TagSet`, a list of
    label names in id order, or the path of a saved tag set; None means the
    People's Daily tag set (:data:`nlp.data.peoples_daily.TAGSET`).
    ``update(outputs, batch)`` reads ``outputs[pred_key]`` (N, T) predicted
    label ids, ``batch[label_key]`` (N, T) gold ids and ``batch[lengths_key]``
    (N,) sequence lengths (all of T when the batch has no such key); positions
    past a sequence's length are ignored. ``compute()`` returns the dict of
    :meth:`SpanCounts.result`.
    """

    def __init__(self, tags=None, pred_key: str = "tags", label_key: str = "labels",
                 lengths_key: str = "tokens_lengths", entity_types=ENTITY_TYPES, person_type: str = "nr"):
        if tags is None:
            tags = PEOPLES_DAILY_TAGSET
        elif isinstance(tags, str):
            tags = TagSet.load(tags)
        elif not isinstance(tags, TagSet):
            tags = TagSet(tags)
        self.tagset = tags
        self.pred_key, self.label_key, self.lengths_key = pred_key, label_key, lengths_key
        self.counts = SpanCounts(entity_types, person_type)

    def reset(self):
        self.counts.reset()

    def update(self, outputs, batch):
        """Add one batch: predicted ids (N, T), gold ids (N, T), lengths (N,)."""
        pred = to_numpy(outputs[self.pred_key])
        gold = to_numpy(batch[self.label_key])
        if pred.ndim != 2 or gold.ndim != 2 or pred.shape[0] != gold.shape[0]:
            raise ValueError(f"LexicalMetrics: predictions {pred.shape} and labels {gold.shape} "
                             f"must both be (N, T) with the same N")
        if self.lengths_key in batch:
            lengths = to_numpy(batch[self.lengths_key]).reshape(-1).astype(numpy.int64)
        else:
            lengths = numpy.full(gold.shape[0], gold.shape[1], dtype=numpy.int64)
        width = int(lengths.max(initial=0))
        if width > min(pred.shape[1], gold.shape[1]):
            raise ValueError(f"LexicalMetrics: a length of {width} exceeds the predictions {pred.shape} "
                             f"or labels {gold.shape}")
        mask = numpy.arange(width) < lengths[:, None]                    # (N, width)
        pred, gold = pred[:, :width][mask], gold[:, :width][mask]       # (P,) each, sequences end to end
        for name, ids in (("predicted", pred), ("gold", gold)):
            if ids.size and (ids.min() < 0 or ids.max() >= len(self.tagset)):
                raise ValueError(f"LexicalMetrics: {name} label ids must be in [0, {len(self.tagset)}), "
                                 f"got [{ids.min()}, {ids.max()}]")
        sequence_starts = numpy.broadcast_to(numpy.arange(width) == 0, mask.shape)[mask]
        self.counts.add(self.tagset.type_ids[pred], self.tagset.begins[pred], self.tagset.type_ids[gold],
                        self.tagset.begins[gold], sequence_starts, self.tagset.type_names)

    def compute(self):
        return self.counts.result()

    def state(self):
        """The (right, predicted, gold) counts per score, for merging over ranks."""
        return dict(self.counts.counts)

    def set_state(self, state):
        """Replace the counts by a (merged) :meth:`state`."""
        self.counts.counts = {k: numpy.asarray(v, dtype=numpy.int64) for k, v in state.items()}
