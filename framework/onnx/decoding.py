"""The converter of Viterbi decoding (``ViterbiDecode``): two ONNX ``Scan`` loops over time.

The forward loop runs over every step (a zero-length ``Scan`` is an error in
ONNX Runtime, so step 0 is inside the loop too, taking the start scores plus
its emissions): it carries the best scores alpha (N, K) and computes
``alpha[:, :, None] + trans`` (N, K, K), its ``ReduceMax`` and its ``ArgMax``
over the previous tag (the first index on ties, as oar's kernels) plus the
step's emissions; a row past its length keeps its alpha (``Where`` on the
step's mask), so the stop scores are added to each row's alpha at its own
last step. The backtrace is a reverse ``Scan`` over the backpointers, carrying
each row's current tag: a row whose length ends before step t keeps its last
tag and writes 0 there. Outputs are the op's: the best score (N,) and the
paths (N, T) int64, 0 past each length. The same arithmetic in the same order
as oar's kernels (add, max, add), so the paths are the same. Constrained
decoding (``allowed``) is refused by name.
"""
import numpy
from onnx import TensorProto, helper

from ..ops.crf import ViterbiDecode
from .errors import UnsupportedOpError
from .graph import converts, onnx_dtype


def _body(name, nodes, inputs, outputs):
    """A Scan body graph: ``inputs``/``outputs`` are (name, TensorProto type) pairs, shapes left open."""
    return helper.make_graph(nodes, name, [helper.make_tensor_value_info(n, t, None) for n, t in inputs],
                             [helper.make_tensor_value_info(n, t, None) for n, t in outputs])


def _forward_body(g, start, trans, dtype):
    """alpha, e_t (N, K), m_t (N, 1), first_t (1, 1) -> alpha', backpointers (N, K)."""
    p = g.fresh("viterbi_forward")
    nodes = [helper.make_node("Unsqueeze", [f"{p}_alpha", g.ints([2])], [f"{p}_column"]),
             helper.make_node("Add", [f"{p}_column", trans], [f"{p}_scores"]),           # (N, K from, K to)
             helper.make_node("ReduceMax", [f"{p}_scores"], [f"{p}_best"], axes=[1], keepdims=0),
             helper.make_node("ArgMax", [f"{p}_scores"], [f"{p}_from"], axis=1, keepdims=0, select_last_index=0),
             helper.make_node("Add", [f"{p}_best", f"{p}_e"], [f"{p}_next"]),
             helper.make_node("Add", [start, f"{p}_e"], [f"{p}_begin"]),
             helper.make_node("Where", [f"{p}_first", f"{p}_begin", f"{p}_next"], [f"{p}_new"]),
             helper.make_node("Where", [f"{p}_m", f"{p}_new", f"{p}_alpha"], [f"{p}_alpha_out"])]
    return _body(p, nodes, [(f"{p}_alpha", dtype), (f"{p}_e", dtype), (f"{p}_m", TensorProto.BOOL),
                            (f"{p}_first", TensorProto.BOOL)],
                 [(f"{p}_alpha_out", dtype), (f"{p}_from", TensorProto.INT64)])


def _backtrace_body(g):
    """tag (N,), backpointers (N, K), m_t (N,), step t's tag may move back (N,) -> tag', the path's tag at t."""
    p = g.fresh("viterbi_backtrace")
    zero = g.const(numpy.int64(0))
    nodes = [helper.make_node("Where", [f"{p}_m", f"{p}_tag", zero], [f"{p}_out"]),
             helper.make_node("Unsqueeze", [f"{p}_tag", g.ints([1])], [f"{p}_index"]),
             helper.make_node("GatherElements", [f"{p}_bp", f"{p}_index"], [f"{p}_gathered"], axis=1),
             helper.make_node("Squeeze", [f"{p}_gathered", g.ints([1])], [f"{p}_previous"]),
             helper.make_node("Where", [f"{p}_back", f"{p}_previous", f"{p}_tag"], [f"{p}_tag_out"])]
    return _body(p, nodes, [(f"{p}_tag", TensorProto.INT64), (f"{p}_bp", TensorProto.INT64),
                            (f"{p}_m", TensorProto.BOOL), (f"{p}_back", TensorProto.BOOL)],
                 [(f"{p}_tag_out", TensorProto.INT64), (f"{p}_out", TensorProto.INT64)])


@converts(ViterbiDecode)
def viterbi_decode(g, node, inputs):
    """(scores (N,), paths (N, T) int64) of the emissions (N, T, K) and the transition table (module docstring)."""
    if node.attrs.get("allowed") is not None:
        raise UnsupportedOpError("constrained Viterbi decoding (allowed transitions) is not exported")
    emissions, table = inputs
    dtype = g.dtype(node.inputs[0])
    k = g.constant(table, "Viterbi transition").shape[1]
    if node.attrs["include_bos_eos_tag"]:
        start = g.slice(table, [0], [1], [0])                                                # (1, K)
        stop = g.slice(table, [1], [2], [0])
        trans = g.slice(table, [2], [k + 2], [0])                                            # (K, K)
    else:
        start = stop = g.const(numpy.zeros((1, k), dtype=dtype))
        trans = table
    lengths = g.cast(g.ref(node.attrs["lengths"]), numpy.int64)
    steps = g.squeeze(g.dim(emissions, 1), [0])
    times = g.op("Range", [g.const(numpy.int64(0)), steps, g.const(numpy.int64(1))])
    valid = g.op("Less", [g.unsqueeze(times, [1]), g.unsqueeze(lengths, [0])])                # (T, N)
    e = g.op("Transpose", [emissions], perm=[1, 0, 2])                                       # (T, N, K)
    first = g.op("Equal", [times, g.const(numpy.int64(0))])                                  # (T,)
    element = onnx_dtype(dtype)
    alpha0 = g.op("Mul", [g.squeeze(g.slice(e, [0], [1], [0]), [0]), g.const(numpy.zeros((), dtype=dtype))])
    alpha, pointers = g.op("Scan", [alpha0, e, g.unsqueeze(valid, [2]), g.unsqueeze(first, [1, 2])], outputs=2,
                           body=_forward_body(g, start, trans, element), num_scan_inputs=3)
    final = g.op("Add", [alpha, stop])
    score = g.reduce("ReduceMax", final, [1], keepdim=False)
    last = g.op("ArgMax", [final], axis=1, keepdims=0, select_last_index=0)                  # (N,)
    back = g.op("And", [valid, g.op("Not", [g.unsqueeze(first, [1])])])                       # (T, N)
    _, paths = g.op("Scan", [last, pointers, valid, back], outputs=2, body=_backtrace_body(g),
                    num_scan_inputs=3, scan_input_directions=[1, 1, 1], scan_output_directions=[1])
    return score, g.op("Transpose", [paths], perm=[1, 0])                                    # (N, T)
