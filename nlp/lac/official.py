"""Baidu's official LAC model (``LAC==2.1.2``, folder ``LAC/lac_model/``): its resources, read and converted.

The folder holds the network's 20 parameters in PaddlePaddle's persisted
format (``model/``, read by :mod:`framework.paddle_format`) and four tables
(``conf/``): ``word.dic`` (``id\\ttoken``, 58,224 ids, the last one ``OOV``),
``tag.dic`` (``id\\ttag``; ids 16-21 and 34-35 are listed twice and the later
names PER/LOC/ORG/TIME win), ``q2b.dic`` (``from\\tto``) and ``small_seg.dic``
(``word count``, for the coarse segmentation). Tables are read with LAC's own
rules (:mod:`nlp.lac.tables`).

The same distribution holds the segmentation-only model ``LAC/seg_model/``
(the same network at width 96 over 8,224 characters, tags ``-B -I -E -S``, the
same files); every reader here takes the folder (``member``) it reads.

The converted weights (float32) and tables are cached under
``$OAR_HOME/converted/lac-2.1.2/`` (``lac-2.1.2-seg_model/`` for the seg model)
as ``weights.npz`` and ``tables.json``, each
stamped with the sha256 of the source files; a later load that finds the same
stamp skips the conversion, any other stamp converts again. Processes that
start together on a cold cache download, extract and convert once: each step
runs under a file lock (:func:`framework.fetch.file_lock`) and the later ones
find its finished files.

This module reads the resources only (weights as a state dict, tables,
character vectors, dictionary words); :func:`nlp.lac.task.load_official` and
:func:`nlp.lac.task.load_official_task` build the model and the task from them.
"""
import functools
import hashlib
import json
import os
from dataclasses import dataclass

import numpy

from framework import fetch as fw_fetch
from framework import load as fw_load, save as fw_save
from framework.serialization import atomic_write
from framework.paddle_format import load_paddle_params
from nlp.data.sources import LAC, LAC_MODEL_DIR
from nlp.data.text import full_to_half

from .preprocess import OfficialPreprocessor
from .segment import CoarseSegmenter
from .tables import TextFormatError, load_kv_dict
from framework.errors import MissingFileError

__all__ = ["OFFICIAL_NAMES", "official_state_dict", "OfficialTables", "official_model_dir", "source_files",
           "source_digest", "read_official_tables", "convert_official", "read_official", "official_char_vectors",
           "official_words"]

CONF_FILES = ("word.dic", "tag.dic", "q2b.dic", "small_seg.dic")
CACHE_FORMAT = 1


def _official_names(num_layers):
    """{official parameter name: our name} for a LAC model of ``num_layers`` BiGRU layers."""
    names = {"word_emb": "embedding.weight", "crfw": "crf.transition",
             f"fc_{2 * num_layers}.w_0": "emission.weight", f"fc_{2 * num_layers}.b_0": "emission.bias"}
    for k in range(num_layers):
        for offset, direction in enumerate(("fw", "bw")):
            unit, index = f"gru.layers.{k}.{direction}", 2 * k + offset
            names.update({f"fc_{index}.w_0": f"{unit}.input_proj.weight", f"fc_{index}.b_0": f"{unit}.input_proj.bias",
                          f"gru_{index}.w_0": f"{unit}.weight_hh", f"gru_{index}.b_0": f"{unit}.bias_hh"})
    return names


#: The official ``LAC/lac_model/model`` parameter files (2 BiGRU layers) -> our parameter names.
OFFICIAL_NAMES = _official_names(2)


def official_state_dict(params, dtype=numpy.float32):
    """Our state dict (name -> array of ``dtype``) from the official parameter arrays ``{file name: array}``.

    The number of layers is read from the ``gru_*`` names; every array of the
    official model must be present (the error lists the missing ones).
    """
    num_layers = sum(1 for name in params if name.startswith("gru_") and name.endswith(".w_0")) // 2
    names = _official_names(num_layers)
    missing = sorted(set(names) - set(params))
    if num_layers == 0 or missing:
        raise KeyError(f"official_state_dict: not a LAC model; missing {', '.join(missing) or 'gru_* weights'}")
    return {ours: numpy.asarray(params[theirs], dtype=dtype) for theirs, ours in names.items()}


@dataclass
class OfficialTables:
    """The official model's tables.

    Attributes:
        word2id: ``{token: id}`` from ``word.dic`` (later lines win).
        q2b: ``{from: to}`` from ``q2b.dic``.
        tag_names: the name of each tag id, ``tag_names[i]`` for i in [0, K) (``a-B`` ... ``O``).
        segmenter: the :class:`CoarseSegmenter` of ``small_seg.dic``.
        oov_id: ``word2id["OOV"]``.
    """
    word2id: dict
    q2b: dict
    tag_names: list
    segmenter: CoarseSegmenter
    oov_id: int

    def preprocessor(self):
        """The :class:`OfficialPreprocessor` over these tables."""
        return OfficialPreprocessor(self.word2id, self.q2b, self.segmenter, self.oov_id)

    def to_json(self):
        """A JSON-ready dict of the tables."""
        return {"word2id": list(self.word2id.items()), "q2b": list(self.q2b.items()), "tag_names": self.tag_names,
                "seg_words": self.segmenter.words, "seg_total": self.segmenter.total_count, "oov_id": self.oov_id}

    @classmethod
    def from_json(cls, data):
        """The tables of a :meth:`to_json` dict."""
        return cls(word2id=dict(data["word2id"]), q2b=dict(data["q2b"]), tag_names=list(data["tag_names"]),
                   segmenter=CoarseSegmenter(data["seg_words"], int(data["seg_total"])), oov_id=int(data["oov_id"]))


def official_model_dir(member=LAC_MODEL_DIR):
    """The model folder ``member`` (``LAC/lac_model/`` or ``LAC/seg_model/``), fetched from the pinned ``LAC``
    distribution into the cache on first use."""
    return os.path.join(fw_fetch.fetch(LAC, [member]), member.rstrip("/"))


def source_files(model_dir):
    """The files a conversion reads: the parameter files and the conf tables, as sorted absolute paths."""
    params = [os.path.join(model_dir, "model", name) for name in OFFICIAL_NAMES]
    return sorted(params + [os.path.join(model_dir, "conf", name) for name in CONF_FILES])


def source_digest(model_dir):
    """sha256 (hex) over the names and contents of :func:`source_files`."""
    digest = hashlib.sha256()
    for path in source_files(model_dir):
        if not os.path.isfile(path):
            raise MissingFileError(f"the official LAC model folder {model_dir} lacks {path}")
        digest.update(os.path.relpath(path, model_dir).encode("utf-8") + b"\0")
        with open(path, "rb") as f:
            digest.update(hashlib.sha256(f.read()).digest())
    return digest.hexdigest()


def read_official_tables(model_dir, num_tags):
    """:class:`OfficialTables` from ``model_dir/conf``; ``num_tags`` is K (the CRF's width).

    A tag id in [0, K) that ``tag.dic`` does not name, or a vocabulary without
    ``OOV``, raises TextFormatError naming the file.
    """
    conf = os.path.join(model_dir, "conf")
    word2id = load_kv_dict(os.path.join(conf, "word.dic"), reverse=True, value_type=int)
    id2tag = load_kv_dict(os.path.join(conf, "tag.dic"))
    q2b = load_kv_dict(os.path.join(conf, "q2b.dic"))
    missing = [str(i) for i in range(num_tags) if str(i) not in id2tag]
    if missing:
        raise TextFormatError(f"{os.path.join(conf, 'tag.dic')}: no name for tag id(s) {', '.join(missing)} "
                              f"of the model's {num_tags} tags")
    if "OOV" not in word2id:
        raise TextFormatError(f"{os.path.join(conf, 'word.dic')}: no 'OOV' token")
    return OfficialTables(word2id=word2id, q2b=q2b, tag_names=[id2tag[str(i)] for i in range(num_tags)],
                          segmenter=CoarseSegmenter.from_file(os.path.join(conf, "small_seg.dic")),
                          oov_id=word2id["OOV"])


def convert_official(model_dir):
    """(state dict of :class:`~nlp.lac.model.BiGRUCRF` in float32, :class:`OfficialTables`) from ``model_dir``."""
    params = load_paddle_params(os.path.join(model_dir, "model"), names=list(OFFICIAL_NAMES))
    state = official_state_dict(params)
    return state, read_official_tables(model_dir, state["crf.transition"].shape[1])


def _cache_dir(member):
    suffix = "" if member == LAC_MODEL_DIR else "-" + os.path.basename(member.rstrip("/"))
    return os.path.join(fw_fetch.oar_home(), "converted", LAC.cache_name.lower() + suffix)


def _read_cache(cache_dir, digest):
    """(state, tables) from the cache when both files carry ``digest``; None otherwise."""
    weights_path, tables_path = os.path.join(cache_dir, "weights.npz"), os.path.join(cache_dir, "tables.json")
    if not (os.path.isfile(weights_path) and os.path.isfile(tables_path)):
        return None
    try:
        with open(tables_path, encoding="utf-8") as f:
            tables = json.load(f)
        if tables.get("format") != CACHE_FORMAT or tables.get("source_sha256") != digest:
            return None
        weights = fw_load(weights_path)
        if weights.get("source_sha256") != digest:
            return None
        return weights["state"], OfficialTables.from_json(tables)
    except (OSError, ValueError, KeyError, TypeError):
        return None                          # a damaged cache is rebuilt


def _write_cache(cache_dir, digest, state, tables):
    os.makedirs(cache_dir, exist_ok=True)
    fw_save({"source_sha256": digest, "state": state}, os.path.join(cache_dir, "weights.npz"))
    with atomic_write(os.path.join(cache_dir, "tables.json")) as f:
        json.dump({"format": CACHE_FORMAT, "source_sha256": digest, **tables.to_json()}, f, ensure_ascii=False)


def read_official(model_dir=None, cache_dir=None, use_cache=True, member=LAC_MODEL_DIR):
    """(float32 state dict of :class:`~nlp.lac.model.BiGRUCRF`, :class:`OfficialTables`) of an official model,
    converted once and cached.

    Args:
        model_dir: a model folder in the layout of ``lac_model`` (default: ``member`` fetched from the pinned
            distribution).
        cache_dir: where the converted files live (default ``$OAR_HOME/converted/lac-2.1.2``, with
            ``-seg_model`` for the seg model).
        use_cache: read and write the converted cache; False always converts from the source.
        member: the distribution's model folder (``LAC/lac_model/``, ``LAC/seg_model/``) when ``model_dir`` is None.
    """
    model_dir = model_dir or official_model_dir(member)
    if not use_cache:
        return convert_official(model_dir)
    cache_dir = cache_dir or _cache_dir(member)
    digest = source_digest(model_dir)
    cached = _read_cache(cache_dir, digest)
    if cached is None:
        with fw_fetch.file_lock(cache_dir, "oar: waiting for another process converting the official LAC model"):
            cached = _read_cache(cache_dir, digest)      # another process may have converted it meanwhile
            if cached is None:
                cached = convert_official(model_dir)
                _write_cache(cache_dir, digest, *cached)
    return cached


def official_char_vectors(model_dir=None):
    """``{character: float32 (E,) embedding row}`` for the single characters of the official vocabulary.

    Characters are normalised with :func:`~nlp.data.text.full_to_half` as oar's
    character vocabularies are; where two official tokens normalise to one
    character, the one with the smaller id wins. E is 128. A new dict each call;
    the rows are shared read-only arrays.
    """
    return dict(_official_resources(model_dir)[0])


def official_words(max_len, model_dir=None):
    """The words of 2..``max_len`` characters of the official dictionaries (the coarse segmenter's
    ``small_seg.dic`` and the multi-character tokens of ``word.dic``), normalised with
    :func:`~nlp.data.text.full_to_half`, without whitespace, sorted (list of str)."""
    return [w for w in _official_resources(model_dir)[1] if len(w) <= max_len]


@functools.lru_cache(maxsize=2)
def _official_resources(model_dir):
    """(character vectors, sorted words of >= 2 characters) of the official model, read once per process."""
    state, tables = read_official(model_dir)
    rows = state["embedding.weight"]
    vectors = {}
    for token, index in sorted(tables.word2id.items(), key=lambda item: item[1]):
        char = full_to_half(token)
        if len(char) == 1 and not char.isspace():
            vectors.setdefault(char, rows[index].copy())
    for row in vectors.values():
        row.flags.writeable = False
    words = {full_to_half(w) for w in list(tables.segmenter.words) + list(tables.word2id)}
    return vectors, sorted(w for w in words if len(w) >= 2 and not any(c.isspace() for c in w))
