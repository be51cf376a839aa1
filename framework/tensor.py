"""Tensor, the recorded graph of Functions, and reverse-mode backward.

A :class:`Tensor` wraps one ndarray (NumPy or CuPy). When grad mode is on and
an input of an op requires grad, the op's :class:`Function` object is recorded
as the tensor's ``creator``; :meth:`Tensor.backward` walks those Functions in
reverse topological order and accumulates gradients into the leaves.
"""
import contextlib
import weakref

import numpy

from . import backend
from .errors import UserError

__all__ = ["Tensor", "Function", "OpError", "to_tensor", "no_grad", "enable_grad",
           "is_grad_enabled", "set_grad_enabled", "register_backward_end_hook", "HookHandle", "observe_ops"]

_grad_enabled = True
_ndarray = numpy.ndarray
_grad_ready_hooks = {}  # id(leaf) -> list of hook(leaf); see Tensor.register_grad_ready_hook
_backward_end_hooks = []  # hook(); see register_backward_end_hook
_op_observers = []  # observer(cls, inputs, attrs, result); see observe_ops


class OpError(ValueError):
    """An op got inputs it cannot take (shape, dtype or device); the message names the op."""


class HookHandle:
    """Returned by the hook registrations; ``remove()`` unregisters the hook."""

    def __init__(self, hooks, hook):
        self._hooks, self._hook = hooks, hook

    def remove(self):
        if self._hook in self._hooks:
            self._hooks.remove(self._hook)


def register_backward_end_hook(hook):
    """Call ``hook()`` at the end of every ``backward()``, after every leaf has its gradient.

    Data parallelism uses it to finish the gradient reduction of a step.
    Returns a :class:`HookHandle`.
    """
    _backward_end_hooks.append(hook)
    return HookHandle(_backward_end_hooks, hook)


@contextlib.contextmanager
def observe_ops(observer):
    """Within the context, call ``observer(cls, inputs, attrs, result)`` after every op.

    ``cls`` is the op's :class:`Function` subclass, ``inputs`` its input Tensors,
    ``attrs`` the keyword attributes it was applied with and ``result`` the
    output Tensor (or tuple of Tensors). The innermost observer alone is called;
    ``framework.jit`` records programs with it.
    """
    _op_observers.append(observer)
    try:
        yield
    finally:
        _op_observers.remove(observer)


def is_grad_enabled():
    """True when ops record the graph for backward."""
    return _grad_enabled


def set_grad_enabled(mode):
    """Turn graph recording on or off; returns the previous mode."""
    global _grad_enabled
    previous, _grad_enabled = _grad_enabled, bool(mode)
    return previous


@contextlib.contextmanager
def no_grad():
    """Context (and decorator) in which no op records the graph."""
    previous = set_grad_enabled(False)
    try:
        yield
    finally:
        set_grad_enabled(previous)


@contextlib.contextmanager
def enable_grad():
    """Context in which ops record the graph, even inside ``no_grad``."""
    previous = set_grad_enabled(True)
    try:
        yield
    finally:
        set_grad_enabled(previous)


def _describe(arrays):
    return ", ".join(f"{tuple(a.shape)} {a.dtype}" for a in arrays)


class Function:
    """One differentiable op: ``forward`` and ``backward`` on raw arrays.

    Subclasses implement ``forward(self, *arrays) -> array | tuple of arrays``
    and ``backward(self, *grad_outputs) -> grad | tuple of grads`` (one per
    input, ``None`` for inputs without a gradient). ``self.xp`` is the array
    module of the inputs; keyword arguments of :meth:`apply` become attributes;
    ``self.needs_input_grad`` says which inputs want a gradient. Store what
    backward needs as attributes (``self.saved = ...``) in forward.
    """

    inputs = None
    outputs = None
    needs_input_grad = ()

    @classmethod
    def apply(cls, *inputs, **attrs):
        """Run the op on Tensors ``inputs``; returns a Tensor (or a tuple for several outputs)."""
        fn = cls.__new__(cls)
        if attrs:
            fn.__dict__.update(attrs)
        first = inputs[0].data
        kind = type(first)
        record = False
        for t in inputs:
            if type(t.data) is not kind:
                raise OpError(f"{cls.__name__}: inputs live on different devices "
                              f"({', '.join(backend.device_of(t.data) for t in inputs)})")
            if t.requires_grad:
                record = _grad_enabled
        fn.xp = numpy if kind is _ndarray else backend.get_array_module(first)
        if record:
            fn.needs_input_grad = tuple(t.requires_grad for t in inputs)
        try:
            out = fn.forward(*[t.data for t in inputs])
        except (ValueError, TypeError, IndexError) as err:
            if isinstance(err, (OpError, UserError)):     # already one line for the user (a setting, an input)
                raise
            raise OpError(f"{cls.__name__}: {err} (inputs: {_describe([t.data for t in inputs])})") from None
        if type(out) is tuple:
            outs = tuple(Tensor(o if type(o) is kind else fn.xp.asarray(o), record, fn if record else None)
                         for o in out)
            if record:
                fn.inputs = inputs
                fn.outputs = tuple(weakref.ref(o) for o in outs)
                fn.output_specs = tuple((o.shape, o.dtype) for o in out)
            if _op_observers:
                _op_observers[-1](cls, inputs, attrs, outs)
            return outs
        result = Tensor(out if type(out) is kind else fn.xp.asarray(out), record, fn if record else None)
        if record:
            fn.inputs = inputs
            fn.outputs = (weakref.ref(result),)
        if _op_observers:
            _op_observers[-1](cls, inputs, attrs, result)
        return result

    def forward(self, *arrays):
        raise NotImplementedError

    def backward(self, *grad_outputs):
        raise NotImplementedError

    def release(self):
        """Drop the inputs and saved arrays once backward has used them."""
        self.inputs = None
        self.__dict__.pop("saved", None)


class Tensor:
    """An n-dimensional array with an optional gradient.

    Attributes:
        data: the ndarray (numpy or cupy).
        grad: a Tensor of the same shape after ``backward``, or None.
        requires_grad: whether ops on this tensor record the graph.
        creator: the Function that produced it (None for leaves).
    """

    __slots__ = ("data", "grad", "requires_grad", "creator", "name", "__weakref__")
    __array_priority__ = 100

    def __init__(self, data, requires_grad=False, creator=None, name=None):
        self.data = data
        self.grad = None
        self.requires_grad = requires_grad
        self.creator = creator
        self.name = name

    # ---- properties -------------------------------------------------------
    @property
    def shape(self):
        """The shape as a tuple of ints."""
        return tuple(self.data.shape)

    @property
    def dtype(self):
        return self.data.dtype

    @property
    def ndim(self):
        return self.data.ndim

    @property
    def size(self):
        return self.data.size

    @property
    def device(self):
        """'cpu' or 'gpu'."""
        return backend.device_of(self.data)

    @property
    def is_leaf(self):
        return self.creator is None

    @property
    def stop_gradient(self):
        """Paddle's spelling of ``not requires_grad``."""
        return not self.requires_grad

    @stop_gradient.setter
    def stop_gradient(self, value):
        self.requires_grad = not value

    def __len__(self):
        return len(self.data)

    def __repr__(self):
        grad = ", requires_grad=True" if self.requires_grad else ""
        return f"Tensor(shape={self.shape}, dtype={self.dtype}, device={self.device}{grad},\n{self.numpy()})"

    # ---- conversion -------------------------------------------------------
    def numpy(self):
        """The data as a NumPy array (copied from the GPU when needed)."""
        return self.data if type(self.data) is _ndarray else backend.to_device(self.data, "cpu")

    def item(self):
        """The value of a one-element tensor as a Python scalar."""
        if self.data.size != 1:
            raise OpError(f"item(): tensor of shape {self.shape} has {self.data.size} elements, not 1")
        return self.data.reshape(()).item()

    def tolist(self):
        return self.numpy().tolist()

    def to(self, device):
        """A copy on ``device`` ('cpu'|'gpu'), or self when already there; keeps requires_grad."""
        moved = backend.to_device(self.data, device)
        if moved is self.data:
            return self
        return _ops.to_device_op(self, device)

    def cpu(self):
        return self.to("cpu")

    def detach(self):
        """A new leaf sharing this tensor's data, outside the graph."""
        return Tensor(self.data)

    def clone(self):
        return _ops.clone(self)

    def astype(self, dtype):
        """Cast to ``dtype``; differentiable between float dtypes."""
        return _ops.cast(self, dtype)

    cast = astype

    def clear_grad(self):
        """Forget the accumulated gradient."""
        self.grad = None

    clear_gradient = clear_grad

    def gradient(self):
        """The gradient as a NumPy array (or None), as in the 2019 DyGraph API."""
        return None if self.grad is None else self.grad.numpy()

    def register_grad_ready_hook(self, hook):
        """Call ``hook(self)`` in each ``backward()`` that reaches this leaf, once its gradient is complete.

        The hook runs right after the last op of the graph that uses this leaf
        has added its gradient (so ``self.grad`` holds this backward's total),
        while the rest of the backward is still to run: data parallelism starts
        reducing a bucket of gradients there. Returns a :class:`HookHandle`.
        """
        if self.creator is not None:
            raise OpError("register_grad_ready_hook(): only leaf tensors (parameters) accumulate gradients")
        key = id(self)
        if key not in _grad_ready_hooks:
            _grad_ready_hooks[key] = []
            weakref.finalize(self, _grad_ready_hooks.pop, key, None)
        _grad_ready_hooks[key].append(hook)
        return HookHandle(_grad_ready_hooks[key], hook)

    # ---- autograd ---------------------------------------------------------
    def backward(self, grad=None, retain_graph=False):
        """Accumulate d(self)/d(leaf) into every leaf's ``grad``.

        Leaves accumulate across calls; this tensor's own ``grad`` is set to the
        seed gradient; other intermediate tensors keep no gradient.

        Args:
            grad: gradient of the final objective w.r.t. this tensor (same shape);
                may be omitted only for one-element tensors (then it is 1).
            retain_graph: keep the graph so backward can run through it again.
        """
        if not self.requires_grad:
            raise OpError("backward(): this tensor does not require grad "
                          "(no input of the ops that made it had requires_grad=True)")
        xp = backend.get_array_module(self.data)
        if grad is None:
            if self.data.size != 1:
                raise OpError(f"backward(): tensor of shape {self.shape} is not a scalar; "
                              "pass grad= of the same shape")
            seed = xp.ones_like(self.data)
        else:
            seed = grad.data if isinstance(grad, Tensor) else xp.asarray(grad, dtype=self.data.dtype)
            if tuple(seed.shape) != self.shape:
                raise OpError(f"backward(): grad of shape {tuple(seed.shape)} does not match "
                              f"tensor of shape {self.shape}")
        if self.creator is None:
            _accumulate_leaf(self, seed)
            _run_grad_ready_hooks(self)
            _run_backward_end_hooks()
            return
        self.grad = Tensor(seed)  # the root keeps its seed, as in Paddle's DyGraph (``loss.gradient()``)
        grads = {id(self): (self, seed)}  # id -> (tensor kept alive, gradient)
        order = _topological_order(self.creator)
        ready = _leaves_ready_after(order) if _grad_ready_hooks else {}
        for position, fn in enumerate(order):
            _backward_through(fn, grads, retain_graph)
            for leaf in ready.get(position, ()):
                _run_grad_ready_hooks(leaf)
        _run_backward_end_hooks()

    # ---- operators and methods (defined in framework.ops) -----------------
    def __add__(self, other): return _ops.add(self, other)
    def __radd__(self, other): return _ops.add(other, self)
    def __sub__(self, other): return _ops.subtract(self, other)
    def __rsub__(self, other): return _ops.subtract(other, self)
    def __mul__(self, other): return _ops.multiply(self, other)
    def __rmul__(self, other): return _ops.multiply(other, self)
    def __truediv__(self, other): return _ops.divide(self, other)
    def __rtruediv__(self, other): return _ops.divide(other, self)
    def __pow__(self, other): return _ops.pow(self, other)
    def __rpow__(self, other): return _ops.pow(other, self)
    def __matmul__(self, other): return _ops.matmul(self, other)
    def __rmatmul__(self, other): return _ops.matmul(other, self)
    def __neg__(self): return _ops.neg(self)
    def __abs__(self): return _ops.abs(self)
    def __getitem__(self, index): return _ops.getitem(self, index)
    def __eq__(self, other): return _ops.equal(self, other)
    def __ne__(self, other): return _ops.not_equal(self, other)
    def __lt__(self, other): return _ops.less_than(self, other)
    def __le__(self, other): return _ops.less_equal(self, other)
    def __gt__(self, other): return _ops.greater_than(self, other)
    def __ge__(self, other): return _ops.greater_equal(self, other)
    __hash__ = object.__hash__

    def __bool__(self):
        if self.data.size != 1:
            raise OpError(f"the truth value of a tensor of shape {self.shape} is ambiguous")
        return bool(self.data.reshape(()).item())

    def __float__(self): return float(self.item())
    def __int__(self): return int(self.item())

    def exp(self): return _ops.exp(self)
    def log(self): return _ops.log(self)
    def sqrt(self): return _ops.sqrt(self)
    def abs(self): return _ops.abs(self)
    def pow(self, exponent): return _ops.pow(self, exponent)
    def clip(self, min=None, max=None): return _ops.clip(self, min, max)
    def tanh(self): return _ops.tanh(self)
    def sigmoid(self): return _ops.sigmoid(self)
    def matmul(self, other): return _ops.matmul(self, other)
    def sum(self, axis=None, keepdim=False): return _ops.sum(self, axis, keepdim)
    def mean(self, axis=None, keepdim=False): return _ops.mean(self, axis, keepdim)
    def max(self, axis=None, keepdim=False): return _ops.max(self, axis, keepdim)
    def min(self, axis=None, keepdim=False): return _ops.min(self, axis, keepdim)
    def var(self, axis=None, keepdim=False, unbiased=True): return _ops.var(self, axis, keepdim, unbiased)
    def logsumexp(self, axis=None, keepdim=False): return _ops.logsumexp(self, axis, keepdim)
    def argmax(self, axis=None, keepdim=False): return _ops.argmax(self, axis, keepdim)
    def argmin(self, axis=None, keepdim=False): return _ops.argmin(self, axis, keepdim)
    def reshape(self, *shape): return _ops.reshape(self, shape[0] if len(shape) == 1 else shape)
    def transpose(self, *perm): return _ops.transpose(self, perm[0] if len(perm) == 1 else perm)
    def flatten(self, start_axis=0, stop_axis=-1): return _ops.flatten(self, start_axis, stop_axis)
    def squeeze(self, axis=None): return _ops.squeeze(self, axis)
    def unsqueeze(self, axis): return _ops.unsqueeze(self, axis)
    def expand(self, *shape): return _ops.expand(self, shape[0] if len(shape) == 1 else shape)
    def tile(self, repeat_times): return _ops.tile(self, repeat_times)
    def flip(self, axis): return _ops.flip(self, axis)
    def split(self, num_or_sections, axis=0): return _ops.split(self, num_or_sections, axis)

    @property
    def T(self):
        return _ops.transpose(self, tuple(range(self.ndim - 1, -1, -1)))


def _backward_through(fn, grads, retain_graph):
    """Propagate the gradients of ``fn``'s outputs (popped from ``grads``) to its inputs."""
    if fn.inputs is None:
        raise OpError(f"backward(): the graph through {type(fn).__name__} was already freed; "
                      "call backward(retain_graph=True) the first time to run it twice")
    outs = [ref() for ref in fn.outputs]
    gys = [None if o is None else grads.pop(id(o), (None, None))[1] for o in outs]
    if all(g is None for g in gys):
        return
    if len(gys) == 1:
        gxs = fn.backward(gys[0])
    else:
        # an output nobody used (or that was already freed) gets a zero gradient of its shape
        gys = [fn.xp.zeros(shape, dtype=dtype) if g is None else g
               for g, (shape, dtype) in zip(gys, fn.output_specs)]
        gxs = fn.backward(*gys)
    if type(gxs) is not tuple:
        gxs = (gxs,)
    for x, gx, need in zip(fn.inputs, gxs, fn.needs_input_grad):
        if gx is None or not need:
            continue
        if gx.shape != x.data.shape:
            raise OpError(f"{type(fn).__name__}.backward returned a gradient of shape "
                          f"{tuple(gx.shape)} for an input of shape {x.shape}")
        if x.creator is None:
            _accumulate_leaf(x, gx)
        else:
            previous = grads.get(id(x))
            grads[id(x)] = (x, gx if previous is None else previous[1] + gx)
    if not retain_graph:
        fn.release()


def _leaves_ready_after(order):
    """``{position in order: [leaves]}``: the hooked leaves whose last consumer is ``order[position]``."""
    last = {}
    for position, fn in enumerate(order):
        for x in fn.inputs or ():
            if x.creator is None and _grad_ready_hooks.get(id(x)):
                last[id(x)] = (position, x)
    ready = {}
    for position, leaf in last.values():
        ready.setdefault(position, []).append(leaf)
    return ready


def _run_grad_ready_hooks(leaf):
    for hook in list(_grad_ready_hooks.get(id(leaf), ())):
        hook(leaf)


def _run_backward_end_hooks():
    for hook in list(_backward_end_hooks):
        hook()


def _accumulate_leaf(leaf, gx):
    if not leaf.requires_grad:
        return
    if leaf.grad is None:
        leaf.grad = Tensor(gx.copy())  # a private copy: backward may hand the same array to several inputs
    else:
        leaf.grad = Tensor(leaf.grad.data + gx)


def _topological_order(root):
    """Functions reachable from ``root``, each after every Function that consumes its outputs."""
    order, visited = [], set()
    stack = [(root, False)]
    while stack:
        fn, done = stack.pop()
        if done:
            order.append(fn)
            continue
        if id(fn) in visited:  # pushed twice: expanded (and finished) through another consumer
            continue
        visited.add(id(fn))  # marked when expanded, not when pushed: every consumer finishes first
        stack.append((fn, True))
        for x in fn.inputs or ():
            parent = x.creator
            if parent is not None and id(parent) not in visited:
                stack.append((parent, False))
    order.reverse()
    return order


def to_tensor(data, dtype=None, device=None, requires_grad=False):
    """Make a Tensor from a list, scalar, NumPy/CuPy array or Tensor.

    Python floats become float32 (as in Paddle); NumPy arrays keep their dtype
    unless ``dtype`` is given. ``device`` defaults to the current device.
    """
    if isinstance(data, Tensor):
        data = data.data
    xp = backend.array_module(device)
    if isinstance(data, (list, tuple, float, int, bool)) and dtype is None:
        probe = numpy.asarray(data)
        dtype = numpy.float32 if probe.dtype == numpy.float64 else probe.dtype
    if xp is numpy and not isinstance(data, numpy.ndarray) and hasattr(data, "get"):
        data = data.get()
    array = xp.array(data, dtype=dtype, copy=True)
    if requires_grad and array.dtype.kind != "f":
        raise OpError(f"to_tensor(): requires_grad needs a float dtype, got {array.dtype}")
    return Tensor(array, requires_grad=requires_grad)


from . import ops as _ops  # noqa: E402  (ops import Tensor and Function from this module)
