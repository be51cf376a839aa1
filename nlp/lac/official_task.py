"""The official LAC task built from a config: LAC's own four tables as task files, so a fine-tuned official
model is an ordinary run directory.

:func:`nlp.lac.task.load_official_task` builds the official model's task from the fetched ``lac_model``
folder; a model fine-tuned from it (:mod:`nlp.lac.official_train`) keeps the same preprocessing and tags, and
:class:`OfficialLexicalAnalysis` rebuilds that task from a config whose ``task`` section names the tables
(LAC's ``conf/`` files, the keys after LAC's ``args.ini``)::

    task: {type: OfficialLexicalAnalysis, word_dict_file: word.dic, label_dict_file: tag.dic,
           word_rep_dict_file: q2b.dic, seg_dict_file: small_seg.dic}
    model: {type: BiGRUCRF, vocab_size: 58224, num_tags: 49}

``save_assets`` copies the four files into a run directory under their LAC names, so ``zoo.load(DIR)``,
``oar run|export|serve DIR`` check and read them there.
"""
import os

from framework.engine.task import copy_asset
from framework.registry import TASKS

from .official import OfficialTables
from .segment import CoarseSegmenter
from .tables import TextFormatError, load_kv_dict
from .task import LexicalAnalysis

__all__ = ["CONF_KEYS", "OfficialLexicalAnalysis", "read_tables", "conf_files"]

#: task key -> the file's name in LAC's ``conf/`` folder (and in a run directory).
CONF_KEYS = {"word_dict_file": "word.dic", "label_dict_file": "tag.dic", "word_rep_dict_file": "q2b.dic",
             "seg_dict_file": "small_seg.dic"}


def conf_files(conf_dir):
    """``{task key: path}`` of the four tables in LAC's ``conf`` folder ``conf_dir`` (:data:`CONF_KEYS`)."""
    return {key: os.path.join(conf_dir, name) for key, name in CONF_KEYS.items()}


def read_tables(word_dict_file, label_dict_file, word_rep_dict_file, seg_dict_file, num_tags):
    """:class:`~nlp.lac.official.OfficialTables` from LAC's four table files, read with LAC's rules; ``num_tags``
    is K, the CRF's width. A tag id in [0, K) without a name, or a vocabulary without ``OOV``, is a
    TextFormatError naming the file."""
    word2id = load_kv_dict(word_dict_file, reverse=True, value_type=int)
    id2tag = load_kv_dict(label_dict_file)
    missing = [str(i) for i in range(num_tags) if str(i) not in id2tag]
    if missing:
        raise TextFormatError(f"{label_dict_file}: no name for tag id(s) {', '.join(missing)} of the model's "
                              f"{num_tags} tags")
    if "OOV" not in word2id:
        raise TextFormatError(f"{word_dict_file}: no 'OOV' token")
    return OfficialTables(word2id=word2id, q2b=load_kv_dict(word_rep_dict_file),
                          tag_names=[id2tag[str(i)] for i in range(num_tags)],
                          segmenter=CoarseSegmenter.from_file(seg_dict_file), oov_id=word2id["OOV"])


@TASKS.register()
class OfficialLexicalAnalysis(LexicalAnalysis):
    """:class:`~nlp.lac.task.LexicalAnalysis` with the official preprocessing and tag names read from LAC's
    table files (module docstring); whitespace grouped as the official LAC groups it unless told otherwise.

    Args:
        model: a :class:`~nlp.lac.model.BiGRUCRF` over the ids of ``word_dict_file`` (its ``num_tags`` = K).
        word_dict_file: ``word.dic`` (``id\\ttoken``).
        label_dict_file: ``tag.dic`` (``id\\ttag``).
        word_rep_dict_file: ``q2b.dic`` (``from\\tto``).
        seg_dict_file: ``small_seg.dic`` (``word count``, the coarse segmentation).
        options: the other :class:`~nlp.lac.task.LexicalAnalysis` options (``customization``, ``batch_size``,
            ``whitespace`` ...).
    """

    def __init__(self, model, word_dict_file: str, label_dict_file: str, word_rep_dict_file: str,
                 seg_dict_file: str, whitespace: str = "official", **options):
        self.conf_files = {"word_dict_file": word_dict_file, "label_dict_file": label_dict_file,
                           "word_rep_dict_file": word_rep_dict_file, "seg_dict_file": seg_dict_file}
        self.tables = read_tables(**self.conf_files, num_tags=model.num_tags)
        super().__init__(model, preprocessor=self.tables.preprocessor(), tag_names=self.tables.tag_names,
                         whitespace=whitespace, **options)

    def save_assets(self, directory):
        """The :class:`~nlp.lac.task.LexicalAnalysis` copies, and the four tables under their LAC names."""
        overrides = super().save_assets(directory)
        for key, path in self.conf_files.items():
            overrides[f"task.{key}"] = copy_asset(path, directory, CONF_KEYS[key])
        return overrides
