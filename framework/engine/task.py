"""The Task contract between models and the Trainer.

A Task couples preprocessing (raw inputs -> batch), a model, postprocessing
(outputs -> readable dicts) and its metrics. The Trainer only calls
``loss(batch)``, ``predict(batch)``, ``metrics()`` and ``model``; the zoo calls
``predict_raw(inputs)``.
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
    - ``predict(batch) -> dict`` model outputs for metrics (arrays, one row per example).
    - ``metrics() -> list`` fresh metric objects (``framework.engine.metrics``).
    - ``preprocess(inputs) -> batch`` / ``postprocess(outputs) -> list of dict``
      for raw user inputs (used by ``predict_raw`` and the zoo).
    """

    model = None

    def loss(self, batch):
        raise NotImplementedError

    def predict(self, batch):
        raise NotImplementedError

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
            outputs = self.predict(to_tensors(self.preprocess(list(inputs)), device))
        return self.postprocess(outputs)
