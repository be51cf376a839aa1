"""Layer, Parameter, ParamAttr and the containers Sequential, LayerList, LayerDict.

A :class:`Layer` finds its Parameters, buffers and sublayers by attribute
assignment (``self.fc = Linear(4, 2)``), so their names are attribute paths:
``layer1.0.conv1.weight``. ``state_dict()`` maps those names to the parameters
and persistable buffers; ``set_state_dict()`` loads them back after checking
every key and shape.
"""
import collections
import contextlib
import itertools
import re

import numpy

from .. import backend
from ..tensor import Tensor
from . import initializer as init
from ..errors import UserError

__all__ = ["Parameter", "ParamAttr", "Layer", "Sequential", "LayerList", "LayerDict", "StateDictError",
           "observe_layer_calls"]


class StateDictError(UserError, ValueError):
    """A state dict does not fit a layer; the message lists every key at fault."""


class Parameter(Tensor):
    """A Tensor that a Layer owns and an optimizer updates.

    ``requires_grad`` is True unless the parameter is frozen: ``trainable``
    is the same flag under Paddle's name. ``learning_rate`` scales the
    optimizer's rate for this parameter (from :class:`ParamAttr`).
    """

    def __init__(self, data, trainable=True, name=None, learning_rate=1.0):
        super().__init__(data, requires_grad=bool(trainable), name=name)
        self.learning_rate = float(learning_rate)

    @property
    def trainable(self):
        """Whether the optimizer updates this parameter (``not stop_gradient``)."""
        return self.requires_grad

    @trainable.setter
    def trainable(self, value):
        self.requires_grad = bool(value)

    def __repr__(self):
        return f"Parameter containing:\n{super().__repr__()}"


class ParamAttr:
    """How to create one parameter (Paddle's ``ParamAttr``).

    Args:
        name: the parameter's name (default: ``<layer full name>.w_<k>`` or ``.b_<k>``).
        initializer: an :mod:`~framework.nn.initializer` instance (default: the layer's).
        learning_rate: multiplier on the optimizer's learning rate for this parameter.
        trainable: False freezes the parameter.
    """

    def __init__(self, name=None, initializer=None, learning_rate=1.0, trainable=True):
        self.name, self.initializer = name, initializer
        self.learning_rate, self.trainable = float(learning_rate), bool(trainable)

    @staticmethod
    def resolve(attr):
        """``attr`` as a ParamAttr, or None when it is False (no parameter at all).

        Accepts None (defaults), False, a ParamAttr, an Initializer or a name string.
        """
        if attr is False:
            return None
        if attr is None:
            return ParamAttr()
        if isinstance(attr, ParamAttr):
            return attr
        if isinstance(attr, init.Initializer):
            return ParamAttr(initializer=attr)
        if isinstance(attr, str):
            return ParamAttr(name=attr)
        raise TypeError(f"ParamAttr: expected None, False, a ParamAttr, an Initializer or a name, got {attr!r}")


_name_counters = collections.defaultdict(itertools.count)
# context-manager factories observer(layer) entered around each Layer call; see observe_layer_calls
_call_observers = []


@contextlib.contextmanager
def observe_layer_calls(observer):
    """Within the context, every ``layer(...)`` call runs inside ``with observer(layer):`` (innermost observer
    only); ``framework.jit`` uses it to name the layer an op was recorded in."""
    _call_observers.append(observer)
    try:
        yield
    finally:
        _call_observers.remove(observer)


def _snake_case(name):
    return re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", name).lower()


class Layer:
    """Base class of every layer: subclasses set attributes in ``__init__`` and define ``forward``.

    Parameters, buffers and sublayers assigned as attributes are registered in
    order (``_parameters``, ``_buffers``, ``_sub_layers``). ``training`` is True
    after construction and switched by :meth:`train` / :meth:`eval`.

    Args:
        name_scope: prefix of :meth:`full_name` (default: the class name in snake case).
        dtype: default dtype of :meth:`create_parameter`.
    """

    def __init__(self, name_scope=None, dtype="float32"):
        object.__setattr__(self, "_parameters", collections.OrderedDict())
        object.__setattr__(self, "_buffers", collections.OrderedDict())
        object.__setattr__(self, "_non_persistable_buffer_names", set())
        object.__setattr__(self, "_sub_layers", collections.OrderedDict())
        self.training = True
        self._dtype = dtype
        scope = name_scope or _snake_case(type(self).__name__)
        self._full_name = f"{scope}_{next(_name_counters[scope])}"
        self._param_counts = collections.Counter()

    # ---- call ---------------------------------------------------------------
    def forward(self, *inputs, **kwargs):
        """The layer's computation; subclasses override it."""
        raise NotImplementedError(f"{type(self).__name__} does not define forward()")

    def __call__(self, *inputs, **kwargs):
        if not _call_observers:
            return self.forward(*inputs, **kwargs)
        with _call_observers[-1](self):
            return self.forward(*inputs, **kwargs)

    def full_name(self):
        """A name unique in this process, e.g. ``linear_0``."""
        return self._full_name

    # ---- registration ---------------------------------------------------------
    def _registries(self):
        try:
            return self.__dict__["_parameters"], self.__dict__["_buffers"], self.__dict__["_sub_layers"]
        except KeyError:
            raise AttributeError(f"{type(self).__name__}: call super().__init__() before assigning "
                                 "parameters, buffers or sublayers") from None

    def __setattr__(self, name, value):
        if isinstance(value, (Parameter, Layer)):
            params, buffers, layers = self._registries()
            target = params if isinstance(value, Parameter) else layers
            for registry in (params, buffers, layers):
                if registry is not target:
                    registry.pop(name, None)
            self.__dict__.pop(name, None)
            target[name] = value  # a re-assigned name keeps its position
            return
        registries = self.__dict__.get("_parameters"), self.__dict__.get("_buffers"), self.__dict__.get("_sub_layers")
        params, buffers, layers = registries
        if buffers is not None and name in buffers:
            if value is not None and not isinstance(value, Tensor):
                raise TypeError(f"{type(self).__name__}.{name} is a buffer: assign a Tensor or None, "
                                f"not {type(value).__name__}")
            buffers[name] = value
            return
        if params is not None and name in params:
            if value is not None:
                raise TypeError(f"{type(self).__name__}.{name} is a Parameter: assign a Parameter or None, "
                                f"not {type(value).__name__}")
            params[name] = None
            return
        if layers is not None and name in layers:
            del layers[name]
        object.__setattr__(self, name, value)

    def __getattr__(self, name):
        registries = [self.__dict__.get(k) for k in ("_parameters", "_buffers", "_sub_layers")]
        for registry in registries:
            if registry is not None and name in registry:
                return registry[name]
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def __delattr__(self, name):
        for registry in self._registries():
            if name in registry:
                del registry[name]
                self._non_persistable_buffer_names.discard(name)
                return
        object.__delattr__(self, name)

    def __dir__(self):
        return sorted(set(super().__dir__()) | set(itertools.chain(*self._registries())))

    def create_parameter(self, shape, dtype=None, default_initializer=None, is_bias=False, attr=None):
        """A new Parameter of ``shape`` on the current device (not yet registered: assign it).

        The initializer is ``attr.initializer`` if given, else ``default_initializer``,
        else zeros for a bias and XavierUniform for a weight (Paddle's defaults).
        Returns None when ``attr`` is False (the layer has no such parameter).
        """
        attr = ParamAttr.resolve(attr)
        if attr is None:
            return None
        initializer = attr.initializer or default_initializer or (init.Constant(0.0) if is_bias
                                                                  else init.XavierUniform())
        kind = "b" if is_bias else "w"
        name = attr.name or f"{self._full_name}.{kind}_{self._param_counts[kind]}"
        self._param_counts[kind] += 1
        data = initializer(shape, dtype or self._dtype, backend.array_module())
        return Parameter(data, trainable=attr.trainable, name=name, learning_rate=attr.learning_rate)

    def add_parameter(self, name, parameter):
        """Register ``parameter`` (a Parameter or None) under ``name``; returns it."""
        if parameter is not None and not isinstance(parameter, Parameter):
            raise TypeError(f"add_parameter({name!r}): expected a Parameter, got {type(parameter).__name__}")
        params, _, _ = self._registries()
        if parameter is None:
            params[name] = None
        else:
            setattr(self, name, parameter)
        return parameter

    def add_sublayer(self, name, sublayer):
        """Register ``sublayer`` under ``name`` (any string, e.g. '0'); returns it."""
        if not isinstance(sublayer, Layer):
            raise TypeError(f"add_sublayer({name!r}): expected a Layer, got {type(sublayer).__name__}")
        setattr(self, str(name), sublayer)
        return sublayer

    def register_buffer(self, name, tensor, persistable=True):
        """Register ``tensor`` (a Tensor or None) as state that is not a Parameter.

        Persistable buffers (BatchNorm's running statistics) are part of
        :meth:`state_dict`; others are only moved by :meth:`to`.
        """
        if tensor is not None and (not isinstance(tensor, Tensor) or isinstance(tensor, Parameter)):
            raise TypeError(f"register_buffer({name!r}): expected a Tensor or None, got {type(tensor).__name__}")
        params, buffers, layers = self._registries()
        params.pop(name, None)
        layers.pop(name, None)
        self.__dict__.pop(name, None)
        buffers[name] = tensor
        if persistable:
            self._non_persistable_buffer_names.discard(name)
        else:
            self._non_persistable_buffer_names.add(name)

    # ---- traversal ------------------------------------------------------------
    def named_sublayers(self, prefix="", include_self=False):
        """Yield ``(dotted name, layer)`` for every sublayer, depth first, each layer once."""
        seen = set()
        stack = [(prefix, self)]
        while stack:
            name, layer = stack.pop()
            if id(layer) in seen:
                continue
            seen.add(id(layer))
            if layer is not self or include_self:
                yield name, layer
            children = [(f"{name}.{key}" if name else key, child)
                        for key, child in layer._sub_layers.items() if child is not None]
            stack.extend(reversed(children))

    def sublayers(self, include_self=False):
        """Every sublayer (recursively) as a list."""
        return [layer for _, layer in self.named_sublayers(include_self=include_self)]

    def named_children(self):
        """Yield ``(name, layer)`` for the direct sublayers."""
        for name, layer in self._sub_layers.items():
            if layer is not None:
                yield name, layer

    def children(self):
        """Yield the direct sublayers."""
        for _, layer in self.named_children():
            yield layer

    def _named_members(self, registry, prefix, include_sublayers, unique=True):
        layers = self.named_sublayers(prefix, include_self=True) if include_sublayers else [(prefix, self)]
        seen = set()
        for layer_name, layer in layers:
            for key, value in getattr(layer, registry).items():
                if value is None or (unique and id(value) in seen):
                    continue
                seen.add(id(value))
                yield (f"{layer_name}.{key}" if layer_name else key), value

    def named_parameters(self, prefix="", include_sublayers=True):
        """Yield ``(name, Parameter)``; a parameter shared by two layers comes once."""
        return self._named_members("_parameters", prefix, include_sublayers)

    def parameters(self, include_sublayers=True):
        """All Parameters as a list, in registration order, each once."""
        return [p for _, p in self.named_parameters(include_sublayers=include_sublayers)]

    def named_buffers(self, prefix="", include_sublayers=True):
        """Yield ``(name, Tensor)`` for every buffer."""
        return self._named_members("_buffers", prefix, include_sublayers)

    def buffers(self, include_sublayers=True):
        """All buffers as a list."""
        return [b for _, b in self.named_buffers(include_sublayers=include_sublayers)]

    def apply(self, fn):
        """Call ``fn(layer)`` on every sublayer and then on this layer; returns self."""
        for layer in reversed(self.sublayers()):
            fn(layer)
        fn(self)
        return self

    # ---- modes --------------------------------------------------------------
    def train(self, mode=True):
        """Switch this layer and its sublayers to training mode (``mode=False``: eval); returns self.

        Each direct child switches through its own ``train``, so a sublayer that keeps parts of itself in
        eval mode (a backbone's frozen stages, ``norm_eval``) does so inside any model that holds it.
        """
        self.training = bool(mode)
        for child in self.children():
            child.train(mode)
        return self

    def eval(self):
        """Switch to evaluation mode (dropout off, BatchNorm uses running statistics); returns self."""
        return self.train(False)

    def clear_gradients(self):
        """Drop the gradient of every parameter."""
        for p in self.parameters():
            p.grad = None

    clear_grad = clear_gradients

    # ---- state --------------------------------------------------------------
    def state_dict(self, prefix=""):
        """An ordered dict ``name -> Tensor`` of every parameter and persistable buffer.

        Values are the live Parameters/buffers (not copies); a shared parameter
        appears under each of its names.
        """
        state = collections.OrderedDict()
        for layer_name, layer in self.named_sublayers(prefix, include_self=True):
            dotted = f"{layer_name}." if layer_name else ""
            for key, p in layer._parameters.items():
                if p is not None:
                    state[dotted + key] = p
            for key, b in layer._buffers.items():
                if b is not None and key not in layer._non_persistable_buffer_names:
                    state[dotted + key] = b
        return state

    def set_state_dict(self, state_dict, strict=True):
        """Copy values from ``state_dict`` (name -> Tensor or array) into this layer.

        Every value is checked first and nothing is changed unless all fit: with
        ``strict`` a missing or unexpected key is an error; a shape mismatch always
        is. The error lists every problem, naming the key and both shapes. Values
        are cast to the parameter's dtype and moved to its device.

        Returns:
            (missing_keys, unexpected_keys), both lists (empty when strict).
        """
        own = self.state_dict()
        missing = [k for k in own if k not in state_dict]
        unexpected = [k for k in state_dict if k not in own]
        problems = [f"missing key {k!r} (expected shape {own[k].shape})" for k in missing] if strict else []
        if strict:
            problems += [f"unexpected key {k!r} (shape {_shape_of(state_dict[k])})" for k in unexpected]
        for key, target in own.items():
            if key in state_dict and _shape_of(state_dict[key]) != target.shape:
                problems.append(f"shape mismatch for {key!r}: the checkpoint has {_shape_of(state_dict[key])}, "
                                f"the layer expects {target.shape}")
        if problems:
            raise StateDictError(f"{type(self).__name__}.set_state_dict: {len(problems)} problem(s):\n  "
                                 + "\n  ".join(problems))
        for key, target in own.items():
            if key in state_dict:
                target.data = _converted(state_dict[key], target.data)
        return missing, unexpected

    load_dict = set_state_dict
    set_dict = set_state_dict

    def to(self, device=None, dtype=None):
        """Move every parameter and buffer (and gradients) to ``device``, and/or cast
        the floating ones to ``dtype``, in place; returns self."""
        for tensor in itertools.chain(self.parameters(), self.buffers()):
            for holder in (tensor, tensor.grad):
                if holder is None:
                    continue
                if device is not None:
                    holder.data = backend.to_device(holder.data, device)
                if dtype is not None and holder.data.dtype.kind == "f":
                    holder.data = holder.data.astype(dtype)
        if dtype is not None:
            self.apply(lambda layer: setattr(layer, "_dtype", numpy.dtype(dtype).name))
        return self

    def astype(self, dtype):
        """Cast floating parameters and buffers to ``dtype``; returns self."""
        return self.to(dtype=dtype)

    # ---- printing -----------------------------------------------------------
    def extra_repr(self):
        """The hyperparameters shown inside ``Name(...)``; subclasses override it."""
        return ""

    def __repr__(self):
        lines = [f"({name}): " + repr(layer).replace("\n", "\n  ") for name, layer in self.named_children()]
        head = f"{type(self).__name__}({self.extra_repr()}"
        if not lines:
            return head + ")"
        return head + "\n  " + "\n  ".join(lines) + "\n)"


def _shape_of(value):
    """The shape of a state-dict value (Tensor, NumPy/CuPy array, list or scalar) as a tuple."""
    if isinstance(value, Tensor) or hasattr(value, "shape"):
        return tuple(int(n) for n in value.shape)
    return numpy.shape(value)


def _converted(value, like):
    """``value`` as a fresh array with ``like``'s dtype, on ``like``'s device."""
    array = value.data if isinstance(value, Tensor) else value
    if not hasattr(array, "shape"):
        array = numpy.asarray(array)
    array = backend.to_device(array, backend.device_of(like))
    xp = backend.get_array_module(like)
    return xp.array(array, dtype=like.dtype, copy=True)


class Sequential(Layer):
    """Layers applied one after another: ``Sequential(Linear(4, 8), ReLU(), Linear(8, 2))``.

    Also takes one OrderedDict, or ``(name, layer)`` pairs, to name the layers;
    otherwise they are named '0', '1', … Supports ``len``, iteration and
    indexing (an int gives a layer, a slice a new Sequential).
    Shapes: whatever the first layer takes -> whatever the last returns.
    """

    def __init__(self, *layers):
        super().__init__()
        if len(layers) == 1 and isinstance(layers[0], dict):
            items = list(layers[0].items())
        elif layers and all(isinstance(item, (tuple, list)) and len(item) == 2 for item in layers):
            items = list(layers)
        else:
            items = [(str(i), layer) for i, layer in enumerate(layers)]
        for name, layer in items:
            self.add_sublayer(name, layer)

    def forward(self, x):
        for layer in self._sub_layers.values():
            x = layer(x)
        return x

    def __getitem__(self, index):
        layers = list(self._sub_layers.items())
        if isinstance(index, slice):
            return Sequential(collections.OrderedDict(layers[index]))
        if isinstance(index, str):
            return self._sub_layers[index]
        return layers[_checked_index(index, len(layers), "Sequential")][1]

    def __len__(self):
        return len(self._sub_layers)

    def __iter__(self):
        return iter(self._sub_layers.values())


def _checked_index(index, length, owner):
    index = int(index)
    if not -length <= index < length:
        raise IndexError(f"{owner}: index {index} is out of range for {length} layers")
    return index % length


class LayerList(Layer):
    """A list of sublayers named '0', '1', …: ``append``, ``extend``, ``insert``,
    indexing (a slice gives a new LayerList), ``len`` and iteration. It has no
    forward; the owning layer decides how to call its elements."""

    def __init__(self, sublayers=None):
        super().__init__()
        self.extend(sublayers or ())

    def _layers(self):
        return list(self._sub_layers.values())

    def _reset(self, layers):
        self._sub_layers.clear()
        for i, layer in enumerate(layers):
            self.add_sublayer(str(i), layer)

    def append(self, sublayer):
        """Add ``sublayer`` at the end; returns self."""
        self.add_sublayer(str(len(self)), sublayer)
        return self

    def extend(self, sublayers):
        """Append every layer of ``sublayers``; returns self."""
        for layer in sublayers:
            self.append(layer)
        return self

    def insert(self, index, sublayer):
        """Insert ``sublayer`` before position ``index``."""
        layers = self._layers()
        layers.insert(index, sublayer)
        self._reset(layers)

    def __getitem__(self, index):
        layers = self._layers()
        if isinstance(index, slice):
            return LayerList(layers[index])
        return layers[_checked_index(index, len(layers), "LayerList")]

    def __setitem__(self, index, sublayer):
        self.add_sublayer(str(_checked_index(index, len(self), "LayerList")), sublayer)

    def __delitem__(self, index):
        layers = self._layers()
        if isinstance(index, slice):
            del layers[index]
        else:
            del layers[_checked_index(index, len(layers), "LayerList")]
        self._reset(layers)

    def __len__(self):
        return len(self._sub_layers)

    def __iter__(self):
        return iter(self._layers())


class LayerDict(Layer):
    """An ordered mapping ``name -> Layer`` registered as sublayers: indexing,
    assignment, ``del``, ``in``, ``len``, iteration over keys, ``keys``/``values``/
    ``items``, ``update`` and ``pop``."""

    def __init__(self, sublayers=None):
        super().__init__()
        self.update(sublayers or {})

    def __getitem__(self, key):
        return self._sub_layers[key]

    def __setitem__(self, key, sublayer):
        self.add_sublayer(key, sublayer)

    def __delitem__(self, key):
        del self._sub_layers[key]

    def __contains__(self, key):
        return key in self._sub_layers

    def __len__(self):
        return len(self._sub_layers)

    def __iter__(self):
        return iter(self._sub_layers)

    def keys(self):
        return self._sub_layers.keys()

    def values(self):
        return self._sub_layers.values()

    def items(self):
        return self._sub_layers.items()

    def update(self, sublayers):
        """Add every ``(name, layer)`` of a mapping or of a sequence of pairs."""
        pairs = sublayers.items() if isinstance(sublayers, dict) else sublayers
        for key, layer in pairs:
            self[key] = layer

    def pop(self, key):
        """Remove ``key`` and return its layer."""
        return self._sub_layers.pop(key)
