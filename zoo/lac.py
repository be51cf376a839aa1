"""``from zoo.lac import LAC``: Baidu's ``from LAC import LAC`` (LAC 2.1.2) on oar, the same constructor, methods and
return types, with no PaddlePaddle.

Migrating code changes the import and nothing else::

    from zoo.lac import LAC                  # was: from LAC import LAC
    lac = LAC(mode="lac")                     # "lac", "seg" or "rank"; model_path= a directory LAC.train saved
    lac.run("百度是一家高科技公司")              # [["百度", "是", "一家", "高科技", "公司"], ["ORG", "v", "m", "n", "n"]]
    lac.load_customization("custom.txt", sep=None)
    lac.train("my_lac", train_data="train.txt", test_data="test.txt", iter_num=10)
    LAC(model_path="my_lac").run(["..."])

``mode`` picks the zoo model (:data:`MODES`: ``lac``, ``lac_seg``, ``lac_rank``); ``model_path`` takes
anything :func:`zoo.load` takes instead: the directory ``LAC.train`` saved (a run directory, which ``oar run``,
``oar export``, ``oar serve`` and ``zoo.load`` take as well), another run or export directory, or a zoo name.

Return types, as LAC's: ``run(str)`` gives ``[words, tags]`` (``seg``: ``words``; ``rank``: ``[words, tags,
ranks]``), lists of str (ranks: int); ``run(list)`` gives a list of those, one per text. Where LAC 2.1.2
differs from itself, oar keeps one rule: results always come in input order and the caller's list is left
as it is (LAC removes the empty strings from it and misorders the results of lists with several of them), and
``rank`` on ``""`` gives ``[[], [], []]`` (LAC gives ``[[[], [], []]]``).

``train`` fine-tunes the current model (the official weights, or the weights a ``model_path`` holds) on
``word/tag`` lines with LAC's file format and optimiser (:mod:`nlp.lac.official_train`), writes the run
directory and then runs the new model, as LAC does. ``thread_num`` is accepted for LAC's signature; oar's
threads come from ``OAR_NUM_THREADS``.
"""
import os

from framework.errors import UserError
from nlp.lac.model import BiGRUCRF
from nlp.lac.official import official_model_dir
from nlp.lac.official_task import OfficialLexicalAnalysis, conf_files
from nlp.lac.official_train import evaluate, finetune, read_training_file, save_official_run

from . import api

__all__ = ["LAC", "MODES", "LACError"]

#: LAC's ``mode`` -> the zoo model it runs.
MODES = {"lac": "lac", "seg": "lac_seg", "rank": "lac_rank"}
_SHAPES = {"lac": ("words", "tags"), "seg": ("words",), "rank": ("words", "tags", "rank")}


class LACError(UserError):
    """A call of :class:`LAC` that LAC's interface does not allow (an unknown mode, training a seg model ...)."""


class LAC:
    """LAC 2.1.2's ``LAC`` class on oar (module docstring).

    Args:
        model_path: None (the zoo model of ``mode``), a directory ``LAC.train`` saved, or anything
            :func:`zoo.load` takes.
        mode: ``"lac"`` (words and tags), ``"seg"`` (words) or ``"rank"`` (words, tags and word importance 0-3).
        use_cuda: run on the GPU (CuPy).
    """

    def __init__(self, model_path=None, mode="lac", use_cuda=False):
        if mode not in MODES:
            raise LACError(f"LAC: mode must be one of {', '.join(map(repr, MODES))}, got {mode!r}")
        self.mode = mode
        self.device = "gpu" if use_cuda else "cpu"
        self.model_path = os.fspath(model_path) if model_path else MODES[mode]
        self.task = api.load(self.model_path, device=self.device)

    def run(self, texts):
        """Analyse one text (str) or a list of texts: LAC's result for a str, a list of them for a list.

        A result is ``[words, tags]`` (mode ``lac``), ``words`` (``seg``) or ``[words, tags, ranks]``
        (``rank``): lists with one entry per word.
        """
        single = isinstance(texts, str)
        results = self.task.predict([texts] if single else texts)
        keys = _SHAPES[self.mode]
        shaped = [[result[key] for key in keys] if len(keys) > 1 else result[keys[0]] for result in results]
        return shaped[0] if single else shaped

    def load_customization(self, customization_file, sep=None):
        """Use the user dictionary ``customization_file`` (LAC's format, :mod:`nlp.lac.customization`), replacing
        any earlier one; ``sep`` separates a line's items (default: whitespace)."""
        self.task.load_customization(customization_file, sep)

    def add_word(self, word, sep=None):
        """Add one user-dictionary line (``"春天/SEASON"``, ``"花/n 开/v"``), as LAC's ``add_word``."""
        self.task.add_word(word, sep)

    def train(self, model_save_dir, train_data, test_data=None, iter_num=10, thread_num=10):
        """Fine-tune the current model on LAC's ``word/tag`` file ``train_data`` for ``iter_num`` passes, save it
        as a run directory ``model_save_dir`` and run it from now on (module docstring). With ``test_data``,
        chunk precision, recall and F1 are printed before and after, as LAC prints them."""
        if self.mode != "lac":
            raise LACError(f"LAC.train: only mode 'lac' trains, not {self.mode!r}")
        if int(iter_num) < 1:
            raise LACError(f"LAC.train: iter_num must be >= 1, got {iter_num!r}")
        task = self._trainable_task()
        samples = read_training_file(train_data, task.tables, task.conf_files["label_dict_file"])
        tests = read_training_file(test_data, task.tables, task.conf_files["label_dict_file"]) if test_data else None
        if tests:
            _print_scores(evaluate(task, tests))
        finetune(task, samples, int(iter_num))
        if tests:
            _print_scores(evaluate(task, tests))
        save_official_run(task, os.fspath(model_save_dir), _run_config(task))
        customization = self.task.customization
        self.model_path = os.fspath(model_save_dir)
        self.task = api.load(self.model_path, device=self.device)
        self.task.customization = customization

    def _trainable_task(self):
        """An eager :class:`OfficialLexicalAnalysis` holding a copy of the current model's weights and tables."""
        eager = api.load(self.model_path, static=False)
        if isinstance(eager, OfficialLexicalAnalysis):
            files = dict(eager.conf_files)
        elif eager.card.kind == "official" and eager.card.loader == "official_lac":
            files = conf_files(os.path.join(official_model_dir(), "conf"))
        else:
            raise LACError(f"LAC.train: model {self.model_path!r} does not read LAC's tables; train it with "
                           f"`oar train` instead")
        return OfficialLexicalAnalysis(BiGRUCRF.from_state_dict(eager.model.state_dict()), **files)


def _run_config(task):
    """The ``task`` and ``model`` sections of the run directory of the fine-tuned ``task``."""
    state = task.model.state_dict()
    vocab_size, emb_dim = state["embedding.weight"].shape
    model = {"type": "BiGRUCRF", "vocab_size": int(vocab_size), "num_tags": task.model.num_tags,
             "emb_dim": int(emb_dim), "hidden": int(state["gru.layers.0.fw.weight_hh"].shape[0]),
             "num_layers": sum(1 for name in state if name.endswith("fw.weight_hh"))}
    return {"task": {"type": "OfficialLexicalAnalysis", **task.conf_files}, "model": model}


def _print_scores(scores):
    print("[test] P: %.5f, R: %.5f, F1: %.5f" % scores)
