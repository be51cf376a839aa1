"""What the sentiment (:mod:`nlp.senta`) and matching (:mod:`nlp.simnet`) packages share: their text pipeline.

Both tasks turn raw text into token ids the same way:

- a tokeniser from :data:`nlp.data.tokenizers.TOKENIZERS` (:func:`build_text_tokenizer`:
  ``char`` by default, ``sentencepiece``, or LAC's words, ``lac_word``, which
  it registers by importing :mod:`nlp.lac.tokenizer`);
- a vocabulary read from a file or built once from the training texts and
  cached beside the tokeniser's artefacts (:func:`task_vocab`, :func:`cached_vocab`), or the fixed one
  of a tokeniser that has its own (``lac``, LAC's tokens: :mod:`nlp.lac.encoder`);
- at most ``max_len`` tokens per text, an empty text one unknown token
  (:class:`TokenEncoder`, the base of both tasks' collators);
- a run directory keeps the vocabulary and a SentencePiece model (:func:`text_task_assets`).

Both model families mark the valid positions of their padded ids with :func:`lengths_mask`.
"""
import os

import numpy

import framework
import framework.nn.functional as F
from framework.config import ConfigError
from framework.engine.task import copy_asset
from framework.io.remote import is_url
from nlp.data.tokenizers import build_tokenizer
from nlp.data.vocab import Vocab

__all__ = ["VocabularyNotFoundError", "CHARS_PER_TOKEN", "build_text_tokenizer", "TokenEncoder", "cached_vocab", "task_vocab",
           "text_task_assets", "lengths_mask"]

CHARS_PER_TOKEN = 8      # text beyond max_len * 8 characters is never tokenised


class VocabularyNotFoundError(ConfigError, FileNotFoundError):
    """The vocabulary file a text task's config names does not exist."""


def build_text_tokenizer(cfg):
    """The tokeniser of a text task's ``tokenizer`` section (``{type: char}`` when None)."""
    from nlp.lac import encoder, tokenizer  # noqa: F401  (register lac and lac_word; here so the models need not load LAC)
    return build_tokenizer(cfg or {"type": "char"}, where="task.tokenizer")


class TokenEncoder:
    """Texts -> token ids: each text is tokenised (at most ``max_len * 8`` of its characters), cut to
    ``max_len`` tokens and mapped through ``vocab``; a text with no token (empty, or only spaces) becomes one
    unknown token, so every length is >= 1. The collators of the text tasks derive from it."""

    def __init__(self, tokenizer, vocab, max_len):
        if max_len < 1:
            raise ValueError(f"{type(self).__name__}: max_len must be >= 1, got {max_len}")
        self.tokenizer, self.vocab, self.max_len = tokenizer, vocab, int(max_len)

    def encode(self, texts):
        """Token ids of each text: a list of N int64 arrays, each of length 1..max_len."""
        clipped = [text[:self.max_len * CHARS_PER_TOKEN] for text in texts]
        ids = [self.vocab.encode(tokens[:self.max_len]) for tokens in self.tokenizer.tokenize_batch(clipped)]
        return [i if i.size else numpy.array([Vocab.UNK_ID], dtype=numpy.int64) for i in ids]


def cached_vocab(tokenizer, folder, train, other=(), min_freq=2, max_size=None):
    """Fit ``tokenizer`` on the training texts ``train`` (``other``: texts it will see later) keeping its
    artefacts in ``folder``, and build the vocabulary of the tokens seen at least ``min_freq`` times in
    ``train``, most frequent first, at most ``max_size`` entries with pad and unk; the vocabulary is cached
    as ``folder/vocab_min<min_freq>_max<max_size or 0>.txt`` and read from there next time. A tokeniser with
    a fixed vocabulary of its own (a ``vocabulary()`` method) gives that one instead. Returns a Vocab."""
    tokenizer.fit(train, folder, other_texts=other)
    if hasattr(tokenizer, "vocabulary"):
        return tokenizer.vocabulary()
    path = os.path.join(folder, f"vocab_min{min_freq}_max{max_size or 0}.txt")
    if os.path.isfile(path):
        return Vocab.load(path)
    vocab = Vocab.build((token for tokens in tokenizer.tokenize_batch(train) for token in tokens),
                        min_freq=min_freq, max_size=max_size)
    vocab.save(path)
    return vocab


def task_vocab(task, vocab, model, build):
    """The vocabulary of a text task: the file ``vocab`` when given, else ``build(capacity)`` (capacity =
    ``model.vocab_size`` or None); one error naming ``task`` when the file is missing or the vocabulary
    outgrows the model's embedding."""
    capacity = getattr(model, "vocab_size", None)
    if vocab is None:
        result = build(capacity)
    elif not is_url(vocab) and not os.path.isfile(vocab):
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


def lengths_mask(ids, lengths, owner="text model"):
    """Bool mask (N, L) of the valid positions of padded ``ids`` (N, L): ``mask[i, t] = t < lengths[i]``.

    ``lengths`` (N,) integers in [1, L], or None (every position valid); ``owner``
    names the model in the errors.
    """
    if ids.ndim != 2:
        raise ValueError(f"{owner}: ids must be (N, L), got shape {ids.shape}")
    n, steps = ids.shape
    if lengths is None:
        return framework.to_tensor(numpy.ones((n, steps), dtype=bool), device=ids.device)
    if lengths.shape != (n,) or lengths.dtype.kind not in "iu":
        raise ValueError(f"{owner}: lengths must be (N,) = ({n},) integers, got {lengths.dtype} {lengths.shape}")
    values = lengths.numpy()
    if n and (values.min() < 1 or values.max() > steps):
        raise ValueError(f"{owner}: lengths must lie in [1, {steps}] for ids of shape {ids.shape}, "
                         f"got [{values.min()}, {values.max()}]")
    return F.sequence_mask(lengths, maxlen=steps)
