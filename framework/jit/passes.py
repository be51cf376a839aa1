"""Graph passes over a traced :class:`~framework.jit.program.Program`, run by ``trace`` in this order:

- ``remove_identities``: a copy (``Identity``) or a cast to the dtype it already
  has reads as its input. (Dropout leaves no op to remove: a layer is traced in
  eval mode, where dropout is the identity.)
- ``fold_batch_norm``: an eval-mode batch norm whose input is a convolution's
  or a linear map's output read by nothing else is folded into that op's weight
  and bias (computed in float64, stored in the weight's dtype): one op and one
  pass over the activations fewer. The result differs from the unfolded one by
  rounding (within 1e-5 relative in float32).
- ``fuse_batch_norm`` (exact; not in :data:`DEFAULT_PASSES`, see :data:`INFERENCE_PASSES`): an eval-mode
  batch norm left unfolded becomes one :class:`~framework.ops.norm.ChannelAffine` op with its scale and shift
  computed once, here, by the batch norm's own arithmetic (:func:`~framework.ops.norm.eval_scale_shift`), and
  a ReLU that alone reads it is folded into that op: the same bits as the two ops, with neither the per-call
  statistics nor a second pass over the activations.
- ``fold_constants``: an op whose inputs are all values (parameters or
  constants) and whose attributes do not follow the input sizes runs once, at
  trace time; its outputs become values (a transposed weight, a CRF transition
  plus a constraint table).
- ``eliminate_dead_code``: ops whose outputs nothing reads, and values no op
  reads, are dropped.

Each pass takes and returns a Program; it only rewires slots, so the replay
stays exactly the eager computation apart from ``fold_batch_norm``'s rounding.

:data:`DEFAULT_PASSES`: every pass but ``fuse_batch_norm`` (what ONNX export and the pruning analysis read:
batch norms folded or kept as they are); :data:`EXACT_PASSES`: those less ``fold_batch_norm`` (replay ==
eager bit for bit, batch norms still visible); :data:`INFERENCE_PASSES`: the exact passes and
``fuse_batch_norm`` (what a loaded model runs: still eager's bits, fewer ops).
"""
import dataclasses

import numpy

from .. import backend
from ..ops.conv import ConvNd
from ..ops.linalg import Linear
from ..ops.activation import ReLU
from ..ops.math import Cast, Identity
from ..ops.norm import BatchNorm, ChannelAffine, eval_scale_shift
from .template import Ref, follows_sizes, has_markers, ref_slots, resolve

__all__ = ["optimize", "DEFAULT_PASSES", "EXACT_PASSES", "INFERENCE_PASSES", "PASSES"]


def remove_identities(program):
    """Drop copies and no-op casts (module docstring)."""
    kept, renames = [], {}
    for node in program:
        source = node.inputs[0] if node.inputs else None
        spec = program.slot_specs.get(source)
        if node.cls is Identity or (node.cls is Cast and spec is not None
                                    and numpy.dtype(node.attrs.get("dtype")) == spec.dtype):
            renames[node.outputs[0]] = renames.get(source, source)
            continue
        kept.append(node)
    return program.replace_nodes(kept, renames)


def _folded_weights(producer, weight, bias, mean, var, gamma, beta, epsilon):
    """The producer's (weight, bias) with the batch norm folded in, in float64 then the weight's dtype."""
    scale = gamma.astype(numpy.float64) / numpy.sqrt(var.astype(numpy.float64) + epsilon)
    base = numpy.zeros_like(scale) if bias is None else bias.astype(numpy.float64)
    new_bias = (base - mean.astype(numpy.float64)) * scale + beta.astype(numpy.float64)
    if producer is ConvNd:                                   # weight (O, C/g, *k): scale each output filter
        new_weight = weight.astype(numpy.float64) * scale.reshape((-1,) + (1,) * (weight.ndim - 1))
    else:                                                    # Linear weight (in, out): scale each output column
        new_weight = weight.astype(numpy.float64) * scale
    return new_weight.astype(weight.dtype), new_bias.astype(weight.dtype)


def _fixed_statistics(program, node):
    """The (running mean, running variance) arrays of ``node`` when it is an eval-mode batch norm whose
    statistics, weight and bias are all program values (so it can be computed ahead), else None."""
    fixed = node.attrs.get("fixed") if node.cls is BatchNorm else None
    if fixed is None or not (all(program.is_value(s) for s in node.inputs[1:])
                             and all(isinstance(r, Ref) and program.is_value(r.slot) for r in fixed)):
        return None
    return tuple(program.value(r.slot) for r in fixed)


def fold_batch_norm(program):
    """Fold eval-mode batch norms into the convolution or linear map before them (module docstring)."""
    producers = program.producers()
    readers = program.read_counts()
    kept, renames, folded = [], {}, {}                      # folded: id(producer) -> its new weight and bias slots
    for node in program:
        statistics = _fixed_statistics(program, node)
        producer = producers.get(node.inputs[0]) if statistics is not None else None
        foldable = (producer is not None and producer.cls in (ConvNd, Linear) and not producer.multi
                    and id(producer) not in folded
                    and readers.get(node.inputs[0]) == 1 and not has_markers(producer.attrs)
                    and all(program.is_value(s) for s in producer.inputs[1:])
                    and (producer.cls is ConvNd or len(program.spec(node.inputs[0]).shape) == 2))
        if not foldable:
            kept.append(node)
            continue
        host = {s: backend.to_device(program.value(s), "cpu") for s in producer.inputs[1:] + node.inputs[1:]}
        weight = host[producer.inputs[1]]
        bias = host[producer.inputs[2]] if len(producer.inputs) > 2 else None
        mean, var = (backend.to_device(a, "cpu") for a in statistics)
        new_weight, new_bias = _folded_weights(producer.cls, weight, bias, mean, var, host[node.inputs[1]],
                                               host[node.inputs[2]], node.attrs["epsilon"])
        device = backend.device_of(program.value(producer.inputs[1]))
        scope = producer.scope or node.scope
        folded[id(producer)] = (program.add_value(backend.to_device(new_weight, device), f"{scope}.folded_weight"),
                                program.add_value(backend.to_device(new_bias, device), f"{scope}.folded_bias"))
        renames[node.outputs[0]] = producer.outputs[0]
    kept = [dataclasses.replace(n, inputs=(n.inputs[0],) + folded[id(n)]) if id(n) in folded else n for n in kept]
    return program.replace_nodes(kept, renames)


def fuse_batch_norm(program):
    """Eval-mode batch norms (and a ReLU reading one alone) to :class:`ChannelAffine` ops (module docstring)."""
    readers = program.read_counts()
    kept, renames, fused = [], {}, {}                       # fused: the batch norm's output slot -> its new node
    for node in program:
        if node.cls is ReLU and node.inputs[0] in fused and readers.get(node.inputs[0]) == 1:
            index = fused.pop(node.inputs[0])
            kept[index] = dataclasses.replace(kept[index], attrs={"relu": True})
            renames[node.outputs[0]] = node.inputs[0]
            continue
        statistics = _fixed_statistics(program, node)
        if statistics is None:
            kept.append(node)
            continue
        weight, bias = (program.value(s) for s in node.inputs[1:])
        scale, shift, _, _ = eval_scale_shift(backend.get_array_module(weight), *statistics, weight, bias,
                                              node.attrs["epsilon"], program.spec(node.inputs[0]).dtype)
        slots = (program.add_value(scale, f"{node.scope}.fused_scale"),
                 program.add_value(shift, f"{node.scope}.fused_shift"))
        fused[node.outputs[0]] = len(kept)
        kept.append(dataclasses.replace(node, cls=ChannelAffine, inputs=(node.inputs[0],) + slots,
                                        attrs={"relu": False}))
    return program.replace_nodes(kept, renames)


def fold_constants(program):
    """Run, once, every op whose inputs are all values (module docstring)."""
    kept = []
    for node in program:
        reads = node.inputs + tuple(ref_slots(node.attrs))
        if not reads or not all(program.is_value(s) for s in reads) or follows_sizes(node.attrs):
            kept.append(node)
            continue
        arrays = [program.value(s) for s in node.inputs]
        fn = node.cls.__new__(node.cls)
        fn.__dict__.update(resolve(node.attrs, program.values, {}))
        fn.xp = backend.get_array_module(arrays[0]) if arrays else numpy
        out = fn.forward(*arrays)
        for slot, array in zip(node.outputs, out if node.multi else (out,)):
            program.set_value(slot, fn.xp.asarray(array),
                              f"{node.scope}.{node.cls.__name__}" if node.scope else node.cls.__name__)
    return program.replace_nodes(kept)


def eliminate_dead_code(program):
    """Drop ops nothing reads and values no op reads (module docstring)."""
    live = set(program.output_slots())
    kept = []
    for node in reversed(program.nodes):
        if any(s in live for s in node.outputs):
            kept.append(node)
            live.update(node.inputs)
            live.update(ref_slots(node.attrs))
    program.replace_nodes(kept[::-1])
    program.remove_values([s for s in program.values if s not in live])
    return program


PASSES = {"remove_identities": remove_identities, "fold_batch_norm": fold_batch_norm,
          "fuse_batch_norm": fuse_batch_norm, "fold_constants": fold_constants,
          "eliminate_dead_code": eliminate_dead_code}
DEFAULT_PASSES = tuple(p for p in PASSES if p != "fuse_batch_norm")
EXACT_PASSES = tuple(p for p in DEFAULT_PASSES if p != "fold_batch_norm")   # replay == eager, bit for bit
INFERENCE_PASSES = tuple(p for p in PASSES if p != "fold_batch_norm")       # exact too, batch norms fused


def optimize(program, passes=DEFAULT_PASSES):
    """Run the named passes (in :data:`PASSES` order) on ``program``; returns it."""
    unknown = [p for p in passes if p not in PASSES]
    if unknown:
        raise ValueError(f"unknown graph passes {unknown} (known: {', '.join(PASSES)})")
    for name in PASSES:
        if name in passes:
            program = PASSES[name](program)
    return program
