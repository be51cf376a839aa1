"""Text-matching datasets: :class:`MatchingPairs` and :class:`MatchingTriples` read the builder's files
(:mod:`nlp.simnet.builder`, built once into ``$OAR_HOME/matching/``) or a user's file (:mod:`nlp.simnet.pairs`).
"""
from framework.config import ConfigError
from framework.io import Dataset
from framework.registry import DATASETS

from nlp.data.peoples_daily import SPLITS
from nlp.data.text import TextFormatError

from .builder import builder_file
from .pairs import read_pair_file, read_triple_file, triples_from_pairs

__all__ = ["MatchingPairs", "MatchingTriples"]


def _check_split(split, path):
    if path is None and split not in SPLITS:
        raise ConfigError(f"matching data: split must be one of {', '.join(SPLITS)}, got {split!r}")


@DATASETS.register()
class MatchingPairs(Dataset):
    """Labelled pairs ``{"text_a", "text_b", "label": int, "neg_type": str, "query_id": int}``.

    From the builder's ``split`` (built with ``seed`` and ``train_copies`` into
    the cache the first time), or from a user's TSV file ``path``
    (:func:`read_pair_file`). ``query_id`` numbers the distinct ``text_a`` in order
    of appearance (pairwise ranking accuracy compares pairs of one query).
    ``oar eval --test_file F`` reads every pair of F (``path``).
    """

    SPLITS = SPLITS
    TEST_FILE = {"file_keys": ("path",)}

    def __init__(self, split: str = "test", path: str = None, seed: int = 0, train_copies: int = 2):
        _check_split(split, path)
        source = path or builder_file(f"{split}.tsv", seed, train_copies)
        self.pairs = read_pair_file(source)
        if not self.pairs:
            raise TextFormatError(f"{source}: no 'text_a<TAB>text_b<TAB>label' lines in the file")
        queries = {}
        self.queries = [queries.setdefault(p.text_a, len(queries)) for p in self.pairs]

    def __getitem__(self, index):
        pair = self.pairs[index]
        return {"text_a": pair.text_a, "text_b": pair.text_b, "label": pair.label, "neg_type": pair.neg_type,
                "query_id": self.queries[index]}

    def __len__(self):
        return len(self.pairs)


@DATASETS.register()
class MatchingTriples(Dataset):
    """Pairwise training triples ``{"query", "pos", "neg"}`` (three str).

    From the builder's ``split`` (its triple file), or from a user's file
    ``path``: with ``kind`` "pairs" (default) a pair file grouped by
    ``text_a`` (:func:`triples_from_pairs`, at most ``max_per_query`` per
    query), with ``kind`` "triples" a ``query<TAB>pos<TAB>neg`` file.
    A test file of yours (``oar eval --test_file F``) is read as labelled pairs, by :class:`MatchingPairs`.
    """

    SPLITS = SPLITS
    TEST_FILE = {"type": "MatchingPairs", "file_keys": ("path",)}

    def __init__(self, split: str = "train", path: str = None, kind: str = "pairs", max_per_query: int = 4,
                 seed: int = 0, train_copies: int = 2):
        _check_split(split, path)
        if kind not in ("pairs", "triples"):
            raise ConfigError(f"MatchingTriples: kind must be 'pairs' or 'triples', got {kind!r}")
        if path is None:
            self.triples = read_triple_file(builder_file(f"{split}_triples.tsv", seed, train_copies))
        elif kind == "triples":
            self.triples = read_triple_file(path)
        else:
            self.triples = triples_from_pairs(read_pair_file(path), max_per_query)
            if not self.triples:
                raise ValueError(f"MatchingTriples: {path} has no text_a with both a positive and a negative pair, "
                                 "so no training triple can be made")

    def __getitem__(self, index):
        return dict(self.triples[index]._asdict())

    def __len__(self):
        return len(self.triples)
