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
- a temporal shift keeps the group and records its ``shift_ratio`` on it:
  the shift moves the first folds of channels in time, so such a group is
  pruned fold by fold (:func:`~framework.slim.prune.kept_channels`) and the
  narrower shift moves the same channels it moved before;
- any other op that reads a group (a flatten that mixes channels with
  positions, a program output) *blocks* it: its channels stay as they are,
  and the reason is recorded.

Each of these rules is the entry of its op class in :data:`CHANNEL_RULES`.
:func:`node_macs` counts the multiply-adds of each node from the traced
shapes (convolutions, linear maps, matmuls, GRU/LSTM recurrences) by the
table :data:`MAC_COUNTS`. Both are :class:`~framework.registry.OpTable` tables:
one entry per op class, a second registration is an error.
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
from ..ops.temporal import TemporalShift
from ..jit.template import Ref
from ..registry import OpTable

__all__ = ["ChannelGroup", "channel_groups", "node_macs", "NodeCost", "costs", "CHANNEL_RULES", "MAC_COUNTS",
           "WEIGHT_AXES"]

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
    names of the producers; ``blocked``: why the group cannot be pruned, or None;
    ``shift_ratio``: the fold a temporal shift that reads the group moves each
    way (None: no shift reads it), so its channels are kept fold by fold.
    """
    name: str
    size: int
    producers: list = dataclasses.field(default_factory=list)
    members: list = dataclasses.field(default_factory=list)
    buffers: list = dataclasses.field(default_factory=list)
    consumers: list = dataclasses.field(default_factory=list)
    producer_layers: list = dataclasses.field(default_factory=list)
    blocked: str = None
    shift_ratio: float = None

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
        _shifted(ga, gb.shift_ratio, where)
        self.parent[b] = a
        return a

    def block(self, gid, reason):
        group = self.info[self.find(gid)]
        group.blocked = group.blocked or reason


def _shifted(group, ratio, where):
    """Record that a temporal shift of ``ratio`` (None: none) reads ``group``; two different ratios block it."""
    if ratio is None:
        return
    if group.shift_ratio not in (None, ratio):
        group.blocked = group.blocked or f"{where} shifts channels by {group.shift_ratio:g} and {ratio:g}"
    group.shift_ratio = ratio


def _shape(program, slot):
    spec = program.slot_specs.get(slot)
    return tuple(spec.shape) if spec else None


def _moved_axis(in_shape, axis, out_shape):
    """Where channel ``axis`` of ``in_shape`` lands in ``out_shape`` after a reshape (None: it is mixed)."""
    if in_shape is None or out_shape is None:
        return None
    before, size = math.prod(in_shape[:axis]), in_shape[axis]
    for j, n in enumerate(out_shape):
        if n == size and math.prod(out_shape[:j]) == before:
            return j
    return None


class _Walk:
    """The state of one :func:`channel_groups` walk: the groups, and ``tracked`` {slot: (group id, axis)}."""

    def __init__(self, program, tensor_names):
        self.program, self.groups, self.tracked = program, _Groups(), {}
        self.known = None if tensor_names is None else set(tensor_names)

    def name_of(self, slot):
        """The model tensor name of the value ``slot`` (None for an activation or a graph-computed value)."""
        name = self.program.value_name(slot) if self.program.is_value(slot) else None
        return name if self.known is None or name in self.known else None

    def shape(self, slot):
        return _shape(self.program, slot)

    def block_inputs(self, node, why):
        for slot in node.inputs:
            if slot in self.tracked:
                self.groups.block(self.tracked[slot][0], f"{why} ({node.cls.__name__} in {node.scope or 'the model'})")


# op class -> rule(walk, node): follows the channel axis through the node and returns True, or returns False
# when the node does not fit the rule (it then blocks the groups it reads, as an op without a rule does)
CHANNEL_RULES = OpTable("pruning rules")


@CHANNEL_RULES.register(ConvNd, Linear, SequenceLinear)
def _producer(walk, node):
    """A new group on the output channels; the input's group is consumed (input-channel axis of the weight)."""
    groups, ins = walk.groups, node.inputs
    weight = walk.name_of(ins[1])
    x = walk.tracked.get(ins[0])
    conv = node.cls is ConvNd
    in_axis, out_axis = (1, 0) if conv else (0, 1)
    depthwise = conv and node.attrs.get("groups", 1) != 1
    if weight is None:
        walk.block_inputs(node, "weight computed by the graph")
        return True
    if x is not None and not depthwise:
        if x[1] == (1 if conv else len(walk.shape(ins[0]) or ()) - 1):
            groups.info[groups.find(x[0])].consumers.append((weight, in_axis))
        else:
            groups.block(x[0], f"read on another axis by {node.scope}")
    size = (walk.shape(ins[1]) or ())[out_axis]
    gid = groups.new(node.scope, size)
    info = groups.info[gid]
    info.producers.append((weight, out_axis))
    info.producer_layers.append(node.scope)
    info.members.append((weight, out_axis))
    if len(ins) > 2 and walk.name_of(ins[2]):
        info.members.append((walk.name_of(ins[2]), 0))
    if depthwise:
        if x is not None and node.attrs["groups"] == size == (walk.shape(ins[1])[0]):
            groups.union(x[0], gid, node.scope)
        else:
            groups.block(gid, f"grouped convolution {node.scope}")
            if x is not None:
                groups.block(x[0], f"grouped convolution {node.scope}")
    out_rank = len(walk.shape(node.outputs[0]) or ())
    walk.tracked[node.outputs[0]] = (gid, 1 if conv else out_rank - 1)
    return True


@CHANNEL_RULES.register(BatchNorm)
def _batch_norm(walk, node):
    """Keeps the group; its scale and shift are members, its running statistics buffers."""
    ins = node.inputs
    if ins[0] not in walk.tracked:
        return False
    gid, axis = walk.tracked[ins[0]]
    info = walk.groups.info[walk.groups.find(gid)]
    info.members += [(walk.name_of(s), 0) for s in ins[1:] if walk.name_of(s)]
    for ref in node.attrs.get("fixed") or node.attrs.get("running") or ():
        if isinstance(ref, Ref) and walk.name_of(ref.slot):
            info.buffers.append((walk.name_of(ref.slot), 0))
    walk.tracked[node.outputs[0]] = (gid, axis)
    return True


@CHANNEL_RULES.register(activation.ReLU, activation.LeakyReLU, activation.ELU, activation.GELU, activation.Sigmoid,
                        activation.Tanh, activation.Softplus, activation.SiLU, activation.Hardswish, pooling.PoolNd,
                        pooling.AdaptiveAvgPoolNd, Cast, Identity)
def _keep(walk, node):
    """Elementwise and pooling ops: the output carries the input's group on the same axis."""
    if not node.inputs or node.inputs[0] not in walk.tracked:
        return False
    walk.tracked[node.outputs[0]] = walk.tracked[node.inputs[0]]
    return True


@CHANNEL_RULES.register(TemporalShift)
def _temporal_shift(walk, node):
    """Keeps the group (channels on axis 1) and records the shift's fold on it (module docstring)."""
    ins = node.inputs
    if ins[0] not in walk.tracked or walk.tracked[ins[0]][1] != 1:
        return False
    group = walk.groups.info[walk.groups.find(walk.tracked[ins[0]][0])]
    _shifted(group, float(node.attrs["shift_ratio"]), node.scope)
    walk.tracked[node.outputs[0]] = walk.tracked[ins[0]]
    return True


@CHANNEL_RULES.register(Add, Subtract, Multiply, Maximum, Minimum)
def _merge(walk, node):
    """Two tensors of one shape carrying groups on the same axis: the groups become one (a residual sum)."""
    ins, tracked = node.inputs, walk.tracked
    if not (len(ins) == 2 and all(s in tracked for s in ins) and tracked[ins[0]][1] == tracked[ins[1]][1]
            and walk.shape(ins[0]) == walk.shape(ins[1])):
        return False
    gid = walk.groups.union(tracked[ins[0]][0], tracked[ins[1]][0], node.scope)
    tracked[node.outputs[0]] = (gid, tracked[ins[0]][1])
    return True


@CHANNEL_RULES.register(Reshape)
def _reshape(walk, node):
    """The channel axis moves where the reshape keeps it whole; mixed with other axes, it blocks."""
    ins = node.inputs
    if ins[0] not in walk.tracked:
        return False
    gid, axis = walk.tracked[ins[0]]
    moved = _moved_axis(walk.shape(ins[0]), axis, walk.shape(node.outputs[0]))
    if moved is None:
        walk.block_inputs(node, "channels mixed with other axes")
    else:
        walk.tracked[node.outputs[0]] = (gid, moved)
    return True


@CHANNEL_RULES.register(Mean, Sum, Extremum)
def _reduce(walk, node):
    """A reduction over other axes moves the channel axis; over the channels, it blocks."""
    ins = node.inputs
    if ins[0] not in walk.tracked:
        return False
    gid, axis = walk.tracked[ins[0]]
    rank = len(walk.shape(ins[0]))
    axes = node.attrs.get("axes")
    axes = tuple(range(rank)) if axes is None else tuple(a % rank for a in (
        axes if isinstance(axes, (tuple, list)) else (axes,)))
    if axis in axes:
        walk.block_inputs(node, "reduced over the channels")
    else:
        keep = node.attrs.get("keepdim", False)
        walk.tracked[node.outputs[0]] = (gid, axis if keep else axis - sum(a < axis for a in axes))
    return True


def channel_groups(program, tensor_names=None):
    """Every channel group of ``program`` (module docstring), in the order of their first producer.

    ``tensor_names``: the model's parameter and buffer names; a weight the program holds under another name
    (one a graph pass computed, such as a transposed weight) then counts as computed by the graph.
    Each node follows the rule of its op class in :data:`CHANNEL_RULES`; an op without one blocks the groups
    it reads. Returns a list of :class:`ChannelGroup`; only the groups made by a producer are listed.
    """
    walk = _Walk(program, tensor_names)
    for node in program:
        rule = CHANNEL_RULES.get(node.cls)
        if rule is None or not rule(walk, node):
            walk.block_inputs(node, "read by an op that fixes its channels")
    for slot in program.output_slots():
        if slot in walk.tracked:
            walk.groups.block(walk.tracked[slot][0], "a model output")
    return [walk.groups.info[gid] for gid in sorted(walk.groups.info)]


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


# op class -> count(program, node): the node's multiply-adds at the traced shapes (an op without one does none)
MAC_COUNTS = OpTable("multiply-add counts")
# op class -> (output axis, input axis) of the weight (input 1) of a node that does multiply-adds
WEIGHT_AXES = OpTable("weight axes", {ConvNd: (0, 1)})
_LINEAR_AXES = (1, 0)                       # (in, out) weights and everything else


@MAC_COUNTS.register(ConvNd)
def _conv_macs(program, node):
    return math.prod(_shape(program, node.outputs[0])) * math.prod(_shape(program, node.inputs[1])[1:])


@MAC_COUNTS.register(Linear, SequenceLinear)
def _linear_macs(program, node):
    return math.prod(_shape(program, node.outputs[0])) * _shape(program, node.inputs[1])[0]


@MAC_COUNTS.register(MatMul)
def _matmul_macs(program, node):
    a = _shape(program, node.inputs[0])
    return math.prod(_shape(program, node.outputs[0])) * int(a[-2] if node.attrs.get("transpose_x") else a[-1])


@MAC_COUNTS.register(DynamicLSTM)
def _lstm_macs(program, node):
    x, out = _shape(program, node.inputs[0]), _shape(program, node.outputs[0])
    return math.prod(x[:2]) * 4 * out[-1] * out[-1]


@MAC_COUNTS.register(DynamicGRU)
def _gru_macs(program, node):
    x, hidden = _shape(program, node.inputs[0]), _shape(program, node.inputs[1])[0]
    return math.prod(x[:2]) * 3 * hidden * hidden * len(node.attrs.get("reverses", (0,)))


def node_macs(program, node):
    """Multiply-adds of one ``node`` of ``program`` at the traced shapes (:data:`MAC_COUNTS`; 0 for ops that
    do none)."""
    count = MAC_COUNTS.get(node.cls)
    return count(program, node) if count is not None else 0


def costs(program):
    """The :class:`NodeCost` of every node that does multiply-adds, in program order."""
    result = []
    for node in program:
        macs = node_macs(program, node)
        if not macs:
            continue
        weight = (program.value_name(node.inputs[1]) if len(node.inputs) > 1 and program.is_value(node.inputs[1])
                  else None)
        axes = WEIGHT_AXES.get(node.cls, _LINEAR_AXES)
        result.append(NodeCost(node.scope, node.cls.__name__, int(macs), weight, *axes))
    return result
