"""Channel groups and multiply-adds of a traced :class:`~framework.jit.Program`.

Filter pruning must know, for each convolution or linear map whose output
channels could be removed, every tensor that has to shrink with them: the
layer's own weight and bias, the batch norm after it, the other branches added
to it (a residual sum ties the channels of every branch together) and the
input channels of every layer that reads them. :func:`channel_groups` finds
them by following each op's channel axis through the program:

- ``ConvNd``/``Linear``/``SequenceLinear`` start a new group on their output
  (weight axis 0 for a convolution, 1 for ``(in, out)`` linear weights) and
  *consume* their input's group (weight axis 1, or 0);
- batch norm, elementwise activations and pooling keep the group;
- ``Add``/``Subtract``/``Multiply``/``Maximum``/``Minimum`` of two tensors
  that both carry a group merge the groups (a residual sum);
- ``Reshape``, ``Mean``/``Sum``/``Extremum`` over other axes move the axis;
- any other op that reads a group (a temporal shift that moves fixed channel
  slices, a flatten that mixes channels with positions, a program output)
  *blocks* it: its channels stay as they are, and the reason is recorded.

:func:`node_macs` counts the multiply-adds of each node from the traced
shapes (convolutions, linear maps, matmuls, GRU/LSTM recurrences).
"""
import dataclasses
import math

from ..ops import activation, pooling
from ..ops.conv import ConvNd
from ..ops.linalg import Linear, MatMul
from ..ops.math import Add, Cast, Identity, Maximum, Minimum, Multiply, Subtract
from ..ops.manipulation import Reshape
from ..ops.norm import BatchNorm
from ..ops.reduce import Extremum, Mean, Sum
from ..ops.rnn import DynamicGRU, DynamicLSTM, SequenceLinear
from ..jit.template import Ref

__all__ = ["ChannelGroup", "channel_groups", "node_macs", "NodeCost", "costs"]

_KEEP = (activation.ReLU, activation.LeakyReLU, activation.ELU, activation.GELU, activation.Sigmoid,
         activation.Tanh, activation.Softplus, activation.SiLU, activation.Hardswish, pooling.PoolNd,
         pooling.AdaptiveAvgPoolNd, Cast, Identity)
_MERGE = (Add, Subtract, Multiply, Maximum, Minimum)
_REDUCE = (Mean, Sum, Extremum)
_PRODUCERS = (ConvNd, Linear, SequenceLinear)


@dataclasses.dataclass
class ChannelGroup:
    """Channels that are removed together.

    ``name``: the layer of the first producer (``backbone.layer1.0.conv1``);
    ``size``: the number of channels; ``producers``: ``[(tensor name, axis)]``
    of the weights whose filters make the channels (their L1 norms rank them);
    ``members``: every tensor sliced *and* zeroed when a channel goes (producer
    weights and biases, batch-norm scale and shift), ``buffers``: tensors only
    sliced (running statistics); ``consumers``: input-channel axes of the layers
    that read the group (sliced, never zeroed); ``producer_layers``: the layer
    names of the producers; ``blocked``: why the group cannot be pruned, or None.
    """
    name: str
    size: int
    producers: list = dataclasses.field(default_factory=list)
    members: list = dataclasses.field(default_factory=list)
    buffers: list = dataclasses.field(default_factory=list)
    consumers: list = dataclasses.field(default_factory=list)
    producer_layers: list = dataclasses.field(default_factory=list)
    blocked: str = None

    @property
    def prunable(self):
        return self.blocked is None and bool(self.producers)


class _Groups:
    """Union-find over channel groups, each root holding a :class:`ChannelGroup`."""

    def __init__(self):
        self.parent, self.info = {}, {}

    def new(self, name, size):
        gid = len(self.parent)
        self.parent[gid] = gid
        self.info[gid] = ChannelGroup(name, size)
        return gid

    def find(self, gid):
        while self.parent[gid] != gid:
            self.parent[gid] = self.parent[self.parent[gid]]
            gid = self.parent[gid]
        return gid

    def union(self, a, b, where):
        a, b = sorted((self.find(a), self.find(b)))          # the older group (first producer) stays the root
        if a == b:
            return a
        ga, gb = self.info[a], self.info.pop(b)
        if ga.size != gb.size:
            ga.blocked = ga.blocked or f"{where} joins groups of {ga.size} and {gb.size} channels"
        for key in ("producers", "members", "buffers", "consumers", "producer_layers"):
            getattr(ga, key).extend(getattr(gb, key))
        ga.blocked = ga.blocked or gb.blocked
        self.parent[b] = a
        return a

    def block(self, gid, reason):
        group = self.info[self.find(gid)]
        group.blocked = group.blocked or reason


def _shape(program, slot):
    spec = program.slot_specs.get(slot)
    return tuple(spec[0]) if spec else None


def _moved_axis(in_shape, axis, out_shape):
    """Where channel ``axis`` of ``in_shape`` lands in ``out_shape`` after a reshape (None: it is mixed)."""
    if in_shape is None or out_shape is None:
        return None
    before, size = math.prod(in_shape[:axis]), in_shape[axis]
    for j, n in enumerate(out_shape):
        if n == size and math.prod(out_shape[:j]) == before:
            return j
    return None


def channel_groups(program, tensor_names=None):
    """Every channel group of ``program`` (module docstring), in the order of their first producer.

    ``tensor_names``: the model's parameter and buffer names; a weight the program holds under another name
    (one a graph pass computed, such as a transposed weight) then counts as computed by the graph.
    Returns a list of :class:`ChannelGroup`; only the groups made by a producer are listed.
    """
    groups, tracked = _Groups(), {}                      # slot -> (group id, axis)
    names = program.value_names
    known = None if tensor_names is None else set(tensor_names)

    def name_of(slot):
        name = names.get(slot) if slot in program.values else None
        return name if known is None or name in known else None

    def block_inputs(node, why):
        for slot in node.inputs:
            if slot in tracked:
                groups.block(tracked[slot][0], f"{why} ({node.cls.__name__} in {node.scope or 'the model'})")

    for node in program.nodes:
        cls, ins = node.cls, node.inputs
        if cls in _PRODUCERS:
            weight = name_of(ins[1])
            x = tracked.get(ins[0])
            conv = cls is ConvNd
            in_axis, out_axis = (1, 0) if conv else (0, 1)
            depthwise = conv and node.attrs.get("groups", 1) != 1
            if weight is None:
                block_inputs(node, "weight computed by the graph")
                continue
            if x is not None and not depthwise:
                if x[1] == (1 if conv else len(_shape(program, ins[0]) or ()) - 1):
                    groups.info[groups.find(x[0])].consumers.append((weight, in_axis))
                else:
                    groups.block(x[0], f"read on another axis by {node.scope}")
            size = (_shape(program, ins[1]) or ())[out_axis]
            gid = groups.new(node.scope, size)
            info = groups.info[gid]
            info.producers.append((weight, out_axis))
            info.producer_layers.append(node.scope)
            info.members.append((weight, out_axis))
            if len(ins) > 2 and name_of(ins[2]):
                info.members.append((name_of(ins[2]), 0))
            if depthwise:
                if x is not None and node.attrs["groups"] == size == (_shape(program, ins[1])[0]):
                    groups.union(x[0], gid, node.scope)
                else:
                    groups.block(gid, f"grouped convolution {node.scope}")
                    if x is not None:
                        groups.block(x[0], f"grouped convolution {node.scope}")
            out_rank = len(_shape(program, node.outputs[0]) or ())
            tracked[node.outputs[0]] = (gid, 1 if conv else out_rank - 1)
        elif cls is BatchNorm and ins[0] in tracked:
            gid, axis = tracked[ins[0]]
            info = groups.info[groups.find(gid)]
            info.members += [(name_of(s), 0) for s in ins[1:] if name_of(s)]
            for ref in node.attrs.get("fixed") or node.attrs.get("running") or ():
                if isinstance(ref, Ref) and name_of(ref.slot):
                    info.buffers.append((name_of(ref.slot), 0))
            tracked[node.outputs[0]] = (gid, axis)
        elif cls in _KEEP and ins and ins[0] in tracked:
            tracked[node.outputs[0]] = tracked[ins[0]]
        elif cls in _MERGE and len(ins) == 2 and all(s in tracked for s in ins) \
                and tracked[ins[0]][1] == tracked[ins[1]][1] and _shape(program, ins[0]) == _shape(program, ins[1]):
            gid = groups.union(tracked[ins[0]][0], tracked[ins[1]][0], node.scope)
            tracked[node.outputs[0]] = (gid, tracked[ins[0]][1])
        elif cls is Reshape and ins[0] in tracked:
            gid, axis = tracked[ins[0]]
            moved = _moved_axis(_shape(program, ins[0]), axis, _shape(program, node.outputs[0]))
            if moved is None:
                block_inputs(node, "channels mixed with other axes")
            else:
                tracked[node.outputs[0]] = (gid, moved)
        elif cls in _REDUCE and ins[0] in tracked:
            gid, axis = tracked[ins[0]]
            rank = len(_shape(program, ins[0]))
            axes = node.attrs.get("axes")
            axes = tuple(range(rank)) if axes is None else tuple(a % rank for a in (
                axes if isinstance(axes, (tuple, list)) else (axes,)))
            if axis in axes:
                block_inputs(node, "reduced over the channels")
            else:
                keep = node.attrs.get("keepdim", False)
                tracked[node.outputs[0]] = (gid, axis if keep else axis - sum(a < axis for a in axes))
        else:
            block_inputs(node, "read by an op that fixes its channels")
    for slot in _output_slots(program.outputs):
        if slot in tracked:
            groups.block(tracked[slot][0], "a model output")
    return [groups.info[gid] for gid in sorted(groups.info)]


def _output_slots(tree):
    if isinstance(tree, dict):
        if set(tree) == {"slot"}:
            yield tree["slot"]
            return
        for value in tree.values():
            yield from _output_slots(value)
    elif isinstance(tree, (list, tuple)):
        for value in tree:
            yield from _output_slots(value)


@dataclasses.dataclass
class NodeCost:
    """One node's multiply-adds (``macs``) and the tensor whose shapes set them: its weight (``weight``,
    with output axis ``out_axis`` and input axis ``in_axis``; None for a weightless matmul)."""
    scope: str
    op: str
    macs: int
    weight: str = None
    out_axis: int = 0
    in_axis: int = 1


def node_macs(program, node):
    """Multiply-adds of one ``node`` of ``program`` at the traced shapes (0 for ops that do none)."""
    cls = node.cls
    out = _shape(program, node.outputs[0])
    if cls is ConvNd:
        w = _shape(program, node.inputs[1])
        return math.prod(out) * math.prod(w[1:])
    if cls in (Linear, SequenceLinear):
        return math.prod(out) * _shape(program, node.inputs[1])[0]
    if cls is MatMul:
        a = _shape(program, node.inputs[0])
        return math.prod(out) * int(a[-2] if node.attrs.get("transpose_x") else a[-1])
    if cls in (DynamicLSTM, DynamicGRU):
        x = _shape(program, node.inputs[0])
        hidden = out[-1] if cls is DynamicLSTM else _shape(program, node.inputs[1])[0]
        gates = 4 if cls is DynamicLSTM else 3
        runs = len(node.attrs.get("reverses", (0,)))
        return math.prod(x[:2]) * gates * hidden * hidden * (runs if cls is DynamicGRU else 1)
    return 0


def costs(program):
    """The :class:`NodeCost` of every node that does multiply-adds, in program order."""
    names, result = program.value_names, []
    for node in program.nodes:
        macs = node_macs(program, node)
        if not macs:
            continue
        weight = names.get(node.inputs[1]) if len(node.inputs) > 1 and node.inputs[1] in program.values else None
        axes = (0, 1) if node.cls is ConvNd else (1, 0)
        result.append(NodeCost(node.scope, node.cls.__name__, int(macs), weight, *axes))
    return result
