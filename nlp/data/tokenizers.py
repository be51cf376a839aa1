"""Tokenisers that turn raw text into token strings for a :class:`~nlp.data.vocab.Vocab`.

Tokenisers are registered in :data:`TOKENIZERS` and built from a config
mapping such as ``{type: char}``:

- ``char`` (:class:`CharTokenizer`): one token per character;
- ``sentencepiece`` (:class:`SentencePieceTokenizer`): pieces of a unigram or
  BPE model trained on the training texts with the ``sentencepiece`` package;
- ``lac_word`` (:class:`nlp.lac.tokenizer.LacWordTokenizer`, registered when
  :mod:`nlp.lac.tokenizer` is imported, as :mod:`nlp.common` does for the text
  tasks): the words of our LAC tagger running the official Baidu model, cached per text.

All of them first normalise the text the same way (:func:`normalize`: full-width
forms to ASCII, lower case). ``fit(train_texts, folder, other_texts=())``
prepares a tokeniser from the training texts and keeps what it learns (a
SentencePiece model, cached LAC words) in ``folder`` so the next run reuses it;
``signature`` names its settings, to key such folders.
"""
import os

from framework.fetch import sha256_of
from framework.registry import Registry
from framework.serialization import atomic_write

from .text import full_to_half
from framework.errors import MissingFileError

__all__ = ["TOKENIZERS", "build_tokenizer", "normalize", "Tokenizer", "CharTokenizer", "SentencePieceTokenizer"]

TOKENIZERS = Registry("tokenizer")


def build_tokenizer(cfg, where="tokenizer"):
    """The tokeniser described by ``cfg`` (``{type: char|sentencepiece|lac_word, ...}``)."""
    return TOKENIZERS.build(cfg, where=where)


def normalize(text):
    """``text`` with full-width forms and the ideographic space made ASCII (:func:`full_to_half`), lower-cased."""
    if not isinstance(text, str):
        raise TypeError(f"expected text as a str, got {type(text).__name__}")
    return full_to_half(text).lower()


class Tokenizer:
    """Base class: ``tokenize(text) -> list of str``; ``tokenize_batch`` and ``fit`` have defaults.

    Tokens are non-empty and hold no whitespace-only strings.
    """

    signature = "tokenizer"

    def tokenize(self, text):
        raise NotImplementedError

    def tokenize_batch(self, texts):
        """``[tokenize(t) for t in texts]``: a list of N token lists."""
        return [self.tokenize(text) for text in texts]

    def fit(self, train_texts, folder, other_texts=()):
        """Prepare from ``train_texts`` (a list of str), keeping artefacts in ``folder``.

        ``other_texts`` will be tokenised later (dev/test); a tokeniser may
        precompute them but never learns from them. The default does nothing.
        """


@TOKENIZERS.register("char")
class CharTokenizer(Tokenizer):
    """One token per character of the normalised text; whitespace is dropped.

    ``"Ｗｉｆｉ 很好！"`` -> ``["w", "i", "f", "i", "很", "好", "!"]``.
    """

    signature = "char"

    def tokenize(self, text):
        return [c for c in normalize(text) if not c.isspace()]


@TOKENIZERS.register("sentencepiece")
class SentencePieceTokenizer(Tokenizer):
    """Pieces of a SentencePiece model (``sentencepiece`` package, imported when first needed).

    Args:
        model: path of a trained ``.model`` file; when None, :meth:`fit` trains
            one on the normalised training texts (kept as
            ``folder/spm_<model_type>_<vocab_size>.model``).
        vocab_size: pieces of the trained model (at most; fewer when the texts are too few).
        model_type: 'unigram' or 'bpe'.
        character_coverage: share of characters the model must cover (the rest become unknown pieces).

    ``model_path`` is the model file in use (``model``, or the one :meth:`fit` trained).
    """

    def __init__(self, model: str = None, vocab_size: int = 8000, model_type: str = "unigram",
                 character_coverage: float = 0.9995):
        if model_type not in ("unigram", "bpe"):
            raise ValueError(f"SentencePieceTokenizer: model_type must be 'unigram' or 'bpe', got {model_type!r}")
        self.model, self.vocab_size, self.model_type = model, int(vocab_size), model_type
        self.character_coverage = float(character_coverage)
        self.model_path, self._processor = None, None
        if model is not None:
            if not os.path.isfile(model):
                raise MissingFileError(f"SentencePieceTokenizer: model file not found: {model}")
            self._load(model)

    @property
    def signature(self):
        if self.model is not None:
            return f"sentencepiece-{sha256_of(self.model)[:16]}"
        return f"sentencepiece-{self.model_type}-{self.vocab_size}"

    def __getstate__(self):
        return {**self.__dict__, "_processor": None}

    def __setstate__(self, state):
        self.__dict__.update(state)
        if self.model_path is not None:
            self._load(self.model_path)

    def _load(self, path):
        self._processor = _sentencepiece().SentencePieceProcessor(model_file=path)
        self.model_path = path

    def fit(self, train_texts, folder, other_texts=()):
        if self.model is not None:
            return
        path = os.path.join(folder, f"spm_{self.model_type}_{self.vocab_size}.model")
        if not os.path.isfile(path):
            _train_sentencepiece([normalize(t) for t in train_texts], path, self.vocab_size, self.model_type,
                                 self.character_coverage)
        self._load(path)

    def tokenize(self, text):
        if self._processor is None:
            raise RuntimeError("SentencePieceTokenizer: no model yet; give model=PATH or call fit(train_texts, folder)")
        return [p for p in self._processor.encode(normalize(text), out_type=str) if p.strip() and p != "▁"]


def _sentencepiece():
    try:
        import sentencepiece
    except ImportError:
        raise ImportError("the sentencepiece tokeniser needs the 'sentencepiece' package: "
                          "pip install sentencepiece (or oar[nlp])") from None
    return sentencepiece


def _train_sentencepiece(texts, path, vocab_size, model_type, character_coverage):
    """Train a SentencePiece model on ``texts`` (list of str) and write it to ``path`` (atomically)."""
    spm = _sentencepiece()
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    with atomic_write(path, "wb") as f:
        spm.SentencePieceTrainer.train(sentence_iterator=iter([t for t in texts if t.strip()]), model_writer=f,
                                       vocab_size=vocab_size, model_type=model_type,
                                       character_coverage=character_coverage, hard_vocab_limit=False,
                                       shuffle_input_sentence=False, num_threads=1, minloglevel=2)
