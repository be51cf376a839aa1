"""``OnnxProgram(path)``: an exported model run in ONNX Runtime, called like the program it came from.

:func:`framework.onnx.export` writes the model and, beside it, ``<path>.json``:
the inputs (name, dtype, shape with size symbols), the opset and the output
structure, the program's tree with ``{"output": name}`` leaves (``{"tuple":
[...]}``, lists, ``{"dict": {...}}``). ``OnnxProgram(path)(**named_arrays)``
checks the inputs' dtypes and ranks, runs the session and rebuilds that
structure, so a caller of a :class:`~framework.jit.Program` can use it as is.
A sidecar or model that cannot be read (truncated, garbage, another layout) and
an error of ONNX Runtime while running are one :class:`OnnxModelError` naming
the file. Only onnxruntime is needed here (not onnx).
"""
import os

import numpy

from .. import backend
from ..checked import read_json
from ..errors import InputError
from ..tensor import Tensor
from ..threadpool import requested_threads
from ..jit.program import build_outputs
from ..tree import TreeFormatError, tree_from_json, tree_leaves, tree_leaves_with_path, tree_map, tree_to_json
from .errors import OnnxModelError, reading_model, require

__all__ = ["OnnxProgram", "name_outputs", "output_leaves", "sidecar_path"]


def sidecar_path(path):
    """The JSON file beside the model at ``path``."""
    return os.fspath(path) + ".json"


def _leaf_name(path):
    if not path:
        return "output"
    head = f"output.{path[0]}" if isinstance(path[0], int) else str(path[0])
    return ".".join([head] + [str(p) for p in path[1:]])


def name_outputs(tree):
    """A program's output tree (:attr:`Program.outputs <framework.jit.Program>`, slots as leaves) in its JSON
    form with ``{"output": name}`` leaves, and ``[(name, slot)]`` in order."""
    leaves = [(_leaf_name(path), slot) for path, slot in tree_leaves_with_path(tree)]
    names = iter(name for name, _ in leaves)
    return tree_to_json(tree_map(lambda slot: next(names), tree), "output"), leaves


def output_leaves(tree, values):
    """``[(name, array)]``: the leaves of ``values`` (a result in the structure of the named ``tree``, the JSON
    form :func:`name_outputs` gives)."""
    return list(zip(tree_leaves(_structure(tree, "the output names")), tree_leaves(values)))


def _structure(tree, where):
    """The tree of output names of the JSON form ``tree``; OnnxModelError when ``tree`` is not one."""
    try:
        return tree_from_json(tree, "output", check_leaf=lambda name: isinstance(name, str))
    except TreeFormatError:
        raise OnnxModelError(f"{where}: the sidecar's outputs hold {tree!r:.80}, not an output structure") from None


def _checked_meta(meta, where):
    """``(inputs, outputs)`` of a sidecar dict, every field checked; OnnxModelError names ``where``."""
    inputs = meta.get("inputs") if isinstance(meta, dict) else None
    good = isinstance(inputs, list) and all(
        isinstance(s, dict) and isinstance(s.get("name"), str) and isinstance(s.get("shape"), list)
        and isinstance(s.get("dtype"), str) for s in inputs)
    if good:
        try:
            for spec in inputs:
                numpy.dtype(spec["dtype"])
        except TypeError:
            good = False
    if not good:
        raise OnnxModelError(f"the sidecar of {where} lists no inputs as [{{name, dtype, shape}}, …]")
    return inputs, meta.get("outputs")


def _threads():
    """ONNX Runtime's intra-op threads: ``OAR_NUM_THREADS``, else ``OMP_NUM_THREADS`` (checked, and clamped to the
    cores with one warning: a larger pool only waits on itself), else 0 (its own choice, one per physical core), so a
    one-thread benchmark or server runs ONNX Runtime on one thread as it does BLAS."""
    return requested_threads(("OAR_NUM_THREADS", "OMP_NUM_THREADS")) or 0


class OnnxProgram:
    """An exported model in an ONNX Runtime session (module docstring).

    Args:
        path: the ``.onnx`` file written by :func:`framework.onnx.export` (its ``<path>.json`` beside it).
        providers: ONNX Runtime execution providers (default: the CPU one).
    """

    def __init__(self, path, providers=None):
        path = os.fspath(path)
        meta = read_json(sidecar_path(path), what="the sidecar of an oar ONNX export")
        self._start(path, meta, providers, path)

    @classmethod
    def from_bytes(cls, model, meta, providers=None):
        """An OnnxProgram of a serialized model and its sidecar dict, nothing read from disk."""
        program = cls.__new__(cls)
        program._start(model, meta, providers, "<bytes>")
        return program

    def _start(self, model, meta, providers, where):
        ort = require("onnxruntime")
        self.path = where
        self.inputs, self.outputs = _checked_meta(meta, where)
        options = ort.SessionOptions()
        options.log_severity_level = 3
        options.intra_op_num_threads = _threads()
        with reading_model(where):
            self.session = ort.InferenceSession(model, options, providers=providers or ["CPUExecutionProvider"])
            self._output_names = [o.name for o in self.session.get_outputs()]
            inputs = {i.name for i in self.session.get_inputs()}
        self._structure = _structure(self.outputs, where)
        missing = sorted({s["name"] for s in self.inputs} - inputs) + \
            sorted(set(tree_leaves(self._structure)) - set(self._output_names))
        if missing:
            raise OnnxModelError(f"the ONNX model {where} has no inputs or outputs named {missing}, which its "
                                 f"sidecar lists")

    def run_flat(self, *args, **kwargs):
        """``{output name: array}`` for inputs by position (traced order) or by name."""
        feed = self._feed(args, kwargs)
        with reading_model(self.path, "run"):
            return dict(zip(self._output_names, self.session.run(self._output_names, feed)))

    def __call__(self, *args, **kwargs):
        """Run the model -> NumPy arrays in the program's output structure."""
        return build_outputs(self._structure, self.run_flat(*args, **kwargs))

    def _feed(self, args, kwargs):
        names = [spec["name"] for spec in self.inputs]
        given = dict(zip(names, args)) | kwargs
        missing, extra = [n for n in names if given.get(n) is None], [n for n in given if n not in names]
        if len(args) > len(names) or missing or extra:
            raise InputError(f"the model takes the inputs {names}; got {len(args)} by position and "
                             f"{sorted(kwargs)} by name")
        feed = {}
        for spec in self.inputs:
            value = given[spec["name"]]
            array = numpy.asarray(backend.to_device(value.data if isinstance(value, Tensor) else value, "cpu"))
            if array.dtype != numpy.dtype(spec["dtype"]) or array.ndim != len(spec["shape"]):
                raise InputError(f"model input {spec['name']!r} is {array.shape} {array.dtype}; the model takes "
                                 f"{tuple(spec['shape'])} {numpy.dtype(spec['dtype'])}")
            feed[spec["name"]] = array
        return feed
