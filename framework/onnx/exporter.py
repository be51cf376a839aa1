"""``export(program_or_layer, path, example_inputs)``: a traced program as an ONNX model, checked against it.

The model is opset 17: its inputs are the program's, named and typed as
traced, each dynamic axis a ``dim_param`` named after the program's size
symbol (``batch``, ``seq``); its outputs are the leaves of the program's
output structure, named by their path (``output`` for a single array,
``scores`` for a dict key, ``output.0`` for a tuple's first entry). The
structure itself is written beside the model as JSON (``<path>.json``, see
:mod:`framework.onnx.runtime`), so :class:`~framework.onnx.runtime.OnnxProgram`
returns what the program returns.

Before anything is written the model passes ``onnx.checker.check_model`` with
``full_check`` and runs in ONNX Runtime on the example inputs; every output
must match the program's: integers exactly, floats within ``tolerance`` in
absolute or in relative terms (the largest difference over the largest
magnitude of the program's output). Otherwise export refuses, naming the
worst output and both errors. The default tolerance is 1e-4, and
:data:`INT8_TOLERANCE` for a program whose activations are on the int8 grid
(``FakeQuantize``): ONNX Runtime runs those as integer kernels, whose rounding
moves a value by a step of the grid where oar's float simulation rounds the
other way, and the steps add up over the layers (3 % of ``tsm_synth_int8``'s
largest logit); a wrong converter is off by far more.
"""
import dataclasses
import json
import os

import numpy

from .. import backend
from ..jit import Program, StaticLayer, trace
from ..jit.trace import input_leaves
from ..nn.layer import Layer
from ..serialization import atomic_write
from ..tensor import Tensor
from .errors import ExportError, require
from .graph import CONVERTERS, OPSET, Graph, value_info
from . import converters, decoding, layers, quantized, sequence  # noqa: F401  (they fill the converter table)
from .runtime import OnnxProgram, name_outputs, output_leaves, sidecar_path

__all__ = ["export", "ExportReport", "to_model", "check_parity", "CONVERTERS"]

TOLERANCE = 1e-4
INT8_TOLERANCE = 0.1
IR_VERSION = 8                    # the oldest IR that carries opset 17, for the widest runtime support


@dataclasses.dataclass
class ExportReport:
    """What :func:`export` wrote: the model path, the program, and per output ``(max abs, max rel)`` error."""
    path: str
    program: Program
    errors: dict


def _program(program_or_layer, example_inputs, dynamic_axes):
    if isinstance(program_or_layer, Program):
        return program_or_layer
    if isinstance(program_or_layer, StaticLayer):
        dynamic_axes = program_or_layer.dynamic_axes if dynamic_axes is None else dynamic_axes
        program_or_layer = program_or_layer.layer
    if not isinstance(program_or_layer, Layer):
        raise ExportError(f"export takes a Program, a Layer or a StaticLayer, got {type(program_or_layer).__name__}")
    if example_inputs is None:
        raise ExportError("exporting a layer needs example_inputs to trace it on")
    return trace(program_or_layer, example_inputs, dynamic_axes)


def _named_inputs(program, example_inputs):
    """``{program input name: host array}`` from a dict (list values give ``name.0`` …), a tuple in the
    program's input order (lists flattened) or one array."""
    if isinstance(example_inputs, dict):
        items, _ = input_leaves([(name, value, False) for name, value in example_inputs.items()])
    else:
        values = example_inputs if isinstance(example_inputs, (list, tuple)) else (example_inputs,)
        flat, _ = input_leaves([(str(i), value, True) for i, value in enumerate(values)])
        items = list(zip((s.name for s in program.inputs), (value for _, value in flat)))
    return {name: numpy.asarray(backend.to_device(v.data if isinstance(v, Tensor) else v, "cpu"))
            for name, v in items}


def _synthetic_inputs(program):
    """Check inputs for a program given without examples: every size symbol 2, floats standard normal, integers 1
    (a valid id and length for any vocabulary and sequence)."""
    rng = numpy.random.default_rng(0)
    inputs = {}
    for spec in program.inputs:
        shape = tuple(2 if isinstance(n, str) else n for n in spec.shape)
        dtype = numpy.dtype(spec.dtype)
        inputs[spec.name] = (rng.standard_normal(shape).astype(dtype) if dtype.kind == "f"
                             else numpy.ones(shape, dtype=dtype))
    return inputs


def to_model(program):
    """The checked ``onnx.ModelProto`` of ``program`` and its output structure (leaves ``{"output": name}``).

    Raises UnsupportedOpError naming the op class and layer of the first op with no ONNX mapping.
    """
    onnx = require("onnx")
    g = Graph(program)
    for node in program.nodes:
        g.convert(node)
    g.scope = ""
    tree, leaves = name_outputs(program.outputs)
    outputs = []
    for name, slot in leaves:
        g.nodes.append(onnx.helper.make_node("Identity", [g.tensor(slot)], [name], name=g.fresh(f"{name}_node")))
        outputs.append((name, g.dtype(slot), [None] * g.rank(slot)))
    inputs = [value_info(spec.name, spec.dtype, spec.shape) for spec in program.inputs]
    graph = onnx.helper.make_graph(g.nodes, "oar_program", inputs, [value_info(*o) for o in outputs],
                                   initializer=g.initializers)
    model = onnx.helper.make_model(graph, opset_imports=[onnx.helper.make_opsetid("", OPSET)], producer_name="oar",
                                   ir_version=IR_VERSION)
    _declare_output_shapes(onnx, model, set(program.symbols))
    try:
        onnx.checker.check_model(model, full_check=True)
    except (onnx.checker.ValidationError, onnx.shape_inference.InferenceError) as err:
        raise ExportError(f"the ONNX model of the program fails the ONNX checker: {err}") from None
    return model, tree


def _declare_output_shapes(onnx, model, symbols):
    """Give each graph output the dims shape inference finds: ints, and the program's own size symbols."""
    inferred = onnx.shape_inference.infer_shapes(model)
    known = {v.name: v for v in list(inferred.graph.value_info) + list(inferred.graph.output)}
    for output in model.graph.output:
        found = known.get(output.name)
        if found is None or not found.type.tensor_type.HasField("shape"):
            continue
        dims = output.type.tensor_type.shape.dim
        for dim, source in zip(dims, found.type.tensor_type.shape.dim):
            if source.HasField("dim_value"):
                dim.dim_value = source.dim_value
            elif source.dim_param in symbols:
                dim.dim_param = source.dim_param


def _errors(expected, actual):
    """``(max abs, max rel)`` between two arrays (rel: over the largest magnitude of ``expected``)."""
    if expected.shape != actual.shape or (expected.dtype.kind in "biu") != (actual.dtype.kind in "biu"):
        return float("inf"), float("inf")
    if expected.dtype.kind in "biu":
        wrong = float(numpy.any(expected != actual)) * float("inf")
        return wrong, wrong
    if not expected.size:
        return 0.0, 0.0
    reference = expected.astype(numpy.float64)
    diff = numpy.abs(actual.astype(numpy.float64) - reference)
    same = (actual == expected) | (numpy.isnan(actual) & numpy.isnan(expected))
    diff = numpy.where(same, 0.0, diff)
    worst = float(diff.max()) if numpy.isfinite(diff).all() else float("inf")
    scale = float(numpy.abs(reference[numpy.isfinite(reference)]).max(initial=0.0))
    return worst, worst / scale if scale else (0.0 if worst == 0 else float("inf"))


def check_parity(program, tree, onnx_program, inputs, tolerance=TOLERANCE):
    """``{output name: (max abs, max rel)}`` of the ONNX run (``onnx_program``; ``tree`` the named output
    structure) against the program's on ``inputs``; raises ExportError naming the worst output when one
    exceeds ``tolerance`` in both terms."""
    expected = dict(output_leaves(tree, program(**inputs)))
    actual = onnx_program.run_flat(**inputs)
    errors = {name: _errors(numpy.asarray(backend.to_device(value, "cpu")), actual[name])
              for name, value in expected.items()}
    failing = {name: e for name, e in errors.items() if min(e) > tolerance}
    if failing:
        name, (worst_abs, worst_rel) = max(failing.items(), key=lambda item: min(item[1]))
        shapes = f"{numpy.shape(expected[name])} vs {numpy.shape(actual[name])}"
        raise ExportError(f"the ONNX model does not match the program on the example inputs: output {name!r} "
                          f"differs by {worst_abs:.3g} (absolute) and {worst_rel:.3g} (relative), beyond "
                          f"{tolerance:g}; shapes {shapes}")
    return errors


def export(program_or_layer, path, example_inputs=None, dynamic_axes=None, tolerance=None):
    """Write ``program_or_layer`` as an ONNX model at ``path`` (module docstring), after checking it.

    Args:
        program_or_layer: a :class:`~framework.jit.Program`, or a Layer / StaticLayer traced on ``example_inputs``.
        path: the ``.onnx`` file to write; its output structure goes to ``<path>.json``.
        example_inputs: the inputs to trace on and check with (a dict by name, a tuple in input order or one
            array). For a Program they may be omitted: the check then runs on synthetic inputs (sizes 2,
            floats normal, integers 1).
        dynamic_axes: as :func:`framework.jit.trace` takes them, when tracing a layer.
        tolerance: the largest accepted difference from the program, absolute or relative (default
            :data:`TOLERANCE`, :data:`INT8_TOLERANCE` for int8 activations).

    Returns:
        an :class:`ExportReport`.
    Raises:
        UnsupportedOpError naming the op class and layer of an op with no ONNX mapping; ExportError when the
        model fails the checker or differs from the program; MissingExportDependency without onnx/onnxruntime.
    """
    require("onnx", "onnxruntime")
    program = _program(program_or_layer, example_inputs, dynamic_axes)
    inputs = _synthetic_inputs(program) if example_inputs is None else _named_inputs(program, example_inputs)
    model, tree = to_model(program)
    data = model.SerializeToString()
    meta = {"inputs": [{"name": s.name, "dtype": numpy.dtype(s.dtype).str, "shape": list(s.shape)}
                       for s in program.inputs], "outputs": tree, "opset": OPSET}
    if tolerance is None:
        tolerance = INT8_TOLERANCE if quantized.has_int8_activations(program) else TOLERANCE
    errors = check_parity(program, tree, OnnxProgram.from_bytes(data, meta), inputs, tolerance)
    path = os.fspath(path)
    with atomic_write(path, "wb") as f:
        f.write(data)
    with atomic_write(sidecar_path(path)) as f:
        json.dump(meta, f, indent=1)
    return ExportReport(path, program, errors)
