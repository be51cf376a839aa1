"""Op attributes as templates: plain values, plus markers for what a replay fills in.

A recorded op keeps the keyword attributes it was applied with. Two kinds of
value cannot be kept as they were seen at trace time:

- an array that is another value of the program (the ``lengths`` a GRU reads,
  the running statistics a batch norm reads) becomes a :class:`Ref` to that
  value's slot;
- an int that follows the input sizes (a reshape to ``(batch * seq, 128)``)
  becomes a :class:`Size` holding a :class:`SizeExpr` of the size symbols.

:func:`resolve` turns a template back into attributes for one call; :func:`to_json`
and :func:`from_json` write and read templates with no pickle (arrays are never
inline: only :class:`Ref` slots name them).
"""
import dataclasses
import fractions
import math
import numbers

import numpy

from ..tree import tree_leaves, tree_map

__all__ = ["Ref", "Size", "SizeExpr", "resolve", "resolve_keys", "size_symbols", "has_markers", "to_json", "from_json",
           "TemplateError", "walk_ints", "replace_ints", "ref_slots", "SliceTemplate", "follows_sizes", "numeric_dtype",
           "rename_refs"]


class TemplateError(ValueError):
    """An attribute value a program cannot hold or a file cannot describe; the message names it."""


@dataclasses.dataclass(frozen=True)
class Ref:
    """The array in slot ``slot`` of the program's values."""
    slot: int


class SizeExpr:
    """An int that follows the size symbols: ``constant + sum(coefficient * product of symbols)``.

    ``terms`` is a tuple of ``(coefficient, (symbol, ...))``, each coefficient an int or a Fraction;
    :meth:`evaluate` refuses a non-integral result.
    """

    __slots__ = ("constant", "terms")

    def __init__(self, constant, terms):
        self.constant = _exact(constant)
        self.terms = tuple((_exact(c), tuple(symbols)) for c, symbols in terms if c)

    def evaluate(self, sizes):
        """The int for ``sizes`` ({symbol: int})."""
        value = self.constant + sum(c * math.prod(sizes[s] for s in symbols) for c, symbols in self.terms)
        if value.denominator != 1:
            raise TemplateError(f"size {self} is not an integer for sizes {sizes}")
        return int(value)

    def __eq__(self, other):
        return isinstance(other, SizeExpr) and (self.constant, self.terms) == (other.constant, other.terms)

    def __hash__(self):
        return hash((self.constant, self.terms))

    def __repr__(self):
        parts = [f"{c}*{'*'.join(symbols)}" for c, symbols in self.terms]
        if self.constant:
            parts.append(str(self.constant))
        return " + ".join(parts) or "0"

    def to_json(self):
        return {"constant": _fraction_json(self.constant),
                "terms": [[_fraction_json(c), list(symbols)] for c, symbols in self.terms]}

    @classmethod
    def from_json(cls, value):
        try:
            return cls(_fraction(value["constant"]), [(_fraction(c), [str(s) for s in symbols])
                                                     for c, symbols in value["terms"]])
        except (KeyError, TypeError, ValueError, ZeroDivisionError) as err:
            raise TemplateError(f"a size expression must be {{'constant', 'terms'}}, got {value!r} ({err})") from None


def _exact(value):
    """``value`` as an int when it is a whole number (int arithmetic when every coefficient is, the usual case),
    else as a Fraction."""
    value = fractions.Fraction(value)
    return int(value) if value.denominator == 1 else value


def _fraction_json(value):
    return int(value) if value.denominator == 1 else [value.numerator, value.denominator]


def _fraction(value):
    if isinstance(value, list):
        return fractions.Fraction(int(value[0]), int(value[1]))
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"not an int: {value!r}")
    return fractions.Fraction(value)


@dataclasses.dataclass(frozen=True)
class Size:
    """An int attribute given by a :class:`SizeExpr`."""
    expr: SizeExpr


class SliceTemplate(tuple):
    """A slice whose bounds follow the sizes (start, stop, step with :class:`Size` markers): a ``slice`` per call."""


def ref_slots(value):
    """The slot of every :class:`Ref` inside ``value``, in order (a list)."""
    return [leaf.slot for leaf in tree_leaves(value) if isinstance(leaf, Ref)]


def has_markers(value, kinds=(Ref, Size)):
    """True when ``value`` holds a :class:`Ref` or a :class:`Size` (one of ``kinds``) anywhere."""
    return any(isinstance(leaf, kinds) for leaf in tree_leaves(value))


def size_symbols(value):
    """The size symbols the :class:`Size` markers inside ``value`` use, sorted (a tuple of str)."""
    return tuple(sorted({symbol for leaf in tree_leaves(value) if isinstance(leaf, Size)
                         for _, symbols in leaf.expr.terms for symbol in symbols}))


def follows_sizes(value):
    """True when ``value`` holds a :class:`Size` (an int that follows the input sizes) anywhere."""
    return has_markers(value, (Size,))


def rename_refs(value, renames):
    """``value`` with each :class:`Ref` to a slot of ``renames`` ({old: new}) pointing at the new slot."""
    return tree_map(lambda leaf: Ref(renames.get(leaf.slot, leaf.slot)) if isinstance(leaf, Ref) else leaf, value)


def resolve(value, env, sizes):
    """``value`` with each :class:`Ref` replaced by ``env[slot]``, each :class:`Size` by its int and each
    :class:`SliceTemplate` by its slice."""
    def fill(leaf):
        if isinstance(leaf, SliceTemplate):
            return slice(*(fill(v) for v in leaf))
        if isinstance(leaf, Ref):
            return env[leaf.slot]
        if isinstance(leaf, Size):
            return leaf.expr.evaluate(sizes)
        return leaf
    if isinstance(value, (Ref, Size, SliceTemplate)):   # the common attribute: one bare marker, no tree to walk
        return fill(value)
    return tree_map(fill, value, is_leaf=_is_slice_template)


def resolve_keys(attrs, keys, env, sizes):
    """The dict ``attrs`` with its values under ``keys`` (those holding markers) :func:`resolve`-d, the others as
    they are (not walked)."""
    resolved = dict(attrs)
    for key in keys:
        resolved[key] = resolve(attrs[key], env, sizes)
    return resolved


def _is_slice_template(value):
    return isinstance(value, SliceTemplate)


def walk_ints(value, path=()):
    """``(path, int)`` for every plain int (not bool) inside ``value``, in a fixed order."""
    if isinstance(value, numbers.Integral) and not isinstance(value, (bool, numpy.bool_)):
        yield path, int(value)
    elif isinstance(value, (tuple, list)):
        for i, v in enumerate(value):
            yield from walk_ints(v, path + (i,))
    elif isinstance(value, dict):
        for k in sorted(value):
            yield from walk_ints(value[k], path + (k,))
    elif isinstance(value, slice):
        for i, v in enumerate((value.start, value.stop, value.step)):
            yield from walk_ints(v, path + (i,))


def replace_ints(value, replacements, path=()):
    """``value`` with the ints at the paths of ``replacements`` ({path: replacement}) replaced."""
    if path in replacements:
        return replacements[path]
    if isinstance(value, (tuple, list)):
        return type(value)(replace_ints(v, replacements, path + (i,)) for i, v in enumerate(value))
    if isinstance(value, dict):
        return {k: replace_ints(v, replacements, path + (k,)) for k, v in value.items()}
    if isinstance(value, slice):
        parts = [replace_ints(v, replacements, path + (i,)) for i, v in enumerate((value.start, value.stop,
                                                                                    value.step))]
        return slice(*parts) if not any(isinstance(p, Size) for p in parts) else SliceTemplate(parts)
    return value




# ---- JSON ----------------------------------------------------------------------------------------------------
# A template in JSON: null, true/false, numbers, strings and lists stand for themselves; every other value is an
# object with one key saying what it is.

def to_json(value, where="attribute"):
    """A JSON-able form of the template ``value``; a value no program file can hold raises TemplateError
    naming ``where``."""
    if value is None or isinstance(value, (bool, str)):
        return value
    if type(value) is int or type(value) is float:
        return value if type(value) is int or math.isfinite(value) else {"float": repr(value)}
    if isinstance(value, numpy.generic):
        return {"scalar": [value.dtype.str, value.item() if numpy.isfinite(value) or value.dtype.kind != "f"
                           else repr(value.item())]}
    if isinstance(value, Ref):
        return {"ref": value.slot}
    if isinstance(value, Size):
        return {"size": value.expr.to_json()}
    if isinstance(value, SliceTemplate):
        return {"slice": [to_json(v, where) for v in value]}
    if isinstance(value, slice):
        return {"slice": [to_json(v, where) for v in (value.start, value.stop, value.step)]}
    if value is Ellipsis:
        return {"ellipsis": True}
    if isinstance(value, numpy.dtype):
        return {"dtype": value.str}
    if isinstance(value, type) and issubclass(value, numpy.generic):
        return {"type": numpy.dtype(value).str}
    if isinstance(value, tuple):
        return {"tuple": [to_json(v, where) for v in value]}
    if isinstance(value, list):
        return [to_json(v, where) for v in value]
    if isinstance(value, dict) and all(isinstance(k, str) for k in value):
        return {"dict": {k: to_json(v, f"{where}.{k}") for k, v in value.items()}}
    raise TemplateError(f"{where}: a value of type {type(value).__name__} cannot be written to a program file")


def numeric_dtype(text):
    """The NumPy dtype named ``text``; TemplateError unless it is a numeric one."""
    try:
        dtype = numpy.dtype(str(text))
    except TypeError:
        raise TemplateError(f"not a dtype: {text!r}") from None
    if dtype.kind not in "biuf":
        raise TemplateError(f"not a numeric dtype: {text!r}")
    return dtype


def from_json(value, slots):
    """The template a :func:`to_json` value stands for; a :class:`Ref` must name a slot below ``slots``.
    Anything malformed raises TemplateError."""
    if value is None or isinstance(value, (bool, str, int, float)):
        return value
    if isinstance(value, list):
        return [from_json(v, slots) for v in value]
    if not isinstance(value, dict) or len(value) != 1:
        raise TemplateError(f"not an attribute value: {value!r}")
    (kind, body), = value.items()
    if kind == "ref":
        if isinstance(body, bool) or not isinstance(body, int) or not 0 <= body < slots:
            raise TemplateError(f"a reference names slot {body!r}, but the program has slots 0..{slots - 1}")
        return Ref(body)
    if kind == "size":
        return Size(SizeExpr.from_json(body))
    if kind == "slice" and isinstance(body, list) and len(body) == 3:
        parts = [from_json(v, slots) for v in body]
        return SliceTemplate(parts) if any(isinstance(p, Size) for p in parts) else slice(*parts)
    if kind == "tuple" and isinstance(body, list):
        return tuple(from_json(v, slots) for v in body)
    if kind == "dict" and isinstance(body, dict):
        return {k: from_json(v, slots) for k, v in body.items()}
    if kind == "float" and body in ("inf", "-inf", "nan"):
        return float(body)
    if kind == "ellipsis" and body is True:
        return Ellipsis
    if kind == "dtype":
        return numeric_dtype(body)
    if kind == "type":
        return numeric_dtype(body).type
    if kind == "scalar" and isinstance(body, list) and len(body) == 2:
        dtype = numeric_dtype(body[0])
        number = float(body[1]) if isinstance(body[1], str) and body[1] in ("inf", "-inf", "nan") else body[1]
        if isinstance(number, bool) or not isinstance(number, (int, float)):
            raise TemplateError(f"a scalar needs a number, got {body[1]!r}")
        return dtype.type(number)
    raise TemplateError(f"not an attribute value: {value!r}")
