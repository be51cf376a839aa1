"""What each op's attributes may be: one declaration per op, checked on every program read from a file.

A program file (an export's ``program/``, a cache entry under ``$OAR_HOME/programs``) is data: before a
replay sets an attribute on an op, :func:`check_attributes` holds the node's attributes to its op's entry in
:data:`ATTRIBUTES` (keyed by the op's module path, as ``program.json`` names it): every name declared, every
declared name present (unless it may be absent), every value of its declared kind and range, and every size
bounded. Sizes are ints (or :class:`~framework.jit.template.Size` expressions of the input sizes) of at most
:data:`MAX_SIZE`; a shape's elements, with every size symbol at 1, at most :data:`MAX_ELEMENTS`; a size
expression names only the program's symbols. A value that does not fit raises TemplateError naming the
attribute; an op with no entry cannot come from a file.
"""
import math
import numbers

import numpy

from .template import Ref, Size, SliceTemplate, TemplateError

__all__ = ["ATTRIBUTES", "MAX_SIZE", "MAX_ELEMENTS", "MAX_RANK", "check_attributes"]

MAX_SIZE = 2 ** 31 - 1          # any one size or count
MAX_ELEMENTS = 2 ** 28          # a shape an op makes, its size symbols at 1 (1 GiB of float32)
MAX_RANK = 32                   # NumPy's limit is 64; no model here comes near either


class _Kind:
    """One attribute kind: ``check(value, where, symbols)`` raises TemplateError unless ``value`` fits."""

    def __init__(self, describe, test, may_be_absent=False):
        self.describe, self.test, self.may_be_absent = describe, test, may_be_absent

    def check(self, value, where, symbols):
        if not self.test(value, symbols):
            raise TemplateError(f"{where} must be {self.describe}, got {_shown(value)}")


def _shown(value):
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _is_int(value):
    return isinstance(value, numbers.Integral) and not isinstance(value, (bool, numpy.bool_))


def _at_one(expr):
    """The value of the size expression ``expr`` with every symbol at 1 (its smallest), or None when not an int."""
    try:
        return expr.evaluate({symbol: 1 for _, symbols in expr.terms for symbol in symbols})
    except TemplateError:
        return None


def _size_fits(expr, low, symbols):
    if not all(abs(n) <= MAX_SIZE for n in [expr.constant] + [c for c, _ in expr.terms]):
        return False
    if not all(set(names) <= symbols for _, names in expr.terms):
        return False
    smallest = _at_one(expr)
    return smallest is not None and low <= smallest <= MAX_SIZE


def _int_in(value, low, high, sized, symbols):
    if _is_int(value):
        return low <= int(value) <= high
    return sized and isinstance(value, Size) and _size_fits(value.expr, low, symbols)


def integer(low=0, high=MAX_SIZE, sized=False, absent=False):
    """An int in [low, high]; with ``sized`` also a size expression of the input sizes."""
    return _Kind(f"an integer in [{low}, {high}]" + (" or a size expression" if sized else ""),
                 lambda v, s: _int_in(v, low, high, sized, s), absent)


def number(low=-math.inf, high=math.inf, finite=True, absent=False):
    """A real number in [low, high], finite unless ``finite`` is False."""
    def test(value, symbols):
        if not isinstance(value, numbers.Real) or isinstance(value, (bool, numpy.bool_)):
            return False
        value = float(value)
        return (math.isfinite(value) or (not finite and not math.isnan(value))) and low <= value <= high
    return _Kind(f"a {'finite ' if finite else ''}number in [{low:g}, {high:g}]", test, absent)


def boolean(absent=False):
    """True or False."""
    return _Kind("true or false", lambda v, s: isinstance(v, (bool, numpy.bool_)), absent)


def choice(*values, absent=False):
    """One of ``values``."""
    return _Kind(f"one of {', '.join(map(repr, values))}", lambda v, s: isinstance(v, str) and v in values, absent)


def dtype(absent=False):
    """A NumPy dtype (already read as a numeric one)."""
    return _Kind("a dtype", lambda v, s: isinstance(v, numpy.dtype), absent)


def array(absent=False):
    """An array of the program (a slot reference)."""
    return _Kind("a reference to a program value", lambda v, s: isinstance(v, Ref), absent)


def optional(kind):
    """``kind`` or None."""
    return _Kind(f"{kind.describe} or null", lambda v, s: v is None or kind.test(v, s), kind.may_be_absent)


def absent(kind):
    """``kind``, or no attribute at all (the op's class gives the default)."""
    return _Kind(kind.describe, kind.test, True)


def sequence(item, min_len=0, max_len=MAX_RANK, elements=False, absent=False):
    """A tuple or list of ``item`` kinds, ``min_len`` to ``max_len`` long; with ``elements`` a shape, whose
    element count (the fixed sizes times each expression at symbols 1) is at most MAX_ELEMENTS."""
    def test(value, symbols):
        if not isinstance(value, (tuple, list)) or not min_len <= len(value) <= max_len:
            return False
        if not all(item.test(v, symbols) for v in value):
            return False
        return not elements or _elements(value) <= MAX_ELEMENTS
    what = f"a list of {min_len} to {max_len} of ({item.describe})"
    return _Kind(what + (f" of at most {MAX_ELEMENTS:,} elements" if elements else ""), test, absent)


def _elements(shape):
    total = 1
    for n in shape:
        size = _at_one(n.expr) if isinstance(n, Size) else int(n)
        total *= max(size, 1)
    return total


def _index_leaf(value, symbols):
    if value is None or value is Ellipsis or isinstance(value, (Ref, bool, numpy.bool_)):
        return True
    if isinstance(value, (slice, SliceTemplate)):
        parts = (value.start, value.stop, value.step) if isinstance(value, slice) else tuple(value)
        return len(parts) == 3 and all(p is None or _int_in(p, -MAX_SIZE, MAX_SIZE, True, symbols) for p in parts)
    return _int_in(value, -MAX_SIZE, MAX_SIZE, True, symbols)


def _index(value, symbols):
    if isinstance(value, (tuple, list)) and not isinstance(value, SliceTemplate):
        return len(value) <= MAX_RANK and all(_index_leaf(v, symbols) for v in value)
    return _index_leaf(value, symbols)


INDEX = _Kind("an index (ints, slices, None, ..., references to arrays)", _index)
AXIS = integer(-MAX_RANK, MAX_RANK - 1)
AXES = sequence(AXIS)
COUNT = integer(1)
SIZES = sequence(integer(1, sized=True), 1, elements=True)     # output sizes of a conv or pool, kernels
STEPS = sequence(integer(1, sized=True), 1)                     # strides, dilations
PAIRS = sequence(sequence(integer(0, sized=True), 2, 2))        # (before, after) paddings
SHAPE = sequence(integer(-1, sized=True), elements=True)        # a shape an op makes (-1: inferred)
REDUCTION = choice("none", "mean", "sum")
EPSILON = number(0, 1)
NOTHING = {}

_F = "framework.ops."
ATTRIBUTES = {
    **{f"{_F}activation.{name}": NOTHING for name in ("Hardswish", "ReLU", "SiLU", "Sigmoid", "Tanh")},
    f"{_F}activation.ELU": {"alpha": number()},
    f"{_F}activation.GELU": {"approximate": boolean()},
    f"{_F}activation.LeakyReLU": {"slope": number()},
    f"{_F}activation.LogSoftmax": {"axis": AXIS},
    f"{_F}activation.Softmax": {"axis": AXIS},
    f"{_F}activation.Softplus": {"beta": number(), "threshold": number()},
    f"{_F}common.Dropout": {"p": number(0, 1), "scale": boolean()},
    f"{_F}common.Embedding": {"padding_idx": optional(integer(-MAX_SIZE))},
    f"{_F}common.Full": {"shape": SHAPE, "value": number(finite=False), "dtype": dtype()},
    f"{_F}common.HashedNgrams": {"orders": sequence(integer(1, 64), 1), "buckets": COUNT, "ending": boolean()},
    f"{_F}common.PackedPositions": {"maxlen": integer(0, sized=True)},
    f"{_F}common.SequenceMask": {"maxlen": optional(integer(0, sized=True)), "dtype": dtype()},
    f"{_F}conv.ConvNd": {"kernel": SIZES, "stride": STEPS, "padding": PAIRS, "dilation": STEPS, "out": SIZES,
                         "groups": COUNT},
    f"{_F}boxes.SmoothL1": {"beta": number(0), "reduction": REDUCTION},
    f"{_F}crf.LinearChainCRF": {"labels": array(), "lengths": optional(array())},
    f"{_F}crf.ViterbiDecode": {"lengths": optional(array()), "include_bos_eos_tag": boolean(),
                               "allowed": absent(optional(array()))},
    f"{_F}linalg.Linear": NOTHING,
    f"{_F}linalg.MatMul": {"transpose_x": boolean(), "transpose_y": boolean()},
    f"{_F}loss.BinaryCrossEntropyWithLogits": {"reduction": REDUCTION, "weight": absent(optional(array())),
                                               "pos_weight": absent(optional(array()))},
    f"{_F}loss.MarginRanking": {"margin": number(), "reduction": REDUCTION},
    **{f"{_F}loss.{name}": {"q": optional(array()), "axis": AXIS, "reduction": REDUCTION,
                            "denom": absent(optional(number(0)))} for name in ("NllLoss", "SoftmaxCrossEntropy")},
    f"{_F}loss.PairwiseLoss": {"kind": choice("square", "abs"), "reduction": REDUCTION},
    f"{_F}manipulation.Concat": {"axis": AXIS},
    f"{_F}manipulation.Expand": {"shape": SHAPE},
    f"{_F}manipulation.Flip": {"axes": AXES},
    f"{_F}manipulation.GetItem": {"index": INDEX, "advanced": boolean()},
    f"{_F}manipulation.Pad": {"widths": PAIRS, "mode": choice("constant", "reflect", "replicate", "edge", "circular"),
                              "value": number(finite=False)},
    f"{_F}manipulation.Reshape": {"shape": SHAPE},
    f"{_F}manipulation.Split": {"axis": AXIS, "bounds": sequence(integer(0), 1, MAX_SIZE)},
    f"{_F}manipulation.Stack": {"axis": AXIS},
    f"{_F}manipulation.Take": {"axis": AXIS},
    f"{_F}manipulation.TakeAlongAxis": {"axis": AXIS},
    f"{_F}manipulation.Tile": {"reps": sequence(integer(0, sized=True), elements=True)},
    f"{_F}manipulation.Transpose": {"perm": AXES},
    **{f"{_F}math.{name}": NOTHING for name in ("Abs", "Add", "Divide", "Exp", "Identity", "Log", "Maximum",
                                                "Minimum", "Multiply", "Neg", "Pow", "Sqrt", "Subtract")},
    f"{_F}math.Cast": {"dtype": dtype()},
    f"{_F}math.Clip": {"lo": optional(number(finite=False)), "hi": optional(number(finite=False))},
    f"{_F}math.PowScalar": {"exponent": number()},
    f"{_F}math.ToDevice": {"device": choice("cpu", "gpu")},
    f"{_F}math.Where": {"condition": array()},
    f"{_F}norm.BatchNorm": {"epsilon": EPSILON, "fixed": optional(sequence(array(), 2, 2)),
                            "running": optional(sequence(_Kind("an array or a momentum", lambda v, s: isinstance(
                                v, Ref) or number(0, 1).test(v, s)), 3, 3))},
    f"{_F}norm.ChannelAffine": {"relu": boolean()},
    f"{_F}norm.LpNormalize": {"p": number(), "axis": AXIS, "epsilon": EPSILON},
    f"{_F}norm.Normalize": {"view": SHAPE, "axes": AXES, "param_shape": SHAPE, "epsilon": EPSILON},
    f"{_F}pooling.AdaptiveAvgPoolNd": {"weights": sequence(array(), 1)},
    f"{_F}pooling.SequencePool": {"lengths": array(), "pool_type": choice("max", "average", "max_average")},
    f"{_F}pooling.PoolNd": {"mode": choice("max", "avg"), "kernel": SIZES, "stride": STEPS, "padding": PAIRS,
                            "out": SIZES, "divisor": absent(array())},
    **{f"{_F}reduce.{name}": {"axes": AXES, "keepdim": boolean()} for name in ("LogSumExp", "Mean", "Sum")},
    f"{_F}reduce.Extremum": {"axes": AXES, "keepdim": boolean(), "largest": boolean()},
    f"{_F}reduce.Var": {"axes": AXES, "keepdim": boolean(), "divisor": integer(1, sized=True)},
    f"{_F}rnn.DynamicGRU": {"lengths": optional(array()), "reverses": sequence(boolean(), 1, 2),
                            "origin_mode": boolean()},
    f"{_F}rnn.DynamicLSTM": {"lengths": optional(array()), "reverses": sequence(boolean(), 1, 2),
                             "peepholes": boolean(absent=True),
                             "activations": sequence(choice("sigmoid", "tanh", "relu", "identity"), 3, 3,
                                                     absent=True)},
    f"{_F}rnn.SequenceLinear": {"lengths": optional(array())},
    f"{_F}temporal.TemporalShift": {"num_segments": COUNT, "shift_ratio": number(0, 0.5)},
    "framework.slim.ops.DequantizeWeight": {"axis": AXIS},
    "framework.slim.ops.FakeQuantize": NOTHING,
}


def check_attributes(op, attrs, symbols=()):
    """Raise TemplateError unless ``attrs`` (a node's attribute dict, as read from a file) fits the declaration
    of the op named ``op`` (its module path); ``symbols``: the program's size symbols."""
    declared = ATTRIBUTES.get(op)
    if declared is None:
        raise TemplateError("this op's attributes are not declared, so it cannot be read from a file")
    unknown = sorted(set(attrs) - set(declared))
    if unknown:
        raise TemplateError(f"unknown attribute {unknown[0]!r} (the op takes {', '.join(declared) or 'none'})")
    symbols = set(symbols)
    for name, kind in declared.items():
        if name not in attrs:
            if not kind.may_be_absent:
                raise TemplateError(f"attribute {name!r} is missing")
            continue
        kind.check(attrs[name], f"attribute {name!r}", symbols)
