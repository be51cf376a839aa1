"""Text-matching pairs built from People's Daily: sentences, rewrites, negatives, the cached files.

**The builder** makes matching pairs from the sentences of one People's Daily
split (:mod:`nlp.data.peoples_daily`), so a pair's two texts always come from
the same split. It is deterministic for a seed: each anchor sentence draws
from its own generator seeded by ``(seed, split, anchor, copy)``.

- *Sentences.* Corpus lines are paragraphs; they are cut after 。！？ (with
  any closing quotes or brackets that follow), and sentences of
  ``min_chars``..``max_chars`` characters (default 10..80, which keeps 70 %
  of them; the median is 35) with at least three content words are kept,
  each text once per split. Texts keep the corpus's characters.
- *Entities.* Runs of ``nr`` words are one person, runs of ``t`` words one
  date when they hold a number (``１９９７年１２月``, ``一月``; not ``现在``,
  whose neighbours 目前 or 如今 often mean the same); ``ns`` words are places,
  ``nt`` words organisations, and ``m`` words holding digits or written-out
  numerals (``２．５％``, ``二十七``, ``第三``; not the 一 of 一年) numbers.
- *Rewriting*, applied alike to the second text of every pair, positive or
  negative (:class:`Rewriter`): a share drawn from ``share`` (default
  0.3-0.8) of the replaceable words is replaced by synonyms, at least one;
  with probability ``clause_swap`` (0.25) two adjacent clauses trade places.
  Replaceable are content words (nouns, verbs, adjectives, adverbs ...) of
  two or more Han characters with a synonym in the ``=`` groups of
  :mod:`nlp.simnet.synonyms` of a semantic class that fits their tag, the
  synonym being a corpus word whose most frequent tag is the same (same
  part of speech). Entities and function words are never replaced. Anchors
  are the sentences with at least two replaceable words.
- *Positive:* ``(s, rewrite(s))``.
- *Negatives:* ``(s, rewrite(x))`` where ``x`` is one of
  ``swap`` (an entity of ``s`` replaced, everywhere it occurs, by another
  entity of the same kind and shape from the split: the same length for
  names, the same pattern of digits, numerals and units for numbers and dates),
  ``exchange`` (two different entities of one kind inside one clause trade
  places, unless only punctuation and coordinators such as 、和与 stand
  between them: exchanging the items of a list keeps the meaning),
  ``ending`` (the first 35-70 % of ``s`` finished with the ending of another
  sentence, chosen so the length stays close to that of ``s``), ``overlap``
  (the other sentence of the split of the same length that shares the most
  content words and entities with ``s``, near-duplicates excluded). Each
  anchor yields one positive and one negative, so pairs are balanced 1:1;
  the negative's type is drawn among those that apply to the anchor with
  weights swap 4, exchange 20, ending 1, overlap 1 (exchange applies to one
  sentence in seven, swap to three in five, the others to nearly all), which
  gives roughly a third swaps, a tenth exchanges and the rest evenly split.
  Every negative ends with the final marks of ``s``, and negatives keep the
  length of ``s`` (swap, exchange, overlap) or nearly (ending), so neither
  punctuation nor length says anything about the label.
- *Triples* ``(query, pos, neg)`` are ``(s, rewrite(s), rewrite(x))``.
- *Copies.* Each train anchor is drawn ``train_copies`` times (default 2:
  two rewrites and two negatives, often of different types); dev and test once.

The files are written with :mod:`nlp.simnet.pairs`; :func:`builder_file` builds them once into
``$OAR_HOME/matching/``.
"""
import collections
import functools
import json
import os
import re
import shutil
import tempfile

import numpy

from framework.fetch import oar_home

from nlp.data.peoples_daily import SPLITS, read_sentences
from nlp.data.text import CLOSING_MARKS, full_to_half

from .pairs import NEG_TYPES, POSITIVE, MatchPair, Triple, write_pair_file, write_triple_file
from .synonyms import load_synonym_table

__all__ = ["BUILDER_VERSION", "ENTITY_KINDS", "Token", "corpus_sentences", "tag_lexicon", "Rewriter",
           "default_rewriter", "entity_shape", "EntityPools", "swap_entity", "exchange_entities", "splice_ending",
           "OverlapIndex", "NegativeMaker", "build_split", "build_pairs", "builder_folder", "builder_file"]

BUILDER_VERSION = 1                                   # bump when the builder's output changes
_TYPE_WEIGHTS = {"swap": 4.0, "exchange": 20.0, "ending": 1.0, "overlap": 1.0}
ENTITY_KINDS = {"nr": "person", "ns": "place", "nt": "org", "t": "date", "m": "number"}
_SPLIT_IDS = {name: i for i, name in enumerate(SPLITS)}

_END_MARKS = "。！？"
_CLOSING = set(CLOSING_MARKS)
_CLAUSE_MARKS = set("，；：。！？,;:!?")
_COORDINATORS = {"、", "和", "与", "及", "以及", "同", "或", "或者", "跟", "并"}
_CONTENT_TAGS = {"n", "s", "v", "vn", "vd", "a", "ad", "an", "d", "b", "z", "i", "l"}
# Semantic classes of the thesaurus (see nlp.simnet.synonyms) a word of each tag may take synonyms from.
_TAG_CLASSES = {"n": "ABCD", "s": "BC", "v": "FGHIJ", "vn": "FGHIJ", "vd": "FGHIJ", "a": "E", "ad": "E",
                "an": "E", "b": "E", "z": "E", "d": "EK"}
_HAN = re.compile(r"^[\u4e00-\u9fff]{2,}$")
_NUMERAL = re.compile(r"^第?[零〇一二三四五六七八九十百千万亿两]+(点[零〇一二三四五六七八九]+)?$|^百分之")
_DIGIT_CHARS = re.compile(r"[0-9]")
_NUMERAL_CHARS = re.compile(r"[零〇一二三四五六七八九十百千万亿两]")

Token = collections.namedtuple("Token", ["text", "tag", "kind"])
Token.__doc__ = """One word of a builder sentence: ``text`` (str), ``tag`` (PKU tag) and ``kind`` (an
entity kind of :data:`ENTITY_KINDS`, or None)."""


# ---- sentences -----------------------------------------------------------------------------------------
def _entity_kind(text, tag):
    """The entity kind of a word (None for no entity: a numeral such as the 一 of 一年, or a time word
    without a number such as 现在, whose neighbours 目前, 当前 or 如今 would often mean the same)."""
    kind = ENTITY_KINDS.get(tag)
    if kind in ("number", "date"):
        half = full_to_half(text)
        numeric = _DIGIT_CHARS.search(half) or (_NUMERAL_CHARS.search(half) if kind == "date" else
                                                len(text) > 1 and _NUMERAL.match(text))
        return kind if numeric else None
    return kind


def _tokens(words, tags):
    """Tokens of a run of corpus words; runs of nr (a person's surname and name) and of t (a date) are merged."""
    tokens = []
    for word, tag in zip(words, tags):
        if tokens and tag in ("nr", "t") and tokens[-1].tag == tag:
            text = tokens[-1].text + word
            tokens[-1] = Token(text, tag, _entity_kind(text, tag))
        else:
            tokens.append(Token(word, tag, _entity_kind(word, tag)))
    return tokens


def _cut_sentences(tokens):
    """Cut a paragraph's tokens after each run of 。！？ and the closing marks that follow it."""
    pieces, current, pending = [], [], False
    for i, token in enumerate(tokens):
        current.append(token)
        if token.text[-1] in _END_MARKS:
            pending = True
        elif token.text not in _CLOSING:
            pending = False
        following = tokens[i + 1].text if i + 1 < len(tokens) else None
        if pending and not (following is not None and (following[0] in _END_MARKS or following in _CLOSING)):
            pieces.append(current)
            current, pending = [], False
    if current:
        pieces.append(current)
    return pieces


def _is_content(token):
    return token.kind is None and token.tag in _CONTENT_TAGS


def _ends_sentence(tokens):
    body = [t for t in tokens if t.text not in _CLOSING]
    return bool(body) and body[-1].text[-1] in _END_MARKS


@functools.lru_cache(maxsize=4)
def corpus_sentences(split, min_chars=10, max_chars=80, path=None):
    """The builder's sentences of one People's Daily split: a tuple of token tuples, file order, no repeats.

    See the module docstring for how lines are cut and filtered. ``path``
    reads another corpus file in the same format. Cached per arguments.
    """
    if min_chars < 1 or max_chars < min_chars:
        raise ValueError(f"corpus_sentences: need 1 <= min_chars <= max_chars, got {min_chars}, {max_chars}")
    sentences, seen = [], set()
    for line in read_sentences(split, path):
        for piece in _cut_sentences(_tokens(line.words, line.tags)):
            text = "".join(t.text for t in piece)
            if (min_chars <= len(text) <= max_chars and text not in seen and _ends_sentence(piece)
                    and sum(map(_is_content, piece)) >= 3):
                seen.add(text)
                sentences.append(tuple(piece))
    return tuple(sentences)


def _text(tokens):
    return "".join(t.text for t in tokens)


def _final_marks(tokens):
    """The index where the final run of end and closing marks starts (len(tokens) when none)."""
    i = len(tokens)
    while i > 0 and tokens[i - 1].tag == "w" and (tokens[i - 1].text in _CLOSING or
                                                   tokens[i - 1].text[-1] in _END_MARKS):
        i -= 1
    return i


def _clauses(tokens):
    """(start, end) token ranges of the clauses: runs between clause marks (，；：。！？), marks excluded."""
    spans, start = [], 0
    for i, token in enumerate(tokens):
        if token.tag == "w" and token.text in _CLAUSE_MARKS:
            if i > start:
                spans.append((start, i))
            start = i + 1
    if start < len(tokens):
        spans.append((start, len(tokens)))
    return spans


# ---- rewriting ----------------------------------------------------------------------------------------
def tag_lexicon(sentences):
    """Word -> its most frequent tag over ``sentences`` (token tuples); ties go to the smaller tag name."""
    counts = collections.defaultdict(collections.Counter)
    for sentence in sentences:
        for token in sentence:
            counts[token.text][token.tag] += 1
    return {word: min(c, key=lambda tag: (-c[tag], tag)) for word, c in counts.items()}


class Rewriter:
    """Rewrites a sentence by same-POS synonym replacement and, sometimes, a swap of two adjacent clauses.

    Args:
        synonyms: a :class:`~nlp.simnet.synonyms.SynonymTable`.
        lexicon: word -> most frequent PKU tag (:func:`tag_lexicon` of the train split).
        share: (low, high): each rewrite replaces a share drawn uniformly from
            this range of the replaceable words (at least one).
        clause_swap: probability of swapping two adjacent clauses.
    """

    def __init__(self, synonyms, lexicon, share=(0.3, 0.8), clause_swap=0.25):
        if not 0 < share[0] <= share[1] <= 1 or not 0 <= clause_swap <= 1:
            raise ValueError(f"Rewriter: need 0 < share[0] <= share[1] <= 1 and clause_swap in [0, 1], "
                             f"got share={share}, clause_swap={clause_swap}")
        self.synonyms, self.lexicon = synonyms, lexicon
        self.share, self.clause_swap = tuple(share), float(clause_swap)

    @functools.lru_cache(maxsize=None)
    def candidates(self, text, tag):
        """The same-POS synonyms a word ``text`` tagged ``tag`` may be replaced by (a tuple of str)."""
        classes = _TAG_CLASSES.get(tag)
        if classes is None or not _HAN.match(text):
            return ()
        return tuple(c for c in self.synonyms.synonyms(text, classes) if _HAN.match(c) and self.lexicon.get(c) == tag)

    def replaceable(self, tokens):
        """Positions of the tokens that have synonyms (content words, never entities)."""
        return [i for i, t in enumerate(tokens) if _is_content(t) and self.candidates(t.text, t.tag)]

    def rewrite(self, tokens, rng):
        """A rewritten copy of ``tokens`` (a list of Token), drawing from ``rng`` (numpy Generator)."""
        tokens = list(tokens)
        places = self.replaceable(tokens)
        if places:
            share = rng.uniform(*self.share)
            count = max(1, int(round(share * len(places))))
            for i in sorted(rng.choice(places, size=count, replace=False).tolist()):
                options = self.candidates(tokens[i].text, tokens[i].tag)
                tokens[i] = tokens[i]._replace(text=options[int(rng.integers(len(options)))])
        if rng.random() < self.clause_swap:
            tokens = _swap_clauses(tokens, rng)
        return tokens


def _swap_clauses(tokens, rng):
    """Two adjacent clauses (before the final marks) trade places; the marks between them stay."""
    spans = _clauses(tokens[:_final_marks(tokens)])
    if len(spans) < 2:
        return tokens
    k = int(rng.integers(len(spans) - 1))
    (a0, a1), (b0, b1) = spans[k], spans[k + 1]
    return tokens[:a0] + tokens[b0:b1] + tokens[a1:b0] + tokens[a0:a1] + tokens[b1:]


# ---- negatives -----------------------------------------------------------------------------------------
def entity_shape(kind, text):
    """The pool key of an entity, which fixes its length: ``L<n>`` for names of n characters; for numbers
    and dates the pattern of digits (D), numerals (N) and other characters (``"１２月３１日"`` ->
    ``"DD月DD日"``, ``"二十七"`` -> ``"NNN"``)."""
    if kind in ("number", "date"):
        return _NUMERAL_CHARS.sub("N", _DIGIT_CHARS.sub("D", full_to_half(text)))
    return f"L{len(text)}"


class EntityPools:
    """The distinct entities of a set of sentences (token tuples), grouped by kind and :func:`entity_shape`."""

    def __init__(self, sentences):
        found = collections.defaultdict(dict)
        for sentence in sentences:
            for token in sentence:
                if token.kind:
                    found[(token.kind, entity_shape(token.kind, token.text))][token.text] = None
        self._pools = {key: list(values) for key, values in found.items()}
        self._index = {key: {text: i for i, text in enumerate(values)} for key, values in self._pools.items()}

    def count(self, kind, text):
        """How many entities of the pool of ``text`` differ from ``text``."""
        key = (kind, entity_shape(kind, text))
        return len(self._pools.get(key, ())) - (text in self._index.get(key, ()))

    def pick(self, kind, text, rng):
        """A random entity of the pool of ``text`` other than ``text`` (needs :meth:`count` > 0)."""
        key = (kind, entity_shape(kind, text))
        pool, own = self._pools[key], self._index[key].get(text)
        i = int(rng.integers(len(pool) - (own is not None)))
        return pool[i + 1 if own is not None and i >= own else i]


def _swappable(tokens, pools):
    """The distinct entity texts of ``tokens`` whose pool holds another entity (in order of appearance)."""
    return list(dict.fromkeys(t.text for t in tokens if t.kind and pools.count(t.kind, t.text) > 0))


def swap_entity(tokens, pools, rng):
    """``tokens`` with one entity replaced, everywhere it occurs, by another of its pool; None when none can be."""
    options = _swappable(tokens, pools)
    if not options:
        return None
    original = options[int(rng.integers(len(options)))]
    kind = next(t.kind for t in tokens if t.text == original and t.kind)
    new = pools.pick(kind, original, rng)
    return [t._replace(text=new) if t.text == original and t.kind else t for t in tokens]


def _exchangeable(tokens):
    """Pairs (i, j), i < j, of different entities of one kind in one clause with a word between them that is
    no entity, punctuation or coordinator (exchanging the items of a list would keep the meaning)."""
    pairs = []
    for start, end in _clauses(tokens):
        places = [i for i in range(start, end) if tokens[i].kind]
        for a, i in enumerate(places):
            for j in places[a + 1:]:
                if tokens[i].kind != tokens[j].kind or tokens[i].text == tokens[j].text:
                    continue
                if any(not t.kind and t.tag != "w" and t.text not in _COORDINATORS for t in tokens[i + 1:j]):
                    pairs.append((i, j))
    return pairs


def exchange_entities(tokens, rng):
    """``tokens`` with two entities of one clause exchanged ("中国向美国" -> "美国向中国"), or None."""
    pairs = _exchangeable(tokens)
    if not pairs:
        return None
    i, j = pairs[int(rng.integers(len(pairs)))]
    tokens = list(tokens)
    tokens[i], tokens[j] = tokens[j], tokens[i]
    return tokens


class _Cuts:
    """Word boundaries of a sentence's body (without its final marks) where a splice may cut.

    ``stop``: index of the first final mark; ``length``: characters of the
    body; ``tokens``/``offsets``: int arrays, the token index k of each cut
    (a word that is no punctuation, 0 < k < stop) and the characters before it.
    """

    def __init__(self, sentence):
        self.stop = _final_marks(sentence)
        ends = numpy.cumsum([len(t.text) for t in sentence[:self.stop]], dtype=numpy.int64)
        self.length = int(ends[-1]) if self.stop else 0
        self.tokens = numpy.array([k for k in range(1, self.stop) if sentence[k].tag != "w"], dtype=numpy.int64)
        self.offsets = ends[self.tokens - 1] if len(self.tokens) else numpy.zeros(0, dtype=numpy.int64)


def splice_ending(sentences, index, rng, cuts=None, low=0.35, high=0.7, tries=12):
    """The opening of ``sentences[index]`` finished with another sentence's ending, or None.

    The opening ends at a word boundary within ``low``..``high`` of the body
    (the sentence without its final marks); of ``tries`` random other
    sentences, the ending whose length best matches the part cut off is
    used (never the sentence's own ending), followed by the final marks of
    ``sentences[index]``. ``cuts``: the :class:`_Cuts` of every sentence (made when None).
    """
    cuts = cuts or [_Cuts(s) for s in sentences]
    tokens, own = sentences[index], cuts[index]
    allowed = (own.offsets >= low * own.length) & (own.offsets <= high * own.length)
    if not allowed.any() or len(sentences) < 2:
        return None
    pick = int(rng.choice(numpy.flatnonzero(allowed)))
    k, wanted = int(own.tokens[pick]), own.length - int(own.offsets[pick])
    own_ending = _text(tokens[k:own.stop])
    best = None
    for other in rng.integers(len(sentences), size=tries).tolist():
        table = cuts[other]
        if other == index or not len(table.tokens):
            continue
        gaps = numpy.abs(table.length - table.offsets - wanted)
        j = int(numpy.argmin(gaps))
        ending = sentences[other][table.tokens[j]:table.stop]
        if (best is None or gaps[j] < best[0]) and _text(ending) != own_ending:
            best = (int(gaps[j]), ending)
    if best is None:
        return None
    return list(tokens[:k]) + list(best[1]) + list(tokens[own.stop:])


class OverlapIndex:
    """Finds, for a sentence of a set, the other sentence sharing the most distinct content words and entities.

    Candidates differ from it by at most ``max_gap`` characters in length and
    are no near-duplicates (word-set Jaccard below ``max_jaccard``). Ties go
    to the closer length, then the earlier sentence.
    """

    def __init__(self, sentences, max_gap=0, max_jaccard=0.6):
        self.max_gap, self.max_jaccard = int(max_gap), float(max_jaccard)
        vocab, word_sets = {}, []
        for sentence in sentences:
            words = {t.text for t in sentence if t.kind or _is_content(t)}
            word_sets.append(numpy.array(sorted(vocab.setdefault(w, len(vocab)) for w in words), dtype=numpy.int64))
        self.word_sets = word_sets
        self.sizes = numpy.array([len(w) for w in word_sets], dtype=numpy.int64)
        self.lengths = numpy.array([len(_text(s)) for s in sentences], dtype=numpy.int64)
        flat = numpy.concatenate(word_sets) if word_sets else numpy.zeros(0, dtype=numpy.int64)
        owners = numpy.repeat(numpy.arange(len(word_sets)), self.sizes)
        order = numpy.argsort(flat, kind="stable")
        self._owners = owners[order]                                   # sentence ids sorted by word id
        self._starts = numpy.searchsorted(flat[order], numpy.arange(len(vocab) + 1))

    def most_overlapping(self, i):
        """The index of the best other sentence for sentence ``i``, or -1 when none shares a word."""
        words = self.word_sets[i]
        if not len(words):
            return -1
        hits = numpy.concatenate([self._owners[self._starts[w]:self._starts[w + 1]] for w in words])
        ids, shared = numpy.unique(hits, return_counts=True)
        gap = numpy.abs(self.lengths[ids] - self.lengths[i])
        jaccard = shared / (len(words) + self.sizes[ids] - shared)
        ok = (ids != i) & (gap <= self.max_gap) & (jaccard < self.max_jaccard)
        if not ok.any():
            return -1
        best = numpy.lexsort((ids[ok], gap[ok], -shared[ok]))[0]
        return int(ids[ok][best])


class NegativeMaker:
    """Makes the negatives of :data:`NEG_TYPES` for the sentences (token tuples) of one split."""

    def __init__(self, sentences):
        self.sentences = sentences
        self.pools, self.overlap = EntityPools(sentences), OverlapIndex(sentences)
        self.cuts = [_Cuts(s) for s in sentences]

    def applicable(self, index):
        """The negative types that may apply to sentence ``index`` (``overlap`` is only known once made)."""
        tokens = self.sentences[index]
        found = {"swap": bool(_swappable(tokens, self.pools)), "exchange": bool(_exchangeable(tokens)),
                 "ending": bool(len(self.cuts[index].tokens)), "overlap": True}
        return [kind for kind in NEG_TYPES if found[kind]]

    def make(self, kind, index, rng):
        """The negative of type ``kind`` for sentence ``index`` (a list of Token), or None when it has none."""
        tokens = self.sentences[index]
        if kind == "swap":
            made = swap_entity(tokens, self.pools, rng)
        elif kind == "exchange":
            made = exchange_entities(tokens, rng)
        elif kind == "ending":
            made = splice_ending(self.sentences, index, rng, self.cuts)
        else:
            best = self.overlap.most_overlapping(index)
            made = list(self.sentences[best]) if best >= 0 else None
        if made is None or _text(made) == _text(tokens):
            return None
        return list(made[:_final_marks(made)]) + list(tokens[_final_marks(tokens):])


# ---- building ------------------------------------------------------------------------------------------
def build_split(split, seed=0, copies=1, rewriter=None, path=None):
    """Pairs and triples of one split: ``(pairs, triples, stats)``.

    ``pairs``: a list of :class:`MatchPair`, a positive then a negative for
    each anchor sentence and copy; ``triples``: one :class:`Triple` per anchor
    and copy; ``stats``: counts of anchors and by negative type. Anchors are
    the sentences with at least two replaceable words. ``copies`` draws that
    many rewrites and negatives per anchor. ``rewriter`` defaults to
    :func:`default_rewriter`.
    """
    if split not in _SPLIT_IDS:
        raise ValueError(f"build_split: split must be one of {', '.join(SPLITS)}, got {split!r}")
    rewriter = rewriter or default_rewriter(path)
    sentences = corpus_sentences(split, path=path)
    maker = NegativeMaker(sentences)
    pairs, triples, stats = [], [], collections.Counter()
    for index, anchor in enumerate(sentences):
        if len(rewriter.replaceable(anchor)) < 2:
            continue
        stats["anchors"] += 1
        text_a = _text(anchor)
        for copy in range(copies):
            rng = numpy.random.default_rng([seed, _SPLIT_IDS[split], index, copy])
            kind, negative = _draw_negative(maker, index, rng)
            if negative is None:
                continue
            positive = _text(rewriter.rewrite(anchor, rng))
            negative = _text(rewriter.rewrite(negative, rng))
            if text_a in (positive, negative):
                continue
            pairs += [MatchPair(text_a, positive, 1, POSITIVE), MatchPair(text_a, negative, 0, kind)]
            triples.append(Triple(text_a, positive, negative))
            stats[kind] += 1
    return pairs, triples, dict(stats)


def _draw_negative(maker, index, rng):
    """(type, tokens) of a negative for sentence ``index``: a type drawn by :data:`_TYPE_WEIGHTS` among those
    that apply, drawing again without it when it cannot be made; (None, None) when none can."""
    kinds = maker.applicable(index)
    while kinds:
        weights = numpy.array([_TYPE_WEIGHTS[k] for k in kinds])
        kind = kinds[int(rng.choice(len(kinds), p=weights / weights.sum()))]
        made = maker.make(kind, index, rng)
        if made is not None:
            return kind, made
        kinds.remove(kind)
    return None, None


def default_rewriter(path=None):
    """The :class:`Rewriter` over the fetched synonym groups and the train split's tag lexicon."""
    return Rewriter(load_synonym_table(), tag_lexicon(corpus_sentences("train", path=path)))


def build_pairs(folder, seed=0, train_copies=2, path=None):
    """Build every split and write ``{split}.tsv`` (pairs), ``{split}_triples.tsv`` and ``stats.json``
    into ``folder`` (atomically: a temporary folder renamed at the end). Returns the stats by split."""
    rewriter = default_rewriter(path)
    parent = os.path.dirname(os.path.abspath(folder))
    os.makedirs(parent, exist_ok=True)
    tmp = tempfile.mkdtemp(dir=parent, suffix=".part")
    try:
        stats = {}
        for split in SPLITS:
            pairs, triples, stats[split] = build_split(split, seed, train_copies if split == "train" else 1,
                                                       rewriter, path)
            write_pair_file(os.path.join(tmp, f"{split}.tsv"), pairs)
            write_triple_file(os.path.join(tmp, f"{split}_triples.tsv"), triples)
        settings = {"seed": seed, "train_copies": train_copies, "version": BUILDER_VERSION}
        with open(os.path.join(tmp, "stats.json"), "w", encoding="utf-8") as f:
            json.dump({"settings": settings, "splits": stats}, f, indent=1)
        os.chmod(tmp, 0o755)
        if os.path.isdir(folder):
            shutil.rmtree(folder)
        os.replace(tmp, folder)
    finally:
        if os.path.isdir(tmp):
            shutil.rmtree(tmp)
    return stats


def builder_folder(seed=0, train_copies=2):
    """The cache folder of the builder's files for these settings (``$OAR_HOME/matching/...``)."""
    return os.path.join(oar_home(), "matching", f"peoples_daily-v{BUILDER_VERSION}-seed{seed}-copies{train_copies}")


def builder_file(name, seed=0, train_copies=2):
    """The path of the builder's file ``name`` (e.g. "dev.tsv"), building every split the first time."""
    folder = builder_folder(seed, train_copies)
    if not os.path.isfile(os.path.join(folder, "stats.json")):
        build_pairs(folder, seed, train_copies)
    return os.path.join(folder, name)
