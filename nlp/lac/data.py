"""Character tagging on People's Daily (or a user's own ``word/TAG`` file): the dataset lexical analysis trains on.

The corpus, its format, its fixes and its split rule are those of
:mod:`nlp.data.peoples_daily`. **Labels** follow LAC's scheme: the first
character of a word of type X is ``X-B``, the others ``X-I``; for the corpus
the tag set is :data:`nlp.data.peoples_daily.TAGSET` (85 labels).

**Vocabulary.** The character vocabulary is built from the train split only
(:func:`char_vocab`: normalised characters seen at least ``min_freq`` times,
most frequent first), deterministically, so every process that reads the same
file gets the same ids; dev/test characters outside it get the unknown id. It is
built in memory (parsing the corpus takes about half a second) and shared by the
three splits; save it with ``Vocab.save`` next to a checkpoint and pass it back
as ``vocab_file``. ``official_chars=True`` appends the official LAC model's
characters that train lacks.

**Lexicon.** :func:`train_lexicon` lists the train split's words (normalised,
2..K characters, seen at least ``min_freq`` times) for lexicon features
(:mod:`nlp.lac.lexicon`); save it with :func:`~nlp.lac.lexicon.save_lexicon`
and pass it to the task as ``lexicon_file``.

**Your own file** (``PeoplesDailyTagging(path=...)``, ``own_tags=True`` in the
functions): the same format (one sentence per line, ``word/TAG`` tokens
separated by spaces, split into train/dev/test by the corpus rule), but any tag
is taken as written, with no PKU check and no typo fixes. Its tag set
(:func:`file_tagset`) is built like :data:`TAGSET`: the file's distinct tags,
sorted, each as ``-B`` then ``-I``, then ``O``; a file with T tags has 2T + 1
labels. A tag written ``O`` (other words) gives ``O-B`` / ``O-I``, words of
the outside type.

**A test file of yours** (``oar eval --test_file F``): ``split="all"`` reads
every sentence of the file, past the split rule, and ``tag_file`` (the run's
``tags.txt``) fixes the tag set, so the ids are those the model was trained
with; a tag outside it is an error naming the file and line.
"""
import collections
import functools

import numpy

from framework.config import ConfigError
from framework.io import Dataset
from framework.registry import DATASETS
from nlp.data.peoples_daily import SPLITS, TAGSET, read_corpus, read_sentences
from nlp.data.text import TextFormatError, full_to_half, read_utf8_lines, split_points
from nlp.data.vocab import TagSet, Vocab

from .lexicon import DEFAULT_MAX_LEN, LexiconFeatures
from .official import official_char_vectors, official_words

__all__ = ["char_labels", "char_vocab", "train_lexicon", "jackknife_lexicons", "file_tagset", "PeoplesDailyTagging"]


def char_labels(words, tags):
    """Characters and LAC-scheme labels of one sentence: ``(text, labels)``.

    ``text``: the words joined and normalised with
    :func:`~nlp.data.text.full_to_half` (str, n characters); ``labels``: n label
    names, ``POS-B`` for the first character of each word and ``POS-I`` for the rest.
    """
    if len(words) != len(tags):
        raise ValueError(f"char_labels: {len(words)} words but {len(tags)} tags")
    labels = []
    for word, tag in zip(words, tags):
        labels.append(f"{tag}-B")
        labels.extend([f"{tag}-I"] * (len(word) - 1))
    return full_to_half("".join(words)), labels


def char_vocab(min_freq=1, path=None, own_tags=False, official_chars=False):
    """The character :class:`~nlp.data.vocab.Vocab` of the train split (normalised chars seen >= ``min_freq`` times).

    With ``official_chars`` the characters of the official LAC vocabulary that
    it lacks follow, in code-point order (fetched with the official model, see
    :func:`nlp.lac.official.official_char_vectors`): characters never seen in
    training then keep their own ids, which a model can start from the
    official embedding. Deterministic for a given corpus file, and the same
    object on every call with the same arguments in one process.
    """
    return _char_vocab(read_corpus(path, own_tags), min_freq, bool(official_chars))


@functools.lru_cache(maxsize=8)
def _char_vocab(corpus, min_freq, official_chars):
    counts = collections.Counter()
    for sentence in corpus.split("train"):
        counts.update(full_to_half("".join(sentence.words)))
    vocab = Vocab.build(counts, min_freq=min_freq)
    if not official_chars:
        return vocab
    extra = sorted(c for c in official_char_vectors() if c not in vocab)     # single characters, never pad/unk
    return Vocab(vocab.tokens[2:] + extra, unk=vocab.unk, pad=vocab.pad)


def train_lexicon(min_freq=1, max_len=DEFAULT_MAX_LEN, path=None, own_tags=False):
    """The train split's words of 2..``max_len`` characters seen >= ``min_freq`` times (list of str), normalised
    with :func:`~nlp.data.text.full_to_half`, most frequent first (ties by code points), as a lexicon for
    :class:`~nlp.lac.lexicon.LexiconFeatures`. Deterministic for a given corpus file."""
    return _ranked(sum(_fold_word_counts(1, max_len, path, own_tags), collections.Counter()), min_freq)


def jackknife_lexicons(folds, min_freq=1, max_len=DEFAULT_MAX_LEN, path=None, own_tags=False):
    """``folds`` lexicons (lists of str, as :func:`train_lexicon`): lexicon f holds the train words of the lines
    outside fold f, where train line i is in fold ``(i % 10) % folds`` (2 <= folds <= 8)."""
    if not 2 <= folds <= 8:
        raise ValueError(f"jackknife_lexicons: folds must be in 2..8 (the train residues of line % 10), got {folds}")
    counts = _fold_word_counts(folds, max_len, path, own_tags)
    total = sum(counts, collections.Counter())
    return [_ranked(total - fold, min_freq) for fold in counts]


def _fold_word_counts(folds, max_len, path, own_tags):
    """Per fold ((line % 10) % folds), the counts (Counter) of the normalised train words of 2..max_len chars."""
    if max_len < 2:
        raise ValueError(f"lexicon: max_len must be >= 2, got {max_len}")
    counts = [collections.Counter() for _ in range(folds)]
    for sentence in read_corpus(path, own_tags).split("train"):
        counts[(sentence.line % 10) % folds].update(full_to_half(w) for w in sentence.words if 2 <= len(w) <= max_len)
    return counts


def _ranked(counts, min_freq):
    """The words of ``counts`` seen >= min_freq times, most frequent first, ties by code points."""
    if min_freq < 1:
        raise ValueError(f"lexicon: min_freq must be >= 1, got {min_freq}")
    return sorted((w for w, c in counts.items() if c >= min_freq), key=lambda w: (-counts[w], w))


def file_tagset(path):
    """The :class:`~nlp.data.vocab.TagSet` of a user's ``word/TAG`` file: its distinct tags, sorted, each as
    ``X-B`` then ``X-I``, then ``O`` (2T + 1 labels for T tags); a file without tokens raises TextFormatError."""
    tags = {tag for sentence in read_corpus(path, own_tags=True).sentences for tag in sentence.tags}
    if not tags:
        raise TextFormatError(f"{path}: no word/TAG tokens in the file")
    return TagSet.from_pos(tags)


def _check_tags(sentences, type_index, path, tag_file):
    """Raise TextFormatError naming the file and line of the first word whose tag ``type_index`` lacks."""
    for sentence in sentences:
        unknown = next((t for t in sentence.tags if t not in type_index), None)
        if unknown is not None:
            raise TextFormatError(f"{path}:{_file_line(path, sentence.line)}: tag {unknown!r} is not in the tag set "
                                  f"of {tag_file or path} ({', '.join(type_index)})")


def _file_line(path, index):
    """The 1-based line number in ``path`` of its ``index``-th non-empty line (from 0)."""
    seen = -1
    for number, line in enumerate(read_utf8_lines(path), start=1):
        seen += bool(line.strip())
        if seen == index:
            return number
    return index + 1


@DATASETS.register()
class PeoplesDailyTagging(Dataset):
    """Character tagging samples of one People's Daily split: ``{"tokens": int64 (L,), "labels": int64 (L,)}``.

    ``tokens`` are ids in the character vocabulary (the train split's, see
    :func:`char_vocab`, or the one saved in ``vocab_file``; ``min_freq`` applies
    only when building it); ``labels`` are ids in :data:`TAGSET`. Lines longer
    than ``max_len`` characters are cut into chunks of at most ``max_len`` at
    word boundaries, after sentence-ending punctuation where possible (0: no
    cut); the chunks cover every character, so every word is in exactly one
    sample. ``corpus_file`` reads another file in the same format instead of
    the fetched one. ``path`` reads a user's ``word/TAG`` file instead, with its
    own tag set (:func:`file_tagset`; see "Your own file" in the module
    docstring); a split the file leaves empty raises TextFormatError.

    ``official_chars`` adds the official LAC model's characters to a vocabulary
    built here (see :func:`char_vocab`).

    ``lexicon_folds`` = k >= 2 (train split only) adds ``"lexicon"``: float32
    (L, 3K - 4) lexicon features (:class:`~nlp.lac.lexicon.LexiconFeatures`,
    K = ``lexicon_max_len``) computed with a jackknife: a sample of fold f
    (:func:`jackknife_lexicons`) is matched against the words, seen at least
    ``lexicon_min_freq`` times, of the train lines outside fold f, so words
    found only near it are as unknown to it as new words are to the test
    split. :meth:`lexicon` gives the whole train split's lexicon for the task.
    ``official_lexicon`` then appends 3K - 4 more: the matches of the official
    LAC dictionaries' words (:func:`nlp.lac.official.official_words`, the same
    for every sample); give the task the same words as a second lexicon file.

    ``split="all"`` keeps every sentence of the file (a test file of yours);
    ``tag_file`` encodes the labels with a saved tag set (a run's ``tags.txt``)
    instead of the file's own or :data:`TAGSET`: a tag outside it raises
    TextFormatError naming the file and line.

    Attributes: ``vocab``, ``tagset``, ``lines`` (int64 (len,), the corpus
    line each sample comes from), the three ``lexicon_*`` arguments,
    ``official_lexicon``, and ``num_labels`` / ``labels_source`` (the size and
    origin of the tag set, checked against ``model.num_tags``).
    """

    SPLITS = SPLITS + ("all",)
    TEST_FILE = {"file_keys": ("corpus_file", "path"), "whole": {"split": "all"},
                 "from_run": {"vocab_file": "task.vocab_file", "tag_file": "task.tag_file"}}

    def __init__(self, split: str = "train", vocab_file: str = None, min_freq: int = 1, max_len: int = 200,
                 corpus_file: str = None, path: str = None, lexicon_folds: int = 0, lexicon_min_freq: int = 1,
                 lexicon_max_len: int = DEFAULT_MAX_LEN, official_chars: bool = False, official_lexicon: bool = False,
                 tag_file: str = None):
        if split not in self.SPLITS:
            raise ConfigError(f"PeoplesDailyTagging: split must be one of {', '.join(self.SPLITS)}, got {split!r}")
        if max_len < 0:
            raise ValueError(f"PeoplesDailyTagging: max_len must be >= 0 (0: no cut), got {max_len}")
        if lexicon_folds and split != "train":
            raise ValueError(f"PeoplesDailyTagging: lexicon_folds is for the train split, got split {split!r}")
        if official_lexicon and not lexicon_folds:
            raise ValueError("PeoplesDailyTagging: official_lexicon adds to the jackknifed lexicon features; "
                             "set lexicon_folds too")
        if corpus_file and path:
            raise ValueError("PeoplesDailyTagging: give corpus_file (PKU tags) or path (your own tags), not both")
        own_tags, source = path is not None, path or corpus_file
        self.split, self._source, self._own_tags = split, source, own_tags
        self.lexicon_folds, self.lexicon_min_freq = int(lexicon_folds), int(lexicon_min_freq)
        self.lexicon_max_len, self.official_lexicon = int(lexicon_max_len), bool(official_lexicon)
        self.vocab = Vocab.load(vocab_file) if vocab_file else char_vocab(min_freq, source, own_tags, official_chars)
        self.tagset = TagSet.load(tag_file) if tag_file else file_tagset(path) if own_tags else TAGSET
        self.num_labels = len(self.tagset)
        self.labels_source = (f"the tag set of {tag_file}" if tag_file else
                              f"the tags of {path}, each as X-B and X-I, and O" if own_tags else "the PKU tag set")
        sentences = read_corpus(source, own_tags).sentences if split == "all" else \
            read_sentences(split, source, own_tags)
        if own_tags and not sentences:
            if split == "all":
                raise TextFormatError(f"{path}: no word/TAG sentences in the file")
            count = len(read_corpus(path, own_tags).sentences)
            raise TextFormatError(f"{path}: its {count} sentence(s) leave split {split!r} empty (non-empty line i "
                                  f"goes to test if i % 10 == 0, dev if 1, else train); add lines")
        word_tags = [name[:-2] for name in self.tagset.names if name.endswith("-B")]   # in label order
        type_index = {tag: i for i, tag in enumerate(word_tags)}
        _check_tags(sentences, type_index, source, tag_file)
        words = [w for s in sentences for w in s.words]
        word_lens = numpy.fromiter(map(len, words), dtype=numpy.int64, count=len(words))
        word_types = numpy.fromiter(map(type_index.__getitem__, (t for s in sentences for t in s.tags)),
                                    dtype=numpy.int64, count=len(words))
        text = full_to_half("".join(words))
        self._tokens = self.vocab.encode(text)
        begin_ids = self.tagset.encode([f"{t}-B" for t in word_tags])
        inside_ids = self.tagset.encode([f"{t}-I" for t in word_tags])
        word_ends = numpy.cumsum(word_lens)
        word_starts = word_ends - word_lens
        self._labels = numpy.repeat(inside_ids[word_types], word_lens)
        self._labels[word_starts] = begin_ids[word_types]
        starts_word = numpy.zeros(len(text), dtype=bool)
        starts_word[word_starts] = True
        last_word = numpy.cumsum([len(s.words) for s in sentences], dtype=numpy.int64) - 1
        sentence_ends = word_ends[last_word].tolist() if len(sentences) else []
        bounds, lines = [], []
        for sentence, start, end in zip(sentences, [0] + sentence_ends[:-1], sentence_ends):
            for a, b in split_points(text[start:end], max_len, starts_word[start:end]):
                bounds.append((start + a, start + b))
                lines.append(sentence.line)
        self._bounds = numpy.asarray(bounds, dtype=numpy.int64).reshape(-1, 2)
        self.lines = numpy.asarray(lines, dtype=numpy.int64)
        self._lexicon_flags = self._jackknife_flags(self.lexicon_folds) if self.lexicon_folds else None
        if official_lexicon:
            official = self._match_flags([official_words(self.lexicon_max_len)], numpy.zeros(len(self.lines), int))
            self._lexicon_flags = numpy.concatenate([self._lexicon_flags, official], axis=1)

    def lexicon(self):
        """The lexicon of the whole train split of this dataset's file (list of str, :func:`train_lexicon` with
        ``lexicon_min_freq`` and ``lexicon_max_len``): the one to give the task as ``lexicon_file``."""
        return train_lexicon(self.lexicon_min_freq, self.lexicon_max_len, self._source, self._own_tags)

    def _jackknife_flags(self, folds):
        """(characters, 3K - 4) bool lexicon features of every sample, from the lexicon of the other folds."""
        lexicons = jackknife_lexicons(folds, self.lexicon_min_freq, self.lexicon_max_len, self._source,
                                      self._own_tags)
        return self._match_flags(lexicons, (self.lines % 10) % folds)

    def _match_flags(self, lexicons, group_of, rows_per_pass=1024):
        """(characters, 3K - 4) bool lexicon features of every sample, matched against ``lexicons[g]`` (lists of
        str) for the samples with ``group_of`` (int (samples,)) g."""
        flags = numpy.zeros((len(self._tokens), 3 * self.lexicon_max_len - 4), dtype=bool)
        for group, words in enumerate(lexicons):
            features = LexiconFeatures(words, self.vocab, self.lexicon_max_len)
            members = numpy.flatnonzero(group_of == group)
            for first in range(0, len(members), rows_per_pass):
                starts, ends = self._bounds[members[first:first + rows_per_pass]].T
                columns = numpy.arange((ends - starts).max(initial=0))
                inside = columns < (ends - starts)[:, None]                     # (rows, T)
                where = (starts[:, None] + columns)[inside]                     # positions in the text
                ids = numpy.zeros(inside.shape, dtype=numpy.int64)
                ids[inside] = self._tokens[where]
                flags[where] = features(ids)[inside] > 0
        return flags

    def __getitem__(self, index):
        start, end = self._bounds[index]
        sample = {"tokens": self._tokens[start:end].copy(), "labels": self._labels[start:end].copy()}
        if self._lexicon_flags is not None:
            sample["lexicon"] = self._lexicon_flags[start:end].astype(numpy.float32)
        return sample

    def __len__(self):
        return len(self._bounds)
