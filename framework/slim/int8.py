"""Post-training int8 quantisation of a model: find the weights, calibrate the activations, convert the layers.

1. :func:`find_sites` runs the model once on a batch and records every op that
   reads a model parameter as its weight: convolutions and linear maps (weight
   per output channel, the input activation per tensor), embeddings (one scale
   per row, no activation: a lookup has no arithmetic to quantise) and LSTM/GRU
   recurrent weights (per gate column, stored as int8 and dequantised: no
   runtime here has an int8 recurrence that takes static weights, see
   docs/ARCHITECTURE.md).
2. :func:`calibrate` runs the calibration batches and returns one activation
   scale per site that quantises its input (:mod:`framework.slim.quant` observers).
3. :func:`convert` turns each site's layer into its int8 form in place: the
   parameter becomes two buffers ``<name>_int8`` (int8) and ``<name>_scale``
   (float32 per channel), reading the attribute gives the dequantised weight
   (:class:`~framework.slim.ops.DequantizeWeight`), and a layer whose input is
   quantised gets an ``input_scale`` buffer and rounds its first argument to the
   int8 grid (:class:`~framework.slim.ops.FakeQuantize`) before its own forward.

The *recipe* (``{"weights": {param name: {"axis", "activation"}}, "method"}``)
records what was converted; :func:`prepare` gives a freshly built model the same
layout, so an int8 checkpoint loads into the model its config builds.
"""
import numpy

from .. import backend
from ..ops.common import Embedding
from ..ops.conv import ConvNd
from ..ops.linalg import Linear
from ..ops.rnn import DynamicGRU, DynamicLSTM, SequenceLinear
from ..nn.layer import Parameter
from ..registry import OpTable
from ..tensor import Tensor, no_grad, observe_ops
from .errors import SlimError
from .ops import dequantize, quantize_activation
from .quant import observer, quantize_weight

__all__ = ["quantize", "find_sites", "calibrate", "convert", "keep_reached_activations", "prepare", "SITE_OPS",
           "RECURRENT_SITE_OPS"]

# op class -> (channel axis of its weight, input 1, whether the op's first input is quantised)
SITE_OPS = OpTable("int8 sites", {ConvNd: (0, True), Linear: (1, True), SequenceLinear: (1, True),
                                  Embedding: (0, False)})
# GRU/LSTM ops: their 2-D parameter inputs are recurrent weights with the gates along axis 1 (int8, input float)
RECURRENT_SITE_OPS = OpTable("int8 recurrent sites", {DynamicGRU: (1, False), DynamicLSTM: (1, False)})


def _weights_read(cls, inputs, names):
    """``[(param name, axis, activation)]`` of the weights one op call reads."""
    if cls in SITE_OPS:
        name = names.get(id(inputs[1])) if len(inputs) > 1 else None
        return [(name, *SITE_OPS[cls])] if name else []
    if cls in RECURRENT_SITE_OPS:
        return [(names[id(t)], *RECURRENT_SITE_OPS[cls]) for t in inputs
                if id(t) in names and t.ndim == 2 and min(t.shape) > 1]
    return []


def find_sites(model, run_batch, batch):
    """``{param name: {"axis", "activation"}}`` of the weights ``run_batch(batch)`` (one forward of the model)
    reads through a quantisable op (module docstring), in the order they are first used."""
    names = {id(p): name for name, p in model.named_parameters()}
    sites = {}

    def seen(cls, inputs, attrs, result):
        for name, axis, activation in _weights_read(cls, inputs, names):
            sites.setdefault(name, {"axis": axis, "activation": activation})

    with no_grad(), observe_ops(seen):
        run_batch(batch)
    return sites


def calibrate(model, run_batch, batches, sites, method="abs_max"):
    """``{param name: activation scale}`` for the sites whose input is quantised, from ``batches`` (a list
    given to ``run_batch`` one by one) with the observer ``method``; an empty list, or batches that never
    reach a site, is a SlimError."""
    if not batches:
        raise SlimError("quant.calibration: the calibration set is empty; give at least one batch of samples")
    wanted = {name for name, site in sites.items() if site["activation"]}
    params = {id(p): name for name, p in model.named_parameters() if name in wanted}
    observers = {name: observer(method) for name in wanted}
    passes = max((o.passes for o in observers.values()), default=1)
    for step in range(passes):
        first_of_two = passes == 2 and step == 0

        def seen(cls, inputs, attrs, result):
            if cls in SITE_OPS and len(inputs) > 1 and id(inputs[1]) in params:
                target = observers[params[id(inputs[1])]]
                x = backend.to_device(inputs[0].data, "cpu")
                (target.observe_range if first_of_two else target.observe)(x)

        with no_grad(), observe_ops(seen):
            for batch in batches:
                run_batch(batch)
    missing = [name for name, o in observers.items() if o.amax == 0]
    if missing:
        raise SlimError(f"quant.calibration: the calibration batches gave only zeros (or never reached) "
                        f"{missing[0]}; are they samples of this model's kind?")
    return {name: float(o.scale()) for name, o in observers.items()}


class _Int8Layer:
    """Mixin of a converted layer (module docstring): int8 weights read back dequantised, input rounded."""

    def __getattr__(self, name):
        axes = self.__dict__.get("_int8_axes", {})
        if name in axes:
            buffers = self.__dict__["_buffers"]
            return dequantize(buffers[f"{name}_int8"], buffers[f"{name}_scale"], axes[name])
        return super().__getattr__(name)

    def forward(self, x, *args, **kwargs):
        scale = self.__dict__["_buffers"].get("input_scale")
        self.__dict__["_int8_called"] = True
        if scale is not None:
            x = quantize_activation(x, scale)
        return super().forward(x, *args, **kwargs)


_CLASSES = {}


def _int8_class(cls):
    if issubclass(cls, _Int8Layer):
        return cls
    if cls not in _CLASSES:
        _CLASSES[cls] = type(f"Int8{cls.__name__}", (_Int8Layer, cls), {"__module__": __name__})
    return _CLASSES[cls]


def _owner(model, name):
    path, _, attr = name.rpartition(".")
    layers = dict(model.named_sublayers(include_self=True))
    if path not in layers:
        raise SlimError(f"quant: the model has no layer {path!r} (for weight {name!r})")
    return layers[path], attr


def _convert_one(layer, attr, axis, q, scale, input_scale):
    layer.__class__ = _int8_class(type(layer))
    del layer.__dict__["_parameters"][attr]
    layer.__dict__.setdefault("_int8_axes", {})[attr] = axis
    layer.register_buffer(f"{attr}_int8", Tensor(q))
    layer.register_buffer(f"{attr}_scale", Tensor(scale))
    if input_scale is not None:
        layer.register_buffer("input_scale", Tensor(input_scale))


def convert(model, sites, scales):
    """Quantise the weights of ``sites`` in place (module docstring) with the activation ``scales`` from
    :func:`calibrate`; returns the recipe."""
    xp_of = {name: backend.get_array_module(p.data) for name, p in model.named_parameters()}
    for name, site in sites.items():
        layer, attr = _owner(model, name)
        weight = layer.__dict__["_parameters"][attr]
        xp = xp_of[name]
        q, scale = quantize_weight(backend.to_device(weight.data, "cpu"), site["axis"])
        input_scale = scales.get(name) if site["activation"] else None
        _convert_one(layer, attr, site["axis"], xp.asarray(q), xp.asarray(scale),
                     None if input_scale is None else xp.asarray(input_scale, dtype=xp.float32))
    return {"weights": {name: {"axis": int(s["axis"]), "activation": bool(s["activation"] and name in scales)}
                        for name, s in sites.items()}}


def keep_reached_activations(model, recipe, run_batch, batch):
    """Drop the input rounding of the converted layers whose own forward ``run_batch(batch)`` never calls
    (their parent reads the weight and calls the op itself, as a GRU/LSTM layer does with its input
    projection): their weight stays int8, their input float. Updates and returns ``recipe``."""
    layers = dict(model.named_sublayers(include_self=True))
    for layer in layers.values():
        layer.__dict__.pop("_int8_called", None)
    with no_grad():
        run_batch(batch)
    for name, site in recipe["weights"].items():
        layer, _ = _owner(model, name)
        if site["activation"] and not layer.__dict__.get("_int8_called"):
            del layer.__dict__["_buffers"]["input_scale"]
            site["activation"] = False
    return recipe


def quantize(model, run_batch, batches, method="abs_max"):
    """Post-training int8 quantisation of ``model`` in place (module docstring, steps 1-3) with the
    calibration ``batches`` (each given to ``run_batch``); returns the recipe."""
    if not batches:
        raise SlimError("quant.calibration: the calibration set is empty; give at least one batch of samples")
    sites = find_sites(model, run_batch, batches[0])
    if not sites:
        raise SlimError("quant: the model reads no weight through a convolution, linear map, embedding or "
                        "recurrence; there is nothing to quantise")
    recipe = convert(model, sites, calibrate(model, run_batch, batches, sites, method))
    recipe["method"] = method
    return keep_reached_activations(model, recipe, run_batch, batches[0])


def prepare(model, recipe):
    """Give a freshly built ``model`` the int8 layout of ``recipe`` (zeros, to be loaded over); returns it."""
    for name, site in recipe["weights"].items():
        layer, attr = _owner(model, name)
        weight = layer.__dict__["_parameters"].get(attr)
        if not isinstance(weight, Parameter):
            raise SlimError(f"quant: {name!r} is not a parameter of this model")
        channels = weight.shape[site["axis"]]
        _convert_one(layer, attr, site["axis"], numpy.zeros(weight.shape, numpy.int8),
                     numpy.ones(channels, numpy.float32),
                     numpy.ones((), numpy.float32) if site["activation"] else None)
    return model
