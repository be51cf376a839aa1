"""The Task contract between models and the Trainer.

A Task couples preprocessing (raw inputs -> batch), a model, postprocessing
(outputs -> readable dicts) and its metrics. The same object serves training,
evaluation, ``oar infer`` and the zoo: ``predict`` takes either a batch (a dict
of arrays/Tensors, as the Trainer passes) and returns the model outputs, or a
list of raw inputs (as users pass) and returns a list of plain dicts.
"""
import numpy

from ..tensor import Tensor, no_grad, to_tensor

__all__ = ["Task", "to_tensors", "batch_size_of"]


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
    """

    model = None
    device = None

    def loss(self, batch):
        raise NotImplementedError

    def predict_batch(self, batch):
        raise NotImplementedError

    def predict(self, inputs):
        """A batch dict -> model outputs (``predict_batch``); a list of raw inputs -> list of dicts."""
        if isinstance(inputs, dict):
            return self.predict_batch(inputs)
        if isinstance(inputs, (str, bytes)) or not hasattr(inputs, "__iter__"):
            raise TypeError(f"{type(self).__name__}.predict takes a list of inputs, got {type(inputs).__name__}")
        return self.predict_raw(inputs, self.device)

    def metrics(self):
        return []

    def preprocess(self, inputs):
        raise NotImplementedError(f"{type(self).__name__} does not take raw inputs")

    def postprocess(self, outputs):
        raise NotImplementedError(f"{type(self).__name__} does not format outputs")

    def predict_raw(self, inputs, device=None):
        """Raw inputs (a list) -> a list of plain dicts, one per input."""
        self.model.eval()
        with no_grad():
            outputs = self.predict_batch(to_tensors(self.preprocess(list(inputs)), device))
        return self.postprocess(outputs)
