"""The Task contract between models and the Trainer.

A Task couples preprocessing (raw inputs -> batch), a model, postprocessing
(outputs -> readable dicts) and its metrics. The same object serves training,
evaluation, ``oar infer`` and the zoo: ``predict`` takes either a batch (a dict
of arrays/Tensors, as the Trainer passes) and returns the model outputs, or a
list of raw inputs (as users pass) and returns a list of plain dicts.

**Assets.** Besides its weights, a task may depend on files: a vocabulary it
read or built, a label list, a lexicon, a tokeniser model, class names.
``save_assets(directory)`` writes them into a training run's directory and
returns the config overrides that make a task built from the config read those
copies (``{"task.vocab": "<directory>/vocab.txt"}``), so a run directory holds
everything inference needs (:func:`framework.engine.runner.train`).
"""
import functools
import numbers
import os
import shutil

import numpy

from ..errors import InputError
from ..io.remote import is_url, read_bytes
from ..serialization import atomic_path
from ..tensor import Tensor, no_grad, to_tensor
from .batching import predict_stream

__all__ = ["Task", "RankedPrediction", "check_top_k", "InputTypeError", "to_tensors", "batch_size_of", "copy_asset"]


class InputTypeError(InputError, TypeError):
    """An input of the wrong kind or shape (a number where a text belongs, one text where a pair belongs).

    An :class:`~framework.errors.InputError` (one line for the user), and a TypeError for callers that catch that.
    """


def copy_asset(source, directory, name):
    """Copy the file ``source`` to ``directory/name`` through a temporary file and a rename; returns the new path.

    When ``source`` already is that file (a run trained again into its own directory), it is left as it is.
    """
    destination = os.path.join(directory, name)
    if is_url(source):                                    # a vocabulary or tag set read from a URL
        data = read_bytes(source)
        with atomic_path(destination) as tmp, open(tmp, "wb") as f:
            f.write(data)
        return destination
    if os.path.exists(destination) and os.path.samefile(source, destination):
        return destination
    with atomic_path(destination) as tmp:
        shutil.copyfile(source, tmp)
    return destination


def to_tensors(batch, device=None):
    """Turn every NumPy array of a (possibly nested) batch into a Tensor on ``device``.

    Shapes are unchanged; strings, lists of strings and scalars stay as they are.
    """
    if isinstance(batch, dict):
        return {k: to_tensors(v, device) for k, v in batch.items()}
    if isinstance(batch, (tuple, list)) and batch and isinstance(batch[0], numpy.ndarray):
        return type(batch)(to_tensors(v, device) for v in batch)
    if isinstance(batch, numpy.ndarray) and batch.dtype.kind in "biuf":
        return to_tensor(batch, device=device)
    return batch


def batch_size_of(batch):
    """Number of examples in a batch: the leading size of its first array or Tensor."""
    values = batch.values() if isinstance(batch, dict) else batch
    for value in values:
        if isinstance(value, (Tensor, numpy.ndarray)) and getattr(value, "ndim", 0) > 0:
            return int(value.shape[0])
        if isinstance(value, list):
            return len(value)
    raise ValueError("cannot tell the batch size: the batch holds no array")


class Task:
    """Base class: subclasses set ``self.model`` and implement the methods below.

    - ``loss(batch) -> Tensor`` scalar training loss of a batch of Tensors.
    - ``predict_batch(batch) -> dict`` model outputs for metrics (one row per example).
    - ``metrics() -> list`` fresh metric objects (``framework.engine.metrics``).
    - ``preprocess(inputs) -> batch`` / ``postprocess(outputs) -> list of dict``
      for raw user inputs (used by ``predict_raw`` and the zoo).
    - ``save_assets(directory) -> dict`` the files the task depends on, written
      into a run directory (default: none).

    ``dynamic_axes`` (``{model input name: {axis: symbol}}``, as
    :func:`framework.jit.trace` takes it) names the axes of the model's inputs
    whose size changes from batch to batch, so one traced program serves them
    all; None means axis 0 of every input.
    """

    model = None
    device = None
    dynamic_axes = None
    predict_batch_size = 64     # raw inputs per model call of predict
    max_batch_tokens = None     # most padded positions per model call (None: no bound), with input_length
    input_length = None         # ``input_length(raw input) -> int`` sorts predict's inputs (None: input order)

    def loss(self, batch):
        raise NotImplementedError

    def predict_batch(self, batch):
        raise NotImplementedError

    def predict(self, inputs, batch_size=None):
        """A batch dict -> model outputs (``predict_batch``); any iterable of raw inputs -> a list of plain dicts,
        one per input, in input order (run ``batch_size`` at a time, see :meth:`predict_iter`)."""
        if isinstance(inputs, dict):
            return self.predict_batch(inputs)
        return list(self.predict_iter(inputs, batch_size))

    def predict_iter(self, inputs, batch_size=None, **options):
        """Yield one result dict per raw input of ``inputs`` (any iterable: list, tuple, generator, NumPy array;
        a 2-D array of strings gives one tuple per row, e.g. text pairs), in input order, as batches finish
        (:func:`framework.engine.batching.predict_stream`).

        Inputs are read a window at a time, sorted by :meth:`input_length` inside it and run ``batch_size``
        at a time (None: the task's ``predict_batch_size``) through :meth:`predict_raw` with ``options``, so
        memory depends on the batch, not on the number of inputs. An error about one input names its position.
        """
        if isinstance(inputs, (str, bytes, os.PathLike, dict)) or not hasattr(inputs, "__iter__"):
            raise InputTypeError(f"{type(self).__name__}.predict takes a list of inputs (or any iterable of them), "
                                 f"got {type(inputs).__name__}")
        if isinstance(inputs, numpy.ndarray) and inputs.ndim == 2 and inputs.dtype.kind in "USO":
            inputs = (tuple(row.tolist()) for row in inputs)      # a 2-D array of texts: one tuple (pair) a row
        return predict_stream(functools.partial(self.predict_raw, device=self.device, **options), inputs,
                              self.predict_batch_size if batch_size is None else batch_size,
                              length=self.input_length, max_tokens=self.max_batch_tokens)

    def metrics(self):
        return []

    def save_assets(self, directory):
        """Write the files this task read or built into ``directory`` (it exists); return the config overrides
        that point a task built from the config at them.

        Files: every vocabulary, label list, class-names file, lexicon or tokeniser
        model that the task's predictions depend on besides the model's weights —
        whether the config named it or the task built it (e.g. a vocabulary built
        from a corpus and cached elsewhere). The result maps dotted config keys
        (``"task.vocab"``, ``"task.tokenizer.model"``) to the path of the written
        file, a list of paths (for a key that takes a list), or None (for a key no
        longer needed once the copies are read, e.g. the training file a tag set
        came from). A task built from the config with these overrides predicts the
        same as this one. The base class has no files: ``{}``.
        """
        return {}

    def preprocess(self, inputs):
        raise NotImplementedError(f"{type(self).__name__} does not take raw inputs")

    def postprocess(self, outputs):
        raise NotImplementedError(f"{type(self).__name__} does not format outputs")

    def predict_raw(self, inputs, device=None):
        """One batch of raw inputs (a list) -> a list of plain dicts, one per input."""
        self.model.eval()
        with no_grad():
            outputs = self.predict_batch(to_tensors(self.preprocess(list(inputs)), device))
        return self.postprocess(outputs)


def check_top_k(top_k, who, error=InputError):
    """``top_k`` as an int >= 1, or None; anything else (0, -1, 2.5, "3", True) raises ``error`` naming ``who``."""
    if top_k is None:
        return None
    if isinstance(top_k, bool) or not isinstance(top_k, numbers.Integral) or top_k < 1:
        raise error(f"{who}: top_k must be an integer >= 1 or None, got {top_k!r}")
    return int(top_k)


class RankedPrediction:
    """``predict(inputs, top_k=None)`` for a Task whose results rank classes (mixed in before ``Task``).

    The task sets ``self.top_k`` (its default: None lists every class) and implements
    ``postprocess(outputs, top_k)``. A batch dict gives the model outputs, as ``Task.predict`` does.
    """

    top_k = None

    def predict(self, inputs, top_k=None, batch_size=None):
        """A batch dict -> model outputs; any iterable of raw inputs -> one result dict per input, best first
        (:meth:`Task.predict_iter`).

        ``top_k``: classes listed (per list); None takes the task's default, else an integer >= 1 (more than
        the classes lists them all). Anything else raises :class:`~framework.errors.InputError`.
        """
        if isinstance(inputs, dict):
            return self.predict_batch(inputs)
        return list(self.predict_iter(inputs, batch_size, top_k=check_top_k(top_k, f"{type(self).__name__}.predict")))

    def predict_raw(self, inputs, device=None, top_k=None):
        """One batch of raw inputs (a list) -> a list of result dicts with ``top_k`` classes (None: the task's
        default)."""
        inputs = list(inputs)
        if not inputs:
            return []
        self.model.eval()
        with no_grad():
            outputs = self.predict_batch(to_tensors(self.preprocess(inputs), device))
        return self.postprocess(outputs, top_k)

    def _top_k(self, top_k):
        return self.top_k if top_k is None else check_top_k(top_k, f"{type(self).__name__}.postprocess")
