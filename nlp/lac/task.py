"""Lexical analysis: word segmentation, part of speech and named entities in one BiGRU-CRF tagging pass.

The model (e.g. :class:`~nlp.lac.model.BiGRUCRF`) scores every tag at every
input id; the task trains it with the CRF negative log-likelihood and decodes
with Viterbi. Raw text goes through a *preprocessor* (``encode_batch(texts) ->
(ids, sizes, word_lengths)``: the official LAC one, which mixes word and
character ids, or a character one, see :mod:`nlp.lac.preprocess`); each predicted tag is then
expanded to the characters its id covers and the characters are grouped into
words with LAC's rules (``Model.parse_result``):

- an id covering k characters with tag ``X-B`` gives ``X-B`` then k-1 times ``X-I``;
- a word starts at the first character and at every tag ending in ``B`` or
  ``S``; any other character (``-I``, ``O``) joins the previous word;
- a word's label is its *last* character's tag without its two-character
  suffix (``"n-I"`` -> ``"n"``; ``"O"`` -> ``""``);
- **whitespace**, two rules (``whitespace=``, the task's default or per
  ``predict`` call; :func:`group_words`):

  - ``"split"`` (trained models, and the ``word/TAG`` text output of ``oar
    run``): whitespace is never part of a word. A whitespace character
    (``str.isspace``: spaces, tabs, the ideographic space U+3000 …) ends the
    word before it and is left out of the output, and the next character starts
    a new word whatever its tag. So no word is empty or holds a space,
    ``" ".join(f"{w}/{t}" …)`` always splits back, and the words joined give
    the text without its whitespace.
  - ``"official"`` (the official model's default): whitespace is grouped like
    any other character, exactly as Baidu's LAC 2.1.2 returns it.

Whitespace and the official LAC: Baidu's LAC 2.1.2 (``LAC/models.py``,
``Model.parse_result``) has no whitespace rule. A space is an ordinary
character of its vocabulary (``word.dic`` id 0), tagged by the network like any
other, then grouped by the rule above, so it comes out as a word of its own
(``" "``/w), inside a word (``"Apple Watch Series 9"``, ``"GPU  显卡  "``) or
with an odd tag (an empty one, from ``O``). We feed the text to the model
unchanged, spaces included, so every character gets the tag the official model
gives it and positions (the user dictionary's matches) stay those of the
input; only the ``"split"`` grouping drops the whitespace.

Raw inputs (``task.predict(iterable)``, one batch at a time through
:meth:`LexicalAnalysis.predict_raw`): str, answered with ``[{"words": [...],
"tags": [...]}]`` in input order. Texts are sorted by length and run
``batch_size`` at a time (:meth:`framework.engine.Task.predict_iter`). An empty
string gives empty lists, and so does a whitespace-only one under ``"split"``;
any other string is tagged as the official LAC does (a space is a character of
the vocabulary) and grouped as above. A text longer than
``max_chunk_len`` characters is cut into chunks of at most that length, after
sentence-ending punctuation where possible (:func:`nlp.data.text.split_points`),
the chunks are tagged independently (batched together) and their character
tags joined before the user dictionary and the grouping are applied, so memory
stays bounded for any input size.

The raw-text path works on whole batches in NumPy: all texts are encoded in
one call, each batch's paths become per-character tag ids (an id of tag ``t``
covering k characters: ``t``, then k - 1 times the id of ``t[:-2] + "-I"``),
and the words of all texts are found at once from a per-tag-id "opens a word"
flag, the whitespace positions and a per-tag-id label; Python then only cuts
the words out of the text. A user dictionary rewrites tags by name, so with
one the tags of each text are spelt out and grouped by :func:`group_words`.

**Lexicon features.** With ``lexicon_file`` the task matches that word list
(or each of a list of word lists, their features side by side in list order,
:class:`~nlp.lac.lexicon.StackedLexiconFeatures`) against the character ids
of every batch (training, evaluation and raw text alike) with
:class:`~nlp.lac.lexicon.LexiconFeatures` and passes the features to the
model as ``lexicon``; the model must read as many (``lexicon_features``).
The lexicon needs the character vocabulary (``vocab_file``) to match on ids.
A batch that already holds ``lexicon`` features (N, T, F) (a dataset's
jackknifed training features, see
:class:`~nlp.lac.data.PeoplesDailyTagging`) is used as it is.

**Assets.** ``save_assets`` copies into a run directory the character
vocabulary (``vocab_file``), the lexicons (``lexicon_file``) and the user
dictionary (``customization``, when a path) and writes the tag set it read
from ``tag_file`` or built from ``tagged_file`` as ``tags.txt`` (``tag_file``;
``tagged_file`` is then no longer needed).

**The official model.** :func:`load_official` builds Baidu's LAC network and
preprocessor from the resources that :mod:`nlp.lac.official` reads, and
:func:`load_official_task` wraps them in a :class:`LexicalAnalysis`.
"""
import os
import collections
import re

import numpy

from framework import Tensor, backend, no_grad, to_tensor
from framework.config import ConfigError
from framework.engine import Task
from framework.engine.batching import length_batches, text_length
from framework.engine.task import InputTypeError, copy_asset, to_tensors
from framework.errors import InputError
from framework.engine.metrics import to_numpy
from framework.io import SequenceCollator
from framework.nn import functional as F
from framework.registry import TASKS

from nlp.data.peoples_daily import TAGSET as PEOPLES_DAILY_TAGSET
from nlp.data.text import split_points
from nlp.data.vocab import TagSet, Vocab

from .customization import Customization, load_customization
from .data import file_tagset
from .lexicon import DEFAULT_MAX_LEN, LexiconFeatures, StackedLexiconFeatures, load_lexicon
from .metrics import LexicalMetrics
from .model import BiGRUCRF
from .official import read_official
from .preprocess import CharPreprocessor

__all__ = ["LexicalAnalysis", "TaggingCollator", "group_words", "word_spans", "check_whitespace", "load_official",
           "load_official_task"]


_WHITESPACE = re.compile(r"\s")


WHITESPACE_RULES = ("split", "official")


def check_whitespace(rule, who):
    """``rule`` when it is one of :data:`WHITESPACE_RULES`, else an InputError naming ``who``."""
    if rule not in WHITESPACE_RULES:
        raise InputError(f"{who}: whitespace must be one of {', '.join(map(repr, WHITESPACE_RULES))}, got {rule!r}")
    return rule


def word_spans(text, opens, whitespace="split"):
    """(begins, ends) int64 (W,) of the words of ``text`` (str of n characters) by LAC's grouping rule.

    ``opens`` (n,) bool is True where a character's tag opens a word (it ends in
    ``B`` or ``S``, or the character begins a text). With ``whitespace="split"``
    whitespace ends the word before it and belongs to no word, and the character
    after it opens one; with ``"official"`` it is a character like any other.
    """
    spaces = [match.start() for match in _WHITESPACE.finditer(text)] if whitespace == "split" else []
    if not spaces:
        begins = numpy.flatnonzero(opens)
        return begins, numpy.append(begins, len(text))[1:]
    space = numpy.zeros(len(text), dtype=bool)
    space[spaces] = True
    after_space = numpy.zeros_like(space)
    after_space[1:] = space[:-1]
    opens = (opens | after_space) & ~space
    bounds = numpy.flatnonzero(opens | space)                  # where a word begins or a space ends one
    begins = numpy.flatnonzero(opens)
    return begins, numpy.append(bounds, len(text))[numpy.searchsorted(bounds, begins, side="right")]


def group_words(text, char_tags, whitespace="split"):
    """``(words, labels)`` of ``text`` (str) from one tag per character (LAC's grouping rule, module docstring).

    ``whitespace="split"``: whitespace characters belong to no word: each ends
    the word before it, is dropped, and the character after it starts a new
    word, so ``"".join(words)`` is ``text`` without its whitespace.
    ``"official"``: whitespace is grouped like any character, as Baidu's LAC
    does, so ``"".join(words)`` is ``text``. Both lists have one entry per word.
    """
    opens = numpy.fromiter((tag.endswith(("B", "S")) for tag in char_tags), dtype=bool, count=len(char_tags))
    opens[:1] = True
    begins, ends = word_spans(text, opens, whitespace)
    return ([text[a:b] for a, b in zip(begins.tolist(), ends.tolist())],
            [char_tags[b - 1][:-2] for b in ends.tolist()])


def _ranges(firsts, sizes):
    """Indices (sum(sizes),) int64 of the ranges ``[firsts[i], firsts[i] + sizes[i])`` end to end."""
    return numpy.arange(int(sizes.sum())) + numpy.repeat(firsts - (numpy.cumsum(sizes) - sizes), sizes)


class _CharTags:
    """Per-character tags as ids: the task's tag names, then each ``X-I`` form (``tag[:-2] + "-I"``) that is not
    a tag name. An id of tag ``t`` covering k characters tags them ``t``, then k - 1 times ``t[:-2] + "-I"``.

    Attributes, indexed by those ids: ``names`` (str), ``opens`` (bool: the name ends in ``B`` or ``S``)
    and ``labels`` (object: the name without its last two characters, ``"n-I"`` -> ``"n"``, ``"O"`` -> ``""``);
    ``inside`` (int64 (K,)), indexed by tag id, is the id of the tag's ``X-I`` form.
    """

    def __init__(self, tag_names):
        self.tag_names = list(tag_names)
        self.names = list(tag_names)
        index = {}
        for i, name in enumerate(self.names):
            index.setdefault(name, i)
        for name in tag_names:
            form = name[:-2] + "-I"
            if form not in index:
                index[form] = len(self.names)
                self.names.append(form)
        self.inside = numpy.array([index[name[:-2] + "-I"] for name in tag_names], dtype=numpy.int64)
        self.opens = numpy.array([name.endswith(("B", "S")) for name in self.names], dtype=bool)
        self.labels = numpy.array([name[:-2] for name in self.names], dtype=object)


class TaggingCollator:
    """Pads ``tokens``, ``labels`` and, when the samples carry it, ``lexicon`` (:class:`SequenceCollator`)."""

    def __call__(self, samples):
        """A list of sample dicts -> a batch dict (see :class:`LexicalAnalysis` for its keys)."""
        keys = ["tokens", "labels"] + (["lexicon"] if samples and "lexicon" in samples[0] else [])
        return SequenceCollator(keys)(samples)


@TASKS.register()
class LexicalAnalysis(Task):
    """Train, evaluate and run a CRF tagger on text (see the module docstring).

    Args:
        model: a tagger whose ``forward(tokens (N, T), lengths (N,))`` returns
            emissions (N, T, K) and whose ``crf`` holds the (K+2, K) transition
            (:class:`~nlp.lac.model.BiGRUCRF`).
        preprocessor: text -> ids, a :class:`~nlp.lac.preprocess.Preprocessor`; needed for raw text only.
        tag_names: the K tag names in id order (``"n-B"`` ...); None: the People's Daily tag set.
        vocab_file: a saved character :class:`~nlp.data.vocab.Vocab`; builds a
            :class:`~nlp.lac.preprocess.CharPreprocessor` when ``preprocessor`` is None.
        tag_file: a saved :class:`~nlp.data.vocab.TagSet`, read when ``tag_names`` is None.
        tagged_file: a user's ``word/TAG`` training file; its tag set
            (:func:`nlp.lac.data.file_tagset`, as the dataset's ``path=`` option builds it) gives
            the tag names when ``tag_names`` and ``tag_file`` are None.
        customization: a :class:`~nlp.lac.customization.Customization`, or the path of a user dictionary.
        batch_size: texts per forward pass of ``predict`` (its ``predict_batch_size``).
        max_chunk_len: longest text (characters) tagged in one piece by :meth:`predict_raw`.
        max_batch_tokens: most padded ids (texts x longest) in one forward pass of ``predict``.
        lexicon_file: a word list file (:func:`~nlp.lac.lexicon.load_lexicon`), or a list of them, whose
            matches the model reads as lexicon features (module docstring); needs ``vocab_file`` (or a
            character preprocessor).
        lexicon_max_len: the longest lexicon word length with features (K: 3K - 4 features per position).
        whitespace: ``"split"`` (whitespace is never part of a word, the module docstring's rule) or
            ``"official"`` (whitespace grouped like any character, as Baidu's LAC 2.1.2 returns it); the
            default of ``predict``, which can choose per call.
        constrain_decoding: decode only well-formed label sequences (``X-I`` only after ``X-B`` or
            ``X-I``), the way the corpus and the metrics read words; False decodes as the official LAC
            does (its postprocessing then joins an ill-formed ``-I`` to the previous word).
        metrics: metric objects for evaluation (default: one ``LexicalMetrics``).

    Batches (training and evaluation): ``tokens`` (N, T) int64, ``tokens_lengths``
    (N,) int64, ``labels`` (N, T) int64 and optionally ``lexicon`` (N, T, F) float32
    (:attr:`collate_fn` pads them).
    """

    dynamic_axes = {"tokens": {0: "batch", 1: "seq"}, "lengths": {0: "batch"}, "lexicon": {0: "batch", 1: "seq"}}

    def __init__(self, model, preprocessor=None, tag_names=None, vocab_file: str = None, tag_file: str = None,
                 tagged_file: str = None, customization=None, batch_size: int = 64, max_chunk_len: int = 10000,
                 max_batch_tokens: int = 8192, lexicon_file=None, lexicon_max_len: int = DEFAULT_MAX_LEN,
                 constrain_decoding: bool = False, whitespace: str = "split", metrics=None):
        if min(batch_size, max_chunk_len, max_batch_tokens) < 1:
            raise ValueError(f"LexicalAnalysis: batch_size, max_chunk_len and max_batch_tokens must be >= 1, "
                             f"got {batch_size}, {max_chunk_len} and {max_batch_tokens}")
        self.model = model
        self._vocab_file = None                              # the files behind the task, for save_assets
        if preprocessor is None and vocab_file:
            preprocessor = CharPreprocessor(Vocab.load(vocab_file))
            self._vocab_file = vocab_file
        source = None
        if tag_names is None and (tag_file or tagged_file):
            source = tag_file or tagged_file
            tag_names = TagSet.load(tag_file).names if tag_file else file_tagset(tagged_file).names
        self._tag_source = "tag_file" if source and tag_file else "tagged_file" if source else None
        num_tags = getattr(model, "num_tags", None)
        if tag_names is not None and num_tags is not None and len(tag_names) != num_tags:
            origin = f" (the tag set of {source})" if source else ""
            raise ConfigError(f"LexicalAnalysis: {len(tag_names)} tag names{origin} but the model has "
                              f"num_tags={num_tags}; set model.num_tags: {len(tag_names)}")
        self.preprocessor = preprocessor
        self.lexicon = self._lexicon_features(lexicon_file, lexicon_max_len) if lexicon_file else None
        self._lexicon_file = lexicon_file
        self.tag_names = list(tag_names) if tag_names is not None else None
        self._customization_file = customization if isinstance(customization, str) else None
        if isinstance(customization, str):
            self.load_customization(customization)
        else:
            self.customization = customization
        self.predict_batch_size, self.max_chunk_len = int(batch_size), int(max_chunk_len)
        self.max_batch_tokens = int(max_batch_tokens)
        self.whitespace = check_whitespace(whitespace, "LexicalAnalysis")
        self._metrics = metrics
        self.constrain_decoding = bool(constrain_decoding)
        self._forbidden = None                               # (tag names, allowed mask), built on first use
        self._char_tags = None                               # the _CharTags of tag_names, built on first use
        self.collate_fn = TaggingCollator()

    def _lexicon_features(self, lexicon_file, max_len):
        """The :class:`StackedLexiconFeatures` of ``lexicon_file`` (one path or a list) over the preprocessor's
        vocabulary, checked against the model's ``lexicon_features``."""
        files = [lexicon_file] if isinstance(lexicon_file, str) else lexicon_file
        if not isinstance(files, (list, tuple)) or not files or not all(isinstance(f, str) for f in files):
            raise ConfigError(f"LexicalAnalysis: lexicon_file must be a file path or a list of them, "
                              f"got {lexicon_file!r}")
        vocab = getattr(self.preprocessor, "vocab", None)
        if vocab is None:
            raise ConfigError(f"LexicalAnalysis: lexicon_file {lexicon_file} needs the character vocabulary "
                              f"the model reads; set task.vocab_file")
        features = StackedLexiconFeatures([LexiconFeatures(load_lexicon(f), vocab, max_len) for f in files])
        wanted = getattr(self.model, "lexicon_features", None)
        if wanted != features.num_features:
            raise ConfigError(f"LexicalAnalysis: lexicon_max_len={max_len} gives {features.num_features} lexicon "
                              f"features per position ({len(files)} lexicon(s)) but the model reads {wanted}; "
                              f"set model.lexicon_features: {features.num_features}")
        return features

    def _emissions(self, batch):
        """The model's emissions (N, T, K) for a batch's ``tokens`` and ``tokens_lengths`` and its lexicon
        features: the batch's ``lexicon`` if it has one, else the task's lexicon's matches (if any)."""
        tokens, lengths = batch["tokens"], batch["tokens_lengths"]
        if "lexicon" in batch:
            return self.model(tokens, lengths, lexicon=batch["lexicon"])
        if self.lexicon is None:
            return self.model(tokens, lengths)
        ids = tokens.data if isinstance(tokens, Tensor) else tokens
        features = self.lexicon(ids)                                             # (N, T, F), on the ids' device
        return self.model(tokens, lengths, lexicon=to_tensor(features, device=backend.device_of(ids)))

    # ---- files -----------------------------------------------------------------------
    def save_assets(self, directory):
        """Copies of the vocabulary, lexicons and user dictionary the task read, and the tag set it read or
        built (``tags.txt``), as overrides of ``task.vocab_file``, ``task.lexicon_file``,
        ``task.customization`` and ``task.tag_file`` (module docstring)."""
        overrides = {}
        if self._vocab_file:
            overrides["task.vocab_file"] = copy_asset(self._vocab_file, directory, "vocab.txt")
        if self._tag_source:
            path = os.path.join(directory, "tags.txt")
            TagSet(self.tag_names).save(path)
            overrides["task.tag_file"] = path
            if self._tag_source == "tagged_file":
                overrides["task.tagged_file"] = None
        if self._lexicon_file:
            files = [self._lexicon_file] if isinstance(self._lexicon_file, str) else list(self._lexicon_file)
            copies = [copy_asset(f, directory, f"lexicon_{i}.txt" if len(files) > 1 else "lexicon.txt")
                      for i, f in enumerate(files)]
            overrides["task.lexicon_file"] = copies[0] if isinstance(self._lexicon_file, str) else copies
        if self._customization_file:
            overrides["task.customization"] = copy_asset(self._customization_file, directory, "customization.txt")
        return overrides

    # ---- user dictionary ---------------------------------------------------------
    def load_customization(self, source, sep=None):
        """Use the user dictionary ``source`` (a path or a list of lines, see :mod:`nlp.lac.customization`)."""
        self.customization = load_customization(source, sep)

    def add_word(self, line, sep=None):
        """Add one user-dictionary line (``"春天/SEASON"``, ``"花/n 开/v"``), as LAC's ``add_word``."""
        if self.customization is None:
            self.customization = Customization()
        self.customization.add_word(line, sep)

    # ---- training and evaluation ---------------------------------------------------
    def loss(self, batch):
        """Mean CRF negative log-likelihood of the gold ``labels`` over the batch (a scalar Tensor)."""
        return self.model.crf(self._emissions(batch), batch["labels"], batch["tokens_lengths"]).mean()

    def predict_batch(self, batch):
        """``{"tags": (N, T) int64 Viterbi paths (0 past each length), "lengths": (N,)}``.

        The batch's ``texts`` and ``word_lengths`` (from :meth:`preprocess`), when
        present, are passed along for :meth:`postprocess`.
        """
        lengths = batch["tokens_lengths"]
        emissions = self._emissions(batch)                                       # (N, T, K)
        transition = self.model.crf.transition
        allowed = self.allowed_transitions() if self.constrain_decoding else None
        _, paths = F.viterbi_decode(emissions, transition, lengths, allowed=allowed)
        outputs = {"tags": paths, "lengths": lengths}
        outputs.update({key: batch[key] for key in ("texts", "word_lengths") if key in batch})
        return outputs

    def allowed_transitions(self):
        """A (K+2, K) bool array in the transition's layout: False where a label would continue a word of another
        type, else True (the constrained Viterbi's mask).

        Forbidden: ``X-I`` as the first label, and ``X-I`` after any label but
        ``X-B`` / ``X-I`` (row 1, the stop scores, allows every label).
        """
        names = self.tag_names or list(PEOPLES_DAILY_TAGSET.names)
        if self._forbidden is None or self._forbidden[0] != names:
            inside = numpy.array([name.endswith("-I") for name in names])
            word_type = [name[:-2] if name.endswith(("-B", "-I")) else name for name in names]
            follows = numpy.array([[not inside[j] or word_type[i] == word_type[j] for j in range(len(names))]
                                   for i in range(len(names))])
            allowed = numpy.ones((len(names) + 2, len(names)), dtype=bool)
            allowed[0, inside] = False
            allowed[2:][~follows] = False
            self._forbidden = (list(names), allowed)
        return self._forbidden[1]

    def metrics(self):
        if self._metrics is not None:
            return self._metrics
        return [LexicalMetrics(tags=self.tag_names, pred_key="tags", label_key="labels",
                               lengths_key="tokens_lengths")]

    # ---- raw text ------------------------------------------------------------------
    def _raw_tools(self):
        """(preprocessor, :class:`_CharTags` of the tag names) for raw text; a clear error when the task was
        built without a preprocessor."""
        if self.preprocessor is None:
            raise ValueError("LexicalAnalysis: raw text needs a preprocessor (give preprocessor= or vocab_file=)")
        if self.tag_names is None:
            self.tag_names = list(PEOPLES_DAILY_TAGSET.names)
        if self._char_tags is None or self._char_tags.tag_names != self.tag_names:
            self._char_tags = _CharTags(self.tag_names)
        return self.preprocessor, self._char_tags

    @staticmethod
    def _check_texts(inputs):
        """``inputs`` as a list of str; a non-list or a non-str entry raises InputTypeError naming it."""
        if isinstance(inputs, str) or not isinstance(inputs, (list, tuple)):
            raise InputTypeError(f"LexicalAnalysis: expected a list of str, got {type(inputs).__name__}")
        for index, text in enumerate(inputs):
            if not isinstance(text, str):
                raise InputTypeError(f"a text to analyse must be a str, got {type(text).__name__}", index=index)
        return list(inputs)

    def preprocess(self, inputs):
        """A batch of non-empty texts (list of n str) -> ``{"tokens" (n, T) int64, "tokens_lengths" (n,),
        "texts" (list), "word_lengths" (M,) int64}``: the characters each id covers, the texts' ids end to end."""
        texts = self._check_texts(inputs)
        preprocessor, _ = self._raw_tools()
        empty = next((i for i, text in enumerate(texts) if not text), None)
        if empty is not None:
            raise ValueError(f"LexicalAnalysis.preprocess: input {empty} is empty (predict_raw handles empty texts)")
        return self._batch(texts, *preprocessor.encode_batch(texts))

    @staticmethod
    def _batch(texts, ids, sizes, word_lengths):
        """The :meth:`preprocess` batch of ``texts`` (n str) from their ids end to end (M,) int64, the ids of each
        text (n,) and the characters each id covers (M,) (ids padded with 0)."""
        tokens = numpy.zeros((len(texts), int(sizes.max(initial=1))), dtype=numpy.int64)
        tokens[numpy.arange(tokens.shape[1]) < sizes[:, None]] = ids
        return {"tokens": tokens, "tokens_lengths": sizes, "texts": list(texts), "word_lengths": word_lengths}

    def _char_tag_ids(self, outputs):
        """The per-character tag ids (:class:`_CharTags`) of the texts of a :meth:`predict_batch` output, end to
        end: int64 (characters,)."""
        _, char_tags = self._raw_tools()
        paths, lengths = to_numpy(outputs["tags"]), to_numpy(outputs["lengths"])
        word_lengths = to_numpy(outputs["word_lengths"])
        per_id = paths[numpy.arange(paths.shape[1]) < lengths[:, None]]            # (ids,) rows end to end
        if int(word_lengths.sum()) == len(per_id):                               # one character per id
            return per_id
        per_char = numpy.repeat(per_id, word_lengths)
        later = numpy.ones(len(per_char), dtype=bool)
        later[numpy.cumsum(word_lengths) - word_lengths] = False          # an id's first character keeps its tag
        return numpy.where(later, char_tags.inside[per_char], per_char)

    def _results(self, texts, char_ids, whitespace):
        """``[{"words": [...], "tags": [...]}]`` of ``texts`` (list of str) from the per-character tag ids of all
        of them end to end (:meth:`_char_tag_ids`), after the user dictionary, by LAC's grouping rule with the
        ``whitespace`` rule (``"split"`` or ``"official"``)."""
        _, char_tags = self._raw_tools()
        lengths = numpy.fromiter(map(len, texts), dtype=numpy.int64, count=len(texts))
        firsts = numpy.cumsum(lengths) - lengths
        if self.customization is not None:                   # the dictionary rewrites tags by name, text by text
            results = []
            for text, first in zip(texts, firsts.tolist()):
                tags = [char_tags.names[i] for i in char_ids[first:first + len(text)].tolist()]
                words, labels = group_words(text, self.customization.apply(text, tags), whitespace)
                results.append({"words": words, "tags": labels})
            return results
        joined = "".join(texts)
        opens = char_tags.opens[char_ids]
        opens[firsts[lengths > 0]] = True
        begins, ends = word_spans(joined, opens, whitespace)
        words = [joined[a:b] for a, b in zip(begins.tolist(), ends.tolist())]
        labels = char_tags.labels[char_ids[ends - 1]].tolist()
        cuts = numpy.searchsorted(begins, numpy.append(firsts, len(joined))).tolist()   # each text's first word
        return [{"words": words[a:b], "tags": labels[a:b]} for a, b in zip(cuts[:-1], cuts[1:])]

    def postprocess(self, outputs):
        """A :meth:`predict_batch` output of a :meth:`preprocess` batch -> ``[{"words": [...], "tags": [...]}]``."""
        return self._results(outputs["texts"], self._char_tag_ids(outputs), self.whitespace)

    input_length = staticmethod(text_length)

    def predict(self, inputs, batch_size=None, whitespace=None):
        """A batch dict -> model outputs; any iterable of str -> ``[{"words": [...], "tags": [...]}]`` in input
        order (:meth:`~framework.engine.Task.predict_iter`). ``whitespace``: ``"split"`` or ``"official"``
        (None: the task's ``whitespace``), see :func:`group_words`."""
        if isinstance(inputs, dict):
            return self.predict_batch(inputs)
        return list(self.predict_iter(inputs, batch_size, whitespace=whitespace))

    def predict_raw(self, inputs, device=None, whitespace=None):
        """Analyse one batch, a list of str: ``[{"words": [...], "tags": [...]}]`` in input order (see the module
        docstring); ``whitespace`` as in :meth:`predict`."""
        whitespace = self.whitespace if whitespace is None else check_whitespace(whitespace, type(self).__name__)
        texts = self._check_texts(inputs)
        return self._results(texts, self._char_fields_of(texts, device)["tags"], whitespace)

    def _char_fields(self, outputs):
        """``{field: int64 (characters,)}`` of a :meth:`predict_batch` output's texts, end to end: the tag ids
        (``"tags"``); a subclass adds its own per-character fields."""
        return {"tags": self._char_tag_ids(outputs)}

    def _char_fields_of(self, texts, device=None):
        """:meth:`_char_fields` over ``texts`` (a list of str), end to end: each text cut into chunks of at most
        ``max_chunk_len`` characters, the chunks batched by length and run through the model (a field no batch
        gave reads as zeros)."""
        preprocessor, _ = self._raw_tools()
        chunks = [text[start:end] for text in texts for start, end in split_points(text, self.max_chunk_len)]
        ids, sizes, word_lengths = preprocessor.encode_batch(chunks)          # the chunks' ids end to end
        id_firsts = numpy.cumsum(sizes) - sizes
        chars = numpy.fromiter(map(len, chunks), dtype=numpy.int64, count=len(chunks))
        char_firsts = numpy.cumsum(chars) - chars
        total = int(chars.sum())                                             # the chunks end to end are the texts
        fields = collections.defaultdict(lambda: numpy.zeros(total, dtype=numpy.int64))
        if self.model.training:                              # eval() walks every sublayer: only when needed
            self.model.eval()
        with no_grad():
            for members in length_batches(sizes.tolist(), self.predict_batch_size, self.max_batch_tokens):
                members = numpy.array(members)
                at = _ranges(id_firsts[members], sizes[members])
                batch = self._batch([chunks[c] for c in members], ids[at], sizes[members], word_lengths[at])
                where = _ranges(char_firsts[members], chars[members])
                for name, values in self._char_fields(self.predict_batch(to_tensors(batch, device))).items():
                    fields[name][where] = values
        return fields


def load_official(model_dir=None, cache_dir=None, use_cache=True):
    """(model, preprocessor, tag_names) of the official LAC model, ready for inference.

    Args:
        model_dir: a ``lac_model`` folder (default: fetched from the pinned distribution).
        cache_dir: where the converted files live (default ``$OAR_HOME/converted/lac-2.1.2``).
        use_cache: read and write the converted cache; False always converts from the source.

    Returns:
        model: :class:`~nlp.lac.model.BiGRUCRF` in eval mode (float32).
        preprocessor: :class:`~nlp.lac.preprocess.OfficialPreprocessor`.
        tag_names: list of K tag names (``"n-B"``, ``"PER-I"``, ``"O"`` ...), indexed by tag id.
    """
    state, tables = read_official(model_dir, cache_dir, use_cache)
    model = BiGRUCRF.from_state_dict(state)
    model.eval()
    return model, tables.preprocessor(), tables.tag_names


def load_official_task(model_dir=None, **task_options):
    """A :class:`LexicalAnalysis` task running the official LAC model.

    ``task_options`` go to the task (``batch_size``, ``max_chunk_len``, ``customization`` ...); whitespace is
    grouped as the official LAC groups it (``whitespace="official"``) unless the options say otherwise.
    ``task.predict_raw(["百度是一家高科技公司"])`` gives
    ``[{"words": ["百度", "是", "一家", "高科技", "公司"], "tags": ["ORG", "v", "m", "n", "n"]}]``.
    """
    model, preprocessor, tag_names = load_official(model_dir)
    task_options.setdefault("whitespace", "official")
    return LexicalAnalysis(model, preprocessor=preprocessor, tag_names=tag_names, **task_options)
