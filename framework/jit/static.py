"""``to_static(layer)`` (or ``@to_static`` on a ``forward``): eval-mode calls run through traced programs.

A :class:`StaticLayer` wraps a layer. In training mode it calls the layer
(autograd needs the eager ops). In eval mode, the first call with a given
*signature* — the inputs given, their dtypes and ranks, and the size of every
axis that is not dynamic — traces a program on that call's inputs; later calls
of that signature replay it, whatever their dynamic sizes. A layer the trace
refuses (a :class:`~framework.jit.TraceError`) runs eagerly for that signature,
and ``fallbacks`` keeps the reason.

**A small example.** The trace never runs on the caller's whole batch: the
inputs are cut to their first ``EXAMPLE_ROWS`` rows along the batch axes (the
dynamic axes that are axis 0 of an input), since the dynamic axes make the
program serve every batch size. So a first call costs a few small forward
passes, whatever its batch; the sequence axes keep their size (lengths held in
other inputs refer to them).

**On disk.** With ``cache_dir``, a program traced for a signature is also kept
there (:mod:`framework.jit.cache`: keyed by the weights' sha256, the signature,
the passes and oar's version) and the next process loads it instead of
tracing; a cached program that does not load back, was traced for other
inputs than its signature, or fails its first replay is dropped and traced
again with one warning. Outputs are Tensors (without gradient) in
the layer's output structure; any other attribute is the wrapped layer's.

A program holds the weights it was traced with (folded batch norms are copies):
``to``, ``astype`` and ``set_state_dict`` through the wrapper drop the programs,
and after changing weights some other way call :meth:`StaticLayer.retrace`.
"""
import functools

from .. import backend
from ..errors import UserError
from ..nn.layer import Layer
from ..tensor import Tensor
from .cache import drop_entry, entry_path, load_entry, state_digest, store_entry
from ..tree import tree_map
from .trace import DEFAULT_PASSES, TraceError, input_leaves, input_names, is_array, positional_names, trace

__all__ = ["to_static", "StaticLayer", "EXAMPLE_ROWS"]

EXAMPLE_ROWS = 2        # rows of the caller's batch a new signature is traced on

# What a replay of a garbled program raises (an op's forward on attributes that passed their checks but do not fit
# the arrays, a size beyond memory); a traced program raising them on the same call fails the same way again.
_REPLAY_ERRORS = (ArithmeticError, LookupError, TypeError, ValueError, AttributeError, MemoryError)


def signature_of(specs):
    """The call signature (a ``StaticLayer`` program key) that a program with the input specs ``specs`` serves:
    the list inputs and their lengths, then each input's name, dtype and fixed sizes (None for a dynamic axis)."""
    groups = {}
    for spec in specs:
        name, dot, index = spec.name.rpartition(".")
        if dot and index.isdigit():
            groups[name] = max(groups.get(name, 0), int(index) + 1)
        else:
            groups[spec.name] = None
    key = [tuple(sorted(groups.items()))]
    key += [(spec.name, spec.dtype.str, tuple(None if isinstance(n, str) else n for n in spec.shape))
            for spec in specs]
    return tuple(key)


def _to_tensors(tree):
    return tree_map(Tensor, tree)


class StaticLayer:
    """``layer`` run through traced programs in eval mode (module docstring).

    Args:
        layer: the :class:`framework.nn.Layer`.
        dynamic_axes: ``{input name: {axis: symbol}}`` as :func:`~framework.jit.trace` takes it
            (None: axis 0 of every input).
        passes: the graph passes of each trace.
        forward: the eager function to trace and fall back to (default: calling ``layer``).
        cache_dir: a folder that keeps traced programs across processes (None: memory only).
    """

    def __init__(self, layer, dynamic_axes=None, passes=DEFAULT_PASSES, forward=None, cache_dir=None):
        self.__dict__.update(layer=layer, dynamic_axes=dynamic_axes, passes=tuple(passes),
                             _forward=forward or layer, _parameters=positional_names(forward or layer.forward),
                             cache_dir=cache_dir, programs={}, fallbacks={}, unproven={}, _weights_digest=None)

    def _signature(self, args, kwargs):
        """The cache key of a call and its named inputs and input arrays (``name`` or ``name.i`` for a list
        input), or None keys when an input is not an array (such a call runs eagerly)."""
        named = input_names(self._parameters, tuple(args)) if args else []
        named += [(name, value, False) for name, value in kwargs.items()]
        named = [entry for entry in named if entry[1] is not None]
        leaves, groups = input_leaves(named)
        key = [tuple(sorted((name, count) for name, _, count in groups))]
        for name, value in leaves:
            array = value.data if isinstance(value, Tensor) else value
            if not is_array(array):
                return None, None, None
            axes = self._axes_of(name)
            key.append((name, array.dtype.str, tuple(None if axis in axes or axis - array.ndim in axes else n
                                                     for axis, n in enumerate(array.shape))))
        return tuple(key), named, leaves

    def _axes_of(self, name):
        if self.dynamic_axes is None:
            return {0: "batch"}
        return self.dynamic_axes.get(name, self.dynamic_axes.get(name.rpartition(".")[0], {}))

    def __call__(self, *args, **kwargs):
        if self.layer.training:
            return self._forward(*args, **kwargs)
        key, named, leaves = self._signature(args, kwargs)
        if key is None or key in self.fallbacks:
            return self._forward(*args, **kwargs)
        program = self.programs.get(key)
        if program is None:
            try:
                program = self._program(key, named, leaves)
            except TraceError as err:
                self.fallbacks[key] = str(err)
                return self._forward(*args, **kwargs)
            self.programs[key] = program
        if key in self.unproven:
            return _to_tensors(self._first_replay(key, named, leaves))
        return _to_tensors(program(**dict(leaves)))

    def _first_replay(self, key, named, leaves):
        """The outputs of the first call of the cached program of ``key``: a replay that fails (a garbled entry
        its checks let through) drops the entry, traces the program again and replays that."""
        try:
            return self.programs[key](**dict(leaves))
        except _REPLAY_ERRORS as err:
            if isinstance(err, UserError):      # about the call or a setting, not the program: the same traced
                raise
            drop_entry(self.unproven.pop(key), f"failed its first replay ({type(err).__name__}: {err})")
            self.programs[key] = self._program(key, named, leaves, cached=False)
            return self.programs[key](**dict(leaves))
        finally:
            self.unproven.pop(key, None)

    def _program(self, key, named, leaves, cached=True):
        """The program of signature ``key``: from ``cache_dir`` when it holds it (and ``cached``), else traced on
        a small example cut from the call's inputs (and stored there)."""
        path = None
        if self.cache_dir is not None:
            if self._weights_digest is None:
                self.__dict__["_weights_digest"] = state_digest(self.layer)
            path = entry_path(self.cache_dir, self._weights_digest, key, self.passes)
            arrays = [value.data if isinstance(value, Tensor) else value for _, value in leaves]
            program = load_entry(path, backend.device_of(arrays[0]) if arrays else "cpu",
                                 fits=lambda loaded: signature_of(loaded.inputs) == key) if cached else None
            if program is not None:
                self.unproven[key] = path
                return program
        batch = {self._axes_of(name).get(0) for name, _ in leaves} - {None}
        example = {name: self._cut(name, value, batch) for name, value, _ in named}
        program = trace(self.layer, example, self._axes(example), self.passes, forward=self._forward)
        if path is not None:
            store_entry(program, path)
        return program

    def _cut(self, name, value, batch):
        """``value`` (an input, or a list of them) cut to its first ``EXAMPLE_ROWS`` rows along every axis whose
        symbol is in ``batch``."""
        if isinstance(value, (list, tuple)):
            return type(value)(self._cut(f"{name}.{i}", v, batch) for i, v in enumerate(value))
        array = value.data if isinstance(value, Tensor) else value
        axes = {axis % array.ndim for axis, symbol in self._axes_of(name).items()
                if symbol in batch and -array.ndim <= axis < array.ndim}
        return array[tuple(slice(0, EXAMPLE_ROWS) if axis in axes else slice(None) for axis in range(array.ndim))]

    def _axes(self, inputs):
        if self.dynamic_axes is None:
            return None
        return {name: axes for name, axes in self.dynamic_axes.items() if name in inputs}

    def add_program(self, program, inputs=None):
        """Serve the calls that ``program`` (e.g. one :func:`~framework.jit.load` read) was traced for with it,
        instead of tracing: its inputs (:class:`~framework.jit.InputSpec` list ``inputs``, default
        ``program.inputs``) are this layer's (``name``, or ``name.i`` for a list input). Any callable taking
        the inputs by name and returning arrays serves (an ONNX Runtime session, ``framework.onnx.OnnxProgram``)."""
        self.programs[signature_of(program.inputs if inputs is None else inputs)] = program

    def retrace(self):
        """Forget every traced program (the next calls trace again, e.g. after the weights changed)."""
        self.programs.clear()
        self.fallbacks.clear()
        self.unproven.clear()
        self.__dict__["_weights_digest"] = None

    # ---- the wrapped layer --------------------------------------------------------------------------------
    def __getattr__(self, name):
        return getattr(self.__dict__["layer"], name)

    def __setattr__(self, name, value):
        setattr(self.layer, name, value)

    def eval(self):
        self.layer.eval()
        return self

    def train(self, mode=True):
        self.layer.train(mode)
        return self

    def to(self, *args, **kwargs):
        self.layer.to(*args, **kwargs)
        self.retrace()
        return self

    def astype(self, dtype):
        self.layer.astype(dtype)
        self.retrace()
        return self

    def set_state_dict(self, *args, **kwargs):
        result = self.layer.set_state_dict(*args, **kwargs)
        self.retrace()
        return result

    def __repr__(self):
        return f"StaticLayer({self.layer!r}, {len(self.programs)} programs)"


class _StaticForward:
    """``@to_static`` on a Layer's ``forward``: each instance gets its own :class:`StaticLayer`."""

    def __init__(self, function, dynamic_axes, passes):
        functools.update_wrapper(self, function)
        self.function, self.dynamic_axes, self.passes = function, dynamic_axes, passes

    def __get__(self, instance, owner=None):
        if instance is None:
            return self
        static = instance.__dict__.get("_static_forward")
        if static is None:
            static = StaticLayer(instance, self.dynamic_axes, self.passes,
                                 forward=functools.partial(self.function, instance))
            instance.__dict__["_static_forward"] = static
        return static


def to_static(target=None, *, dynamic_axes=None, passes=DEFAULT_PASSES, cache_dir=None):
    """A :class:`StaticLayer` for a layer (its programs kept in ``cache_dir`` too, when given), or, on a
    Layer's ``forward`` (``@to_static`` or ``@to_static(dynamic_axes=...)``), a forward that runs through
    traced programs in eval mode."""
    if target is None:
        return lambda t: to_static(t, dynamic_axes=dynamic_axes, passes=passes)
    if isinstance(target, Layer):
        return StaticLayer(target, dynamic_axes, passes, cache_dir=cache_dir)
    if callable(target):
        return _StaticForward(target, dynamic_axes, passes)
    raise TypeError(f"to_static takes a Layer or a forward function, got {type(target).__name__}")
