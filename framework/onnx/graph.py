"""The ONNX graph a program becomes: one tensor name per slot, constants, and shape arithmetic.

:class:`Graph` is what every converter writes into. A program slot is a graph
tensor named after the input, the value (an initializer, added on first use)
or the node that makes it. :meth:`Graph.size` turns a
:class:`~framework.jit.template.SizeExpr` into ONNX arithmetic on the inputs'
shapes (``Shape`` of the axis that carries each size symbol, then ``Mul``,
``Add``, ``Div``), so a size-following attribute serves every call size.

:data:`CONVERTERS` maps an op class to its converter, registered with
:func:`converts` (an :class:`~framework.registry.OpTable`: a second registration
of a class is an error); the ops deliberately left out are
:data:`~framework.onnx.unsupported.NOT_EXPORTED`, each with its reason. A converter is ``fn(graph, node, inputs) -> name or tuple of
names``: ``node`` the :class:`~framework.jit.Node`, ``inputs`` the tensor names
of its input slots; it reads the node's attribute template and returns the
names of the node's outputs.
"""
import math

import numpy
from onnx import helper, numpy_helper

from .. import backend
from ..jit.template import Ref, Size
from ..registry import OpTable
from .errors import ExportError, UnsupportedOpError
from .unsupported import NOT_EXPORTED

__all__ = ["Graph", "CONVERTERS", "converts", "onnx_dtype", "value_info", "OPSET", "INT64_MIN", "INT64_MAX"]

OPSET = 17
INT64_MIN, INT64_MAX = -2 ** 63, 2 ** 63 - 1
CONVERTERS = OpTable("ONNX converters")


def converts(*classes):
    """Register the decorated function as the converter of each op class in ``classes``; a class that already
    has one is a RegistryError (no second registration silently wins)."""
    return CONVERTERS.register(*classes)


def onnx_dtype(dtype):
    """The ``TensorProto`` element type of a NumPy dtype."""
    return helper.np_dtype_to_tensor_dtype(numpy.dtype(dtype))


class Graph:
    """The nodes and initializers of the ONNX graph of ``program`` (module docstring)."""

    def __init__(self, program):
        self.program = program
        self.nodes, self.initializers = [], []
        self.scope = ""
        self._names = {slot: spec.name for slot, spec in enumerate(program.inputs)}
        self._arrays = {}                        # initializer name -> its array
        self._constants = {}                     # (dtype, shape, bytes) -> name, for small constants
        self._sizes = {}                         # SizeExpr -> name
        self._dims = {}                          # symbol -> name
        self._taken = set(self._names.values())
        self._symbols = {}                       # symbol -> (input name, axis)
        for spec in program.inputs:
            for axis, size in enumerate(spec.shape):
                if isinstance(size, str):
                    self._symbols.setdefault(size, (spec.name, axis))

    # ---- names ------------------------------------------------------------------------------------------------
    def fresh(self, hint):
        """A tensor name not used yet, built from ``hint``."""
        base = "".join(c if c.isalnum() or c in "._/" else "_" for c in hint) or "t"
        name, count = base, 0
        while name in self._taken:
            count += 1
            name = f"{base}_{count}"
        self._taken.add(name)
        return name

    def tensor(self, slot):
        """The tensor name of ``slot``; a program value becomes an initializer the first time it is asked for."""
        name = self._names.get(slot)
        if name is None:
            if not self.program.is_value(slot):
                raise ExportError(f"slot {slot} is read before any op writes it (a malformed program)")
            array = numpy.asarray(backend.to_device(self.program.value(slot), "cpu"))
            name = self._initializer(array, self.program.value_name(slot, f"value_{slot}"))
            self._names[slot] = name
        return name

    def bind(self, slot, name):
        """Make ``name`` the tensor of ``slot`` (a node's output)."""
        self._names[slot] = name

    def ref(self, value):
        """The tensor name of a :class:`~framework.jit.template.Ref` attribute, or None for None."""
        if value is None:
            return None
        if not isinstance(value, Ref):
            raise ExportError(f"expected an array attribute (a reference to a program value), got {value!r}")
        return self.tensor(value.slot)

    def array(self, name):
        """The array of the initializer ``name``, or None when ``name`` is computed by the graph."""
        return self._arrays.get(name)

    def constant(self, value, what):
        """The array a converter needs at export time: ``value`` a tensor name or a :class:`Ref`; raises
        UnsupportedOpError naming ``what`` when the graph computes it."""
        array = self.array(self.ref(value) if isinstance(value, Ref) else value)
        if array is None:
            raise UnsupportedOpError(f"the {what} must be a program value (a parameter or constant), not computed "
                                     f"by the graph")
        return array

    def dtype(self, slot):
        """The NumPy dtype of ``slot`` (as traced)."""
        if slot < len(self.program.inputs):
            return numpy.dtype(self.program.inputs[slot].dtype)
        return self.program.spec(slot).dtype

    def rank(self, slot):
        """The number of axes of ``slot`` (as traced)."""
        if slot < len(self.program.inputs):
            return len(self.program.inputs[slot].shape)
        return len(self.program.spec(slot).shape)

    # ---- constants and nodes ----------------------------------------------------------------------------------
    def _initializer(self, array, hint):
        name = self.fresh(hint)
        self.initializers.append(numpy_helper.from_array(numpy.ascontiguousarray(array), name))
        self._arrays[name] = array
        return name

    def const(self, array, dtype=None, hint="const"):
        """An initializer holding ``array`` (as ``dtype`` when given); small constants are shared."""
        array = numpy.asarray(array, dtype=dtype)
        if array.size > 64:
            return self._initializer(array, hint)
        key = (array.dtype.str, array.shape, array.tobytes())
        if key not in self._constants:
            self._constants[key] = self._initializer(array, hint)
        return self._constants[key]

    def ints(self, values):
        """A 1-D int64 constant."""
        return self.const(numpy.asarray(list(values), dtype=numpy.int64).reshape(-1), hint="ints")

    def op(self, op_type, inputs, outputs=1, **attributes):
        """Append an ``op_type`` node reading ``inputs`` (names; "" for an omitted optional input).

        Returns the output name, or a list of ``outputs`` names when ``outputs`` > 1.
        """
        hint = f"{self.scope}/{op_type}" if self.scope else op_type
        names = [self.fresh(hint) for _ in range(outputs)]
        attributes = {k: v for k, v in attributes.items() if v is not None}
        self.nodes.append(helper.make_node(op_type, list(inputs), names, name=self.fresh(f"{hint}_node"),
                                           **attributes))
        return names[0] if outputs == 1 else names

    def scalar_like(self, node, value):
        """A 0-D constant ``value`` of the dtype of ``node``'s first input."""
        return self.const(numpy.asarray(value, dtype=self.dtype(node.inputs[0])))

    def reduce(self, op_type, name, axes, keepdim):
        """An opset-17 reduction over ``axes`` (ReduceSum takes them as an input, the others as an attribute)."""
        if op_type == "ReduceSum":
            return self.op(op_type, [name, self.ints(axes)], keepdims=int(keepdim))
        return self.op(op_type, [name], axes=[int(a) for a in axes], keepdims=int(keepdim))

    def cast(self, name, dtype):
        """``name`` cast to the NumPy ``dtype``."""
        return self.op("Cast", [name], to=onnx_dtype(dtype))

    def unsqueeze(self, name, axes):
        """``name`` with size-1 axes inserted at ``axes``."""
        return self.op("Unsqueeze", [name, self.ints(axes)])

    def squeeze(self, name, axes):
        """``name`` without the size-1 ``axes``."""
        return self.op("Squeeze", [name, self.ints(axes)])

    def slice(self, name, starts, ends, axes, steps=None):
        """``name[starts:ends:steps]`` along ``axes`` (each bound an int or a :class:`Size`)."""
        inputs = [name, self.shape(starts), self.shape(ends), self.ints(axes)]
        return self.op("Slice", inputs + ([self.ints(steps)] if steps is not None else []))

    # ---- sizes ------------------------------------------------------------------------------------------------
    def dim(self, name, axis):
        """The size of ``axis`` of tensor ``name`` as a 1-D int64 tensor of one element."""
        return self.op("Shape", [name], start=axis, end=axis + 1)

    def size(self, expr):
        """A :class:`SizeExpr` as a 1-D int64 tensor of one element, computed from the inputs' shapes."""
        if not expr.terms:
            return self.ints([int(expr.constant)])
        if expr not in self._sizes:
            scale = math.lcm(expr.constant.denominator, *(c.denominator for c, _ in expr.terms))
            total = self.ints([int(expr.constant * scale)]) if expr.constant else None
            for coefficient, symbols in expr.terms:
                term = None
                for symbol in symbols:
                    factor = self._symbol(symbol)
                    term = factor if term is None else self.op("Mul", [term, factor])
                if coefficient * scale != 1:
                    term = self.op("Mul", [term, self.ints([int(coefficient * scale)])])
                total = term if total is None else self.op("Add", [total, term])
            if scale != 1:
                total = self.op("Div", [total, self.ints([scale])])
            self._sizes[expr] = total
        return self._sizes[expr]

    def _symbol(self, symbol):
        """The size of ``symbol``: the shape of the first input axis that carries it."""
        if symbol not in self._symbols:
            raise ExportError(f"size symbol {symbol!r} is not an axis of any input")
        if symbol not in self._dims:
            self._dims[symbol] = self.dim(*self._symbols[symbol])
        return self._dims[symbol]

    def shape(self, items):
        """A 1-D int64 tensor of ``items`` (ints and :class:`Size` markers, or None for INT64_MAX)."""
        pieces, run = [], []
        for item in items:
            if isinstance(item, Size):
                if run:
                    pieces.append(self.ints(run))
                    run = []
                pieces.append(self.size(item.expr))
            else:
                run.append(INT64_MAX if item is None else int(item))
        if run or not pieces:
            pieces.append(self.ints(run))
        return pieces[0] if len(pieces) == 1 else self.op("Concat", pieces, axis=0)

    # ---- converting ---------------------------------------------------------------------------------------------
    def convert(self, node):
        """Write ``node`` into the graph with its converter; an op with none raises UnsupportedOpError."""
        converter = CONVERTERS.get(node.cls)
        where = f" in layer {node.scope!r}" if node.scope else " at the top level"
        if converter is None:
            reason = NOT_EXPORTED.get(node.cls)
            raise UnsupportedOpError(f"ONNX export: no converter for op {node.cls.__module__}.{node.cls.__name__}"
                                     f"{where}" + (f" ({reason})" if reason else ""))
        self.scope = node.scope
        try:
            out = converter(self, node, [self.tensor(s) for s in node.inputs])
        except UnsupportedOpError as err:
            raise UnsupportedOpError(f"ONNX export: op {node.cls.__name__}{where}: {err}") from None
        for slot, name in zip(node.outputs, out if node.multi else (out,)):
            self.bind(slot, name)


def value_info(name, dtype, shape):
    """A graph input or output declaration: ``shape`` entries ints, symbol strings or None (unknown)."""
    return helper.make_tensor_value_info(name, onnx_dtype(dtype), None if shape is None else list(shape))

