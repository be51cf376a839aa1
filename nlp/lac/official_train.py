"""Fine-tuning an official LAC model on ``word/tag`` lines, as LAC 2.1.2's ``LAC.train`` does, into a run directory.

**The file** is LAC's training format, read by LAC's own rules (``LAC/reader.py``, ``Dataset.parse_tag`` and
``file_reader``): one sentence a line, items separated by whitespace, each ``word/tag`` split at its last
``/``; a blank line is skipped. The words are joined and the text is cut and turned into ids exactly as the
model reads raw text (coarse segmentation, then a word id or one id per character, :mod:`nlp.lac.preprocess`);
an id's label is the tag of its first character (``tag-B`` for a word's first character, ``tag-I`` for the
others), and a label that ``tag.dic`` does not name is trained as ``O``, as in LAC. A line with an item that
has no ``/``, an empty word or an empty tag is skipped with a warning naming the file and line (LAC logs it
and trains on an empty sequence).

**The training** is LAC's (``LAC/nets.py``, ``do_train``, settings of the official ``args.ini``): Adam at
1e-3 (LAC's embedding and CRF learning-rate multipliers are both 1.0), L2 decay 1e-4 on the input
projections, the recurrent weights and the emission weights (added to their gradients), the mean CRF
negative log-likelihood of batches of 256 lines, the file shuffled before each pass. A batch's gradient is
summed over pieces of lines of similar lengths (one step per batch still), so padding costs next to nothing,
as with Paddle's unpadded sequences. Unlike LAC, no padding
lines are added to the last batch (LAC adds one-id ``OOV``/``O`` lines so that its data-parallel devices get
equal shares) and the lines are shuffled with a fixed seed.

**With a test file**, chunk precision, recall and F1 over the ids (Paddle's ``chunk_eval``, IOB, ``O``
outside every chunk) are printed before and after training, in LAC's words (``[test] P: …, R: …, F1: …``).

**The result** (:func:`save_official_run`) is a run directory: ``config.yaml`` naming an
:class:`~nlp.lac.official_task.OfficialLexicalAnalysis` task and its ``BiGRUCRF`` model, the four tables
beside it, ``assets.json``, ``paths.json`` and the weights as ``last.npz``.
"""
import math
import os
import warnings

import numpy

from framework import no_grad, random as fw_random
from framework.engine.batching import length_batches
from framework.engine.checkpoint import save_checkpoint
from framework.engine.run_dir import save_run
from framework.engine.task import to_tensors
from framework.errors import InputError
from framework.nn import functional as F
from framework.optimizer import Adam
from framework.progress import progress_bar

from .tables import load_kv_dict, read_dict_lines
from .task import TaggingCollator

__all__ = ["TrainingFileError", "TrainingFileWarning", "read_training_file", "finetune", "chunk_scores",
           "evaluate", "save_official_run", "BATCH_SIZE", "LEARNING_RATE", "L2_DECAY"]

BATCH_SIZE = 256               # LAC's args.ini: batch_size
LEARNING_RATE = 1e-3           # base_learning_rate
L2_DECAY = 1e-4                # the L2DecayRegularizer of every fc and gru weight in LAC/nets.py
DECAYED = ("input_proj.weight", "weight_hh", "emission.weight")
MAX_TOKENS = 4096              # padded ids per forward pass inside one batch


class TrainingFileError(InputError):
    """A training or test file holds no usable line."""


class TrainingFileWarning(UserWarning):
    """A line of a training or test file was skipped (LAC's "Data type error")."""


def read_training_file(path, tables, label_dict_file):
    """The samples of LAC's ``word/tag`` file ``path`` (module docstring): a list of
    ``{"tokens": (T,) int64 ids, "labels": (T,) int64 tag ids}``, one per usable line, in file order.

    Args:
        path: the UTF-8 file.
        tables: the model's :class:`~nlp.lac.official.OfficialTables` (its preprocessor cuts and encodes).
        label_dict_file: LAC's ``tag.dic``; every name it lists (``nr-B`` as well as ``PER-B``) maps to its id.
    """
    label_ids = load_kv_dict(label_dict_file, reverse=True, value_type=int)
    outside = label_ids["O"]
    preprocessor, samples = tables.preprocessor(), []
    for number, line in read_dict_lines(path):
        words, char_labels = [], []
        for item in line.split():
            cut = item.rfind("/")
            word, tag = item[:cut], item[cut + 1:]
            if cut < 0 or not word or not tag:
                warnings.warn(f"{path}:{number}: item {item!r} is not word/tag; line skipped", TrainingFileWarning)
                break
            words.append(word)
            char_labels += [tag + "-B"] + [tag + "-I"] * (len(word) - 1)
        else:
            if not words:
                continue
            ids, lengths = preprocessor.encode("".join(words))
            firsts = numpy.cumsum(lengths) - lengths
            labels = [label_ids.get(char_labels[first], outside) for first in firsts.tolist()]
            samples.append({"tokens": numpy.array(ids, dtype=numpy.int64),
                            "labels": numpy.array(labels, dtype=numpy.int64)})
    if not samples:
        raise TrainingFileError(f"{path}: no word/tag line to read")
    return samples


def _batches(samples, batch_size, rng):
    """The samples shuffled by ``rng`` and cut into consecutive batches of ``batch_size`` (the last may be
    shorter): a list of lists of samples."""
    order = rng.permutation(len(samples))
    return [[samples[i] for i in order[start:start + batch_size]] for start in range(0, len(order), batch_size)]


def _pieces(batch, max_tokens):
    """One batch (a list of samples) as collated pieces of similar lengths, at most ``max_tokens`` padded ids
    each (:func:`~framework.engine.batching.length_batches`): ``tokens``/``labels`` (n, T) int64 and
    ``tokens_lengths`` (n,), so that a batch costs its ids, not its size times its longest line."""
    collate = TaggingCollator()
    groups = length_batches([len(sample["tokens"]) for sample in batch], len(batch), max_tokens)
    return [collate([batch[i] for i in group]) for group in groups]


def finetune(task, samples, epochs, batch_size=BATCH_SIZE, learning_rate=LEARNING_RATE, l2_decay=L2_DECAY, seed=0,
             max_tokens=MAX_TOKENS, progress=True):
    """Train ``task``'s model in place on ``samples`` (:func:`read_training_file`) for ``epochs`` passes, with
    LAC's optimiser (module docstring); each batch's gradient is summed over pieces of at most ``max_tokens``
    padded ids. Returns the mean loss of each pass, a list of float."""
    model = task.model
    named = list(model.named_parameters())
    decayed = [p for name, p in named if name.endswith(DECAYED)]
    rest = [p for name, p in named if not name.endswith(DECAYED)]
    optimizer = Adam(learning_rate=learning_rate, parameters=[
        {"params": decayed, "weight_decay": l2_decay}, {"params": rest}])
    rng = numpy.random.default_rng(seed)
    fw_random.seed(seed)
    model.train()
    losses = []
    steps = progress_bar(total=epochs * math.ceil(len(samples) / batch_size), desc="LAC.train", unit="batch",
                         enabled=progress)
    with steps:
        for _ in range(epochs):
            total = 0.0
            batches = _batches(samples, batch_size, rng)
            for batch in batches:
                optimizer.clear_grad()
                for piece in _pieces(batch, max_tokens):          # the batch's mean loss, piece by piece
                    share = len(piece["tokens_lengths"]) / len(batch)
                    loss = task.loss(to_tensors(piece)) * share
                    loss.backward()
                    total += float(loss.numpy())
                optimizer.step()
                steps.update(1)
            losses.append(total / len(batches))
    model.eval()
    return losses


def _chunks(tags, outside):
    """The set of (begin, end, type) chunks of one IOB id sequence (tag id = 2 * type + (0 for B, 1 for I);
    ``outside``: the type of ``O``), by Paddle's ``chunk_eval`` rules."""
    chunks, begin, prev_type = set(), None, outside
    for position, tag in enumerate(list(tags) + [2 * outside]):
        kind, inside = divmod(int(tag), 2)
        ends = prev_type != outside and (kind == outside or kind != prev_type or not inside)
        if ends:
            chunks.add((begin, position, prev_type))
        if kind != outside and (prev_type == outside or kind != prev_type or not inside):
            begin = position
        prev_type = kind if kind != outside else outside
    return chunks


def chunk_scores(paths, golds, num_tags):
    """(precision, recall, F1) of predicted against gold chunks (Paddle's ``chunk_eval``, IOB) over lists of
    int id sequences; ``num_tags`` K (the last id is ``O``)."""
    outside = math.ceil((num_tags - 1) / 2)
    found = wanted = right = 0
    for path, gold in zip(paths, golds):
        predicted, expected = _chunks(path, outside), _chunks(gold, outside)
        found, wanted, right = found + len(predicted), wanted + len(expected), right + len(predicted & expected)
    precision, recall = right / max(found, 1), right / max(wanted, 1)
    return precision, recall, 2 * precision * recall / (precision + recall) if precision + recall else 0.0


def evaluate(task, samples, max_tokens=MAX_TOKENS):
    """(precision, recall, F1) of ``task``'s Viterbi paths on ``samples`` (:func:`chunk_scores`)."""
    model, paths, golds = task.model, [], []
    model.eval()
    with no_grad():
        for piece in _pieces(samples, max_tokens):
            tensors = to_tensors(piece)
            lengths = piece["tokens_lengths"].tolist()
            _, decoded = F.viterbi_decode(model(tensors["tokens"], tensors["tokens_lengths"]),
                                          model.crf.transition, tensors["tokens_lengths"])
            decoded = decoded.numpy()
            paths += [decoded[row, :n].tolist() for row, n in enumerate(lengths)]
            golds += [piece["labels"][row, :n].tolist() for row, n in enumerate(lengths)]
    return chunk_scores(paths, golds, model.num_tags)


def save_official_run(task, directory, config):
    """Write ``task`` (an :class:`~nlp.lac.official_task.OfficialLexicalAnalysis`) into the run directory
    ``directory``: ``config`` (its ``task`` and ``model`` sections) with the tables copied beside it, and the
    weights as ``last.npz``. Returns ``directory``."""
    run_cfg, assets = save_run(config, task, directory)
    save_checkpoint(os.path.join(directory, "last.npz"), task.model, config=run_cfg, assets=assets)
    return directory
