"""A task whose network runs on another runtime: a traced program or an ONNX Runtime session in the place of
the model, the task's own pre- and post-processing around it (how ``oar reproduce slim`` scores and times
the oar static path and ONNX Runtime on the same batches)."""
from framework.tensor import Tensor

__all__ = ["RuntimeModel", "on_runtime"]


def _wrap(tree):
    if isinstance(tree, (tuple, list)):
        return type(tree)(_wrap(t) for t in tree)
    if isinstance(tree, dict):
        return {k: _wrap(v) for k, v in tree.items()}
    return Tensor(tree)


class RuntimeModel:
    """Called like the model with Tensors; runs ``call`` (a Program or OnnxProgram) on their arrays and
    returns Tensors. ``eval()``/``train()`` do nothing: the runtime only infers."""

    def __init__(self, call):
        self.call = call

    def __call__(self, *args):
        return _wrap(self.call(*[a.data if isinstance(a, Tensor) else a for a in args]))

    def eval(self):
        return self

    def train(self, mode=True):
        return self


class on_runtime:
    """Context: ``task.model`` replaced by :class:`RuntimeModel` of ``call`` inside, restored after."""

    def __init__(self, task, call):
        self.task, self.call = task, call

    def __enter__(self):
        self.model, self.task.model = self.task.model, RuntimeModel(self.call)
        return self.task

    def __exit__(self, *exc):
        self.task.model = self.model
