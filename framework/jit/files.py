"""``save(program, path)`` / ``load(path)``: a program as a directory, without its Python code and without pickle.

The directory holds:

- ``program.json``: ``{"format": "oar.program", "version": 1, "inputs":
  [{"name", "dtype", "shape"}], "num_slots", "values": [{"slot", "name",
  "key", "shape", "dtype"}], "nodes": [{"op", "inputs", "outputs", "attrs",
  "scope", "multi"}], "outputs", "weights_sha256", "slot_specs": [{"slot",
  "shape", "dtype"}]}`` (``slot_specs``: every slot's trace-time shape, which
  the graph passes, ONNX export and FLOP counting read). ``op`` names a
  :class:`framework.Function` subclass of the framework by module and class
  (``framework.ops.conv.ConvNd``); ``attrs`` are templates in the JSON form of
  :func:`framework.jit.template.to_json`; a shape entry is an int or a size
  symbol's name.
- ``weights.npz``: the values (parameters and constants), written with
  :func:`framework.serialization.save` and read with ``allow_pickle=False``.

``load`` refuses, with one line naming the file and what is wrong: JSON that
does not parse or does not have this layout, an op that is not one of the
framework's, an attribute its op does not declare or of the wrong kind, range
or size (:mod:`framework.jit.attributes`), a slot read before it is written, a weights file whose sha256 is
not the one recorded (it was changed after saving) or whose arrays miss, or
differ in shape or dtype from, the ones listed.
"""
import json
import os

import numpy

from .. import backend
from ..errors import MissingFileError, UserError
from ..fetch import sha256_of
from ..serialization import SerializationError, atomic_write, load as load_arrays, save as save_arrays
from ..tensor import Function
from ..tree import TreeFormatError, tree_from_json, tree_to_json
from .attributes import MAX_RANK, MAX_SIZE, check_attributes
from .program import InputSpec, Node, Program
from .template import TemplateError, from_json, numeric_dtype, ref_slots, to_json

__all__ = ["save", "load", "ProgramFileError", "GRAPH_FILE", "WEIGHTS_FILE"]

FORMAT = "oar.program"
VERSION = 1
GRAPH_FILE = "program.json"
WEIGHTS_FILE = "weights.npz"


class ProgramFileError(UserError, ValueError):
    """A program directory that cannot be read back as it was written; the message names the file."""


def _op_name(cls):
    return f"{cls.__module__}.{cls.__qualname__}"


def _framework_ops():
    """``{op name: class}`` of every Function subclass defined in the framework (the only ops a file may name)."""
    found, stack = {}, list(Function.__subclasses__())
    while stack:
        cls = stack.pop()
        stack.extend(cls.__subclasses__())
        if cls.__module__.split(".")[0] == "framework":
            found[_op_name(cls)] = cls
    return found


def save(program, path):
    """Write ``program`` into the directory ``path`` (created if needed): ``program.json`` and ``weights.npz``.

    A value that a file cannot describe (an attribute of an unknown type) raises ProgramFileError naming the op.
    """
    known = _framework_ops()
    nodes = []
    for index, node in enumerate(program.nodes):
        name = _op_name(node.cls)
        if known.get(name) is not node.cls:
            raise ProgramFileError(f"op {index} ({node.cls.__name__}) is not a framework op; a program file can "
                                   f"only name ops of the framework")
        try:
            attrs = to_json(node.attrs, f"op {index} ({node.cls.__name__}) attribute")
        except TemplateError as err:
            raise ProgramFileError(str(err)) from None
        nodes.append({"op": name, "inputs": list(node.inputs), "outputs": list(node.outputs), "attrs": attrs,
                      "scope": node.scope, "multi": node.multi})
    arrays = {f"v{slot}": backend.to_device(array, "cpu") for slot, array in sorted(program.values.items())}
    os.makedirs(path, exist_ok=True)
    weights = os.path.join(path, WEIGHTS_FILE)
    save_arrays(arrays, weights)
    graph = {
        "format": FORMAT, "version": VERSION,
        "inputs": [{"name": s.name, "dtype": s.dtype.str, "shape": list(s.shape)} for s in program.inputs],
        "num_slots": program.num_slots,
        "values": [{"slot": slot, "name": program.value_names.get(slot, ""), "key": key,
                    "shape": list(array.shape), "dtype": array.dtype.str}
                   for (key, array), slot in zip(arrays.items(), sorted(program.values))],
        "nodes": nodes, "outputs": tree_to_json(program.outputs, "slot"), "weights_sha256": sha256_of(weights),
        "slot_specs": [{"slot": slot, "shape": [int(n) for n in shape], "dtype": numpy.dtype(dtype).str}
                       for slot, (shape, dtype) in sorted(program.slot_specs.items())],
    }
    with atomic_write(os.path.join(path, GRAPH_FILE)) as f:
        json.dump(graph, f, indent=1)
        f.write("\n")
    return path


def _fail(path, message):
    raise ProgramFileError(f"{path}: {message}")


def _field(record, key, kind, where, path):
    value = record.get(key) if isinstance(record, dict) else None
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        _fail(path, f"{where} needs {key!r} as {getattr(kind, '__name__', kind)}, got {value!r}")
    return value


def _read_graph(path):
    graph_path = os.path.join(path, GRAPH_FILE)
    if not os.path.isfile(graph_path):
        raise MissingFileError(f"{path} is not a saved program: it has no {GRAPH_FILE}")
    try:
        with open(graph_path, encoding="utf-8") as f:
            graph = json.load(f)
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as err:    # deep nesting recurses
        _fail(graph_path, f"not valid JSON ({err})")
    if not isinstance(graph, dict) or graph.get("format") != FORMAT:
        _fail(graph_path, f"not an oar program file (format {graph.get('format') if isinstance(graph, dict) else None!r})")
    if graph.get("version") != VERSION:
        _fail(graph_path, f"format version {graph.get('version')!r}; this oar reads version {VERSION}")
    return graph_path, graph


def _dtype(text, where, path):
    try:
        return numeric_dtype(text)
    except TemplateError as err:
        _fail(path, f"{where}: {err}")


def _read_values(path, graph_path, graph, num_slots):
    weights = os.path.join(path, WEIGHTS_FILE)
    if not os.path.isfile(weights):
        raise MissingFileError(f"{path} is not a whole saved program: it has no {WEIGHTS_FILE}")
    expected = graph.get("weights_sha256")
    actual = sha256_of(weights)
    if actual != expected:
        _fail(weights, f"sha256 {actual}, but {GRAPH_FILE} records {expected}: the file was changed after saving")
    try:
        arrays = load_arrays(weights)
    except SerializationError as err:
        _fail(weights, str(err))
    values, names = {}, {}
    for entry in _field(graph, "values", list, "the program", graph_path):
        slot = _field(entry, "slot", int, "a value", graph_path)
        key = _field(entry, "key", str, f"value {slot}", graph_path)
        if not 0 <= slot < num_slots or key not in arrays:
            _fail(weights, f"value {slot} ({key!r}) is missing or outside the program's slots")
        array = arrays[key]
        shape, dtype = entry.get("shape"), _dtype(entry.get("dtype"), f"value {key}", graph_path)
        if list(array.shape) != shape or array.dtype != dtype:
            _fail(weights, f"array {key!r} is {array.shape} {array.dtype}; {GRAPH_FILE} lists {shape} {dtype}")
        values[slot] = array
        names[slot] = str(entry.get("name", ""))
    return values, names


def _read_inputs(graph, graph_path):
    specs = []
    for index, entry in enumerate(_field(graph, "inputs", list, "the program", graph_path)):
        name = _field(entry, "name", str, f"input {index}", graph_path)
        shape = _field(entry, "shape", list, f"input {name!r}", graph_path)
        if len(shape) > MAX_RANK or not all(isinstance(n, str) or (isinstance(n, int) and not isinstance(n, bool)
                                                                   and 0 <= n <= MAX_SIZE) for n in shape):
            _fail(graph_path, f"input {name!r}: a shape holds up to {MAX_RANK} sizes (int in [0, {MAX_SIZE}]) or "
                              f"symbol names, got {shape}")
        specs.append(InputSpec(name, _dtype(entry.get("dtype"), f"input {name!r}", graph_path), tuple(shape)))
    return specs


def _read_nodes(graph, graph_path, num_slots, written, symbols):
    ops = _framework_ops()
    nodes = []
    for index, entry in enumerate(_field(graph, "nodes", list, "the program", graph_path)):
        name = _field(entry, "op", str, f"op {index}", graph_path)
        if name not in ops:
            _fail(graph_path, f"op {index} names {name!r}, which is not an op of the framework")
        inputs = _field(entry, "inputs", list, f"op {index}", graph_path)
        outputs = _field(entry, "outputs", list, f"op {index}", graph_path)
        try:
            attrs = from_json(entry.get("attrs"), num_slots)
            if not isinstance(attrs, dict):
                raise TemplateError("attributes must be an object")
            check_attributes(name, attrs, symbols)
        except (TemplateError, RecursionError) as err:     # RecursionError: attributes nested without end
            _fail(graph_path, f"op {index} ({name}): {err}")
        reads = list(inputs) + list(ref_slots(attrs))
        unread = [s for s in reads if not isinstance(s, int) or s not in written]
        if unread or not outputs or not all(isinstance(s, int) and 0 <= s < num_slots and s not in written
                                            for s in outputs):
            _fail(graph_path, f"op {index} ({name}) reads slots {unread} before any op writes them or writes "
                              f"slots {outputs} that are taken or outside 0..{num_slots - 1}")
        written.update(outputs)
        nodes.append(Node(ops[name], tuple(inputs), attrs, tuple(outputs), str(entry.get("scope", "")),
                          bool(entry.get("multi", False))))
    return nodes


def _read_outputs(graph, written, graph_path):
    """The output structure (a tree of slots the program writes) of the file's JSON form."""
    try:
        return tree_from_json(graph.get("outputs"), "slot", check_leaf=lambda slot: isinstance(slot, int)
                              and not isinstance(slot, bool) and slot in written)
    except TreeFormatError as err:
        _fail(graph_path, f"the outputs name {err}, which is not a slot the program writes")


def _read_slot_specs(graph, graph_path, num_slots):
    """``{slot: (shape, dtype)}``: the trace-time shapes the graph passes, ONNX export and FLOP counting read
    (empty for a file written without them)."""
    entries, specs = graph.get("slot_specs", []), {}
    if not isinstance(entries, list):
        _fail(graph_path, f"slot_specs must be a list, got {type(entries).__name__}")
    for entry in entries:
        slot = _field(entry, "slot", int, "a slot spec", graph_path)
        shape = _field(entry, "shape", list, f"slot spec {slot}", graph_path)
        if not 0 <= slot < num_slots or not all(isinstance(n, int) and not isinstance(n, bool) and n >= 0
                                                for n in shape):
            _fail(graph_path, f"slot spec {slot}: a slot of 0..{num_slots - 1} with sizes (int >= 0), got {shape}")
        specs[slot] = (tuple(shape), _dtype(entry.get("dtype"), f"slot spec {slot}", graph_path))
    return specs


def load(path, device="cpu"):
    """The :class:`~framework.jit.Program` saved in the directory ``path``, its values on ``device``.

    Needs no model class and no config; refuses a malformed or altered directory with ProgramFileError.
    """
    graph_path, graph = _read_graph(path)
    num_slots = _field(graph, "num_slots", int, "the program", graph_path)
    inputs = _read_inputs(graph, graph_path)
    values, names = _read_values(path, graph_path, graph, num_slots)
    written = set(range(len(inputs))) | set(values)
    symbols = {n for spec in inputs for n in spec.shape if isinstance(n, str)}
    nodes = _read_nodes(graph, graph_path, num_slots, written, symbols)
    outputs = _read_outputs(graph, written, graph_path)
    program = Program(inputs, nodes, values, outputs, num_slots, value_names=names,
                      slot_specs=_read_slot_specs(graph, graph_path, num_slots))
    return program.to(device) if device and device != "cpu" else program
