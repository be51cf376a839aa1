"""Specs for framework/ops/manipulation.py. References build outputs element by
element with explicit loops (or plain slicing for the reshape family)."""
import itertools

import numpy

import framework as fw
from ..opspec import OpSpec, rand


def _with(first_shape, *extra):
    """Input maker: one uniform float array of ``first_shape`` followed by fixed arrays ``extra``."""
    return lambda rng: [rng.uniform(-1, 1, first_shape)] + [numpy.array(e) for e in extra]


def _by_position(shape, source):
    """Array of ``shape`` whose element at each index is ``source(index)``."""
    out = numpy.empty(shape)
    for idx in itertools.product(*[range(n) for n in shape]):
        out[idx] = source(idx)
    return out


# ---- reshape family --------------------------------------------------------
def _row_major(x, shape):
    """Elements of x in row-major order laid out into ``shape`` (one -1 allowed)."""
    flat = list(x.ravel())
    shape = list(shape)
    if -1 in shape:
        shape[shape.index(-1)] = len(flat) // -int(numpy.prod(shape))
    return _by_position(tuple(shape), lambda idx: flat[int(numpy.ravel_multi_index(idx, shape))])


SPECS = [
    OpSpec("reshape", lambda x: fw.reshape(x, [4, -1]), rand(2, 3, 4), lambda x: _row_major(x, [4, -1])),
    OpSpec("reshape", lambda x: fw.reshape(x, (24,)), rand(2, 3, 4), lambda x: _row_major(x, [24])),
    OpSpec("reshape", lambda x: fw.reshape(x, 1), rand(1, 1), lambda x: _row_major(x, [1])),
    OpSpec("flatten", fw.flatten, rand(2, 3, 4), lambda x: _row_major(x, [24])),
    OpSpec("flatten", lambda x: fw.flatten(x, start_axis=1, stop_axis=2), rand(2, 3, 4, 5),
           lambda x: _row_major(x, [2, 12, 5])),
    OpSpec("flatten", lambda x: fw.flatten(x, start_axis=-2), rand(2, 3, 4), lambda x: _row_major(x, [2, 12])),
    OpSpec("squeeze", fw.squeeze, rand(1, 3, 1, 2), lambda x: _row_major(x, [3, 2])),
    OpSpec("squeeze", lambda x: fw.squeeze(x, axis=[0, 1]), rand(1, 3, 1), lambda x: _row_major(x, [3, 1])),
    OpSpec("squeeze", lambda x: fw.squeeze(x, axis=-1), rand(1, 3, 1), lambda x: _row_major(x, [1, 3])),
    OpSpec("unsqueeze", lambda x: fw.unsqueeze(x, 0), rand(3, 4), lambda x: _row_major(x, [1, 3, 4])),
    OpSpec("unsqueeze", lambda x: fw.unsqueeze(x, [0, -1]), rand(3, 4), lambda x: _row_major(x, [1, 3, 4, 1])),
    OpSpec("unsqueeze", lambda x: fw.unsqueeze(x, -2), rand(3, 4), lambda x: _row_major(x, [3, 1, 4])),
]


# ---- permutations ---------------------------------------------------------
def _transpose_ref(x, perm):
    perm = [p % x.ndim for p in perm]
    shape = tuple(x.shape[p] for p in perm)
    return _by_position(shape, lambda idx: x[tuple(idx[perm.index(d)] for d in range(x.ndim))])


def _flip_ref(x, axes):
    axes = [a % x.ndim for a in axes]
    return _by_position(x.shape, lambda idx: x[tuple(x.shape[d] - 1 - i if d in axes else i
                                                     for d, i in enumerate(idx))])


SPECS += [
    OpSpec("transpose", lambda x: fw.transpose(x, [2, 0, 1]), rand(2, 3, 4), lambda x: _transpose_ref(x, [2, 0, 1])),
    OpSpec("transpose", lambda x: fw.transpose(x, (1, 0)), rand(3, 5), lambda x: _transpose_ref(x, [1, 0])),
    OpSpec("transpose", lambda x: fw.transpose(x, [0, -1, 1]), rand(2, 3, 4), lambda x: _transpose_ref(x, [0, 2, 1])),
    OpSpec("flip", lambda x: fw.flip(x, 0), rand(3, 4), lambda x: _flip_ref(x, [0])),
    OpSpec("flip", lambda x: fw.flip(x, [0, -1]), rand(2, 3, 4), lambda x: _flip_ref(x, [0, 2])),
]


# ---- joining and splitting ------------------------------------------------
def _concat_ref(xs, axis):
    axis = axis % xs[0].ndim
    offsets = numpy.cumsum([0] + [x.shape[axis] for x in xs])
    shape = list(xs[0].shape)
    shape[axis] = offsets[-1]

    def source(idx):
        k = int(numpy.searchsorted(offsets, idx[axis], side="right")) - 1
        return xs[k][idx[:axis] + (idx[axis] - offsets[k],) + idx[axis + 1:]]
    return _by_position(tuple(shape), source)


def _stack_ref(xs, axis):
    axis = axis % (xs[0].ndim + 1)
    shape = xs[0].shape[:axis] + (len(xs),) + xs[0].shape[axis:]
    return _by_position(shape, lambda idx: xs[idx[axis]][idx[:axis] + idx[axis + 1:]])


def _split_ref(x, sizes, axis):
    starts = numpy.cumsum([0] + sizes)
    parts = []
    for start, size in zip(starts, sizes):
        shape = x.shape[:axis] + (size,) + x.shape[axis + 1:]
        parts.append(_by_position(shape, lambda idx, s=start: x[idx[:axis] + (idx[axis] + s,) + idx[axis + 1:]]))
    return tuple(parts)


def _three(a, b, c):
    return lambda rng: [rng.uniform(-1, 1, a), rng.uniform(-1, 1, b), rng.uniform(-1, 1, c)]


SPECS += [
    OpSpec("concat", lambda a, b, c: fw.concat([a, b, c], axis=1), _three((2, 1, 3), (2, 4, 3), (2, 2, 3)),
           lambda a, b, c: _concat_ref([a, b, c], 1)),
    OpSpec("concat", lambda a, b: fw.concat([a, b], axis=-1), lambda rng: [rng.uniform(-1, 1, (3, 2)),
                                                                         rng.uniform(-1, 1, (3, 3))],
           lambda a, b: _concat_ref([a, b], -1)),
    OpSpec("concat", lambda a: fw.concat([a, a]), rand(2, 3), lambda a: _concat_ref([a, a], 0)),
    OpSpec("stack", lambda a, b, c: fw.stack([a, b, c]), _three((2, 3), (2, 3), (2, 3)),
           lambda a, b, c: _stack_ref([a, b, c], 0)),
    OpSpec("stack", lambda a, b, c: fw.stack([a, b, c], axis=-1), _three((2, 3), (2, 3), (2, 3)),
           lambda a, b, c: _stack_ref([a, b, c], -1)),
    OpSpec("split", lambda x: tuple(fw.split(x, 3)), rand(6, 2), lambda x: _split_ref(x, [2, 2, 2], 0)),
    OpSpec("split", lambda x: tuple(fw.split(x, [1, -1, 2], axis=-1)), rand(2, 6),
           lambda x: _split_ref(x, [1, 3, 2], 1)),
    # only one part used: the unused parts get a zero gradient
    OpSpec("split", lambda x: fw.split(x, [2, 3], axis=1)[1], rand(2, 5), lambda x: _split_ref(x, [2, 3], 1)[1]),
]


# ---- indexing ---------------------------------------------------------------
def _rows(x, idx):
    """x[idx] for a list of row indices (repeats allowed), by a loop."""
    return numpy.array([x[int(i)] for i in idx])


SPECS += [
    OpSpec("getitem", lambda x: x[1], rand(3, 4), lambda x: numpy.array([x[1, j] for j in range(4)])),
    OpSpec("getitem", lambda x: x[::-1, 1:3], rand(3, 4),
           lambda x: numpy.array([[x[i, j] for j in (1, 2)] for i in (2, 1, 0)])),
    OpSpec("getitem", lambda x: x[..., ::-2], rand(2, 5),
           lambda x: numpy.array([[x[i, j] for j in (4, 2, 0)] for i in range(2)])),
    OpSpec("getitem", lambda x: x[None, ..., 0], rand(2, 3),
           lambda x: numpy.array([[x[i, 0] for i in range(2)]])),
    OpSpec("getitem", lambda x: x[-1, None, 1::2], rand(3, 5),
           lambda x: numpy.array([[x[2, 1], x[2, 3]]])),
    OpSpec("getitem", lambda x: x[[0, 2, 0, 0]], rand(3, 4), lambda x: _rows(x, [0, 2, 0, 0])),
    OpSpec("getitem", lambda x, i: x[i], _with((4, 3), [3, 3, -4, 1]), _rows),
    OpSpec("getitem", lambda x, i, j: x[i, j], _with((3, 4), [0, 1, 1, 0], [2, 2, 0, 2]),
           lambda x, i, j: numpy.array([x[a, b] for a, b in zip(i, j)])),
    OpSpec("getitem", lambda x, i: x[:, i], _with((2, 4), [[1, 1], [3, 0]]),
           lambda x, i: numpy.array([[[x[r, c] for c in row] for row in i] for r in range(2)])),
    OpSpec("getitem", lambda x, m: x[m], _with((3, 4), [[True, False, True, True], [False] * 4, [True] * 4]),
           lambda x, m: numpy.array([v for v, keep in zip(x.ravel(), m.ravel()) if keep])),
    OpSpec("getitem", lambda x, m: x[1:, m], _with((3, 4), [False, True, False, True]),
           lambda x, m: numpy.array([[x[r, c] for c in (1, 3)] for r in (1, 2)])),
]


def _take_ref(x, index, axis):
    """Slices of x along ``axis`` picked by a 0-D or 1-D index, by loops."""
    picked = [numpy.moveaxis(x, axis, 0)[int(i)] for i in numpy.atleast_1d(index)]
    out = numpy.moveaxis(numpy.array(picked), 0, axis)
    return out if numpy.ndim(index) else numpy.take(out, 0, axis=axis)


def _take_along_ref(x, indices, axis):
    shape = tuple(max(a, b) if d != axis else b for d, (a, b) in enumerate(zip(x.shape, indices.shape)))

    def source(idx):
        where = tuple(0 if indices.shape[d] == 1 else i for d, i in enumerate(idx))
        return x[tuple(indices[where] if d == axis else i for d, i in enumerate(idx))]
    return _by_position(shape, source)


SPECS += [
    OpSpec("gather", lambda x, i: fw.gather(x, i), _with((4, 3), [2, 0, 2]), lambda x, i: _take_ref(x, i, 0)),
    OpSpec("gather", lambda x, i: fw.gather(x, i, axis=1), _with((2, 4, 3), [3, 3, 1, -1]),
           lambda x, i: _take_ref(x, i, 1)),
    OpSpec("gather", lambda x, i: fw.gather(x, i, axis=-1), _with((2, 3), 1), lambda x, i: _take_ref(x, i, 1)),
    OpSpec("index_select", lambda x, i: fw.index_select(x, i), _with((4, 3), [1, 1, 3]),
           lambda x, i: _take_ref(x, i, 0)),
    OpSpec("index_select", lambda x, i: fw.index_select(x, i, axis=2), _with((2, 3, 4), [0, 3, 0]),
           lambda x, i: _take_ref(x, i, 2)),
    OpSpec("take_along_axis", lambda x, i: fw.take_along_axis(x, i, axis=1),
           _with((3, 4), [[0, 0], [3, 1], [2, 2]]), lambda x, i: _take_along_ref(x, i, 1)),
    OpSpec("take_along_axis", lambda x, i: fw.take_along_axis(x, i, axis=0),
           _with((3, 4), [[2, 0, 2, 1]]), lambda x, i: _take_along_ref(x, i, 0)),
    OpSpec("take_along_axis", lambda x, i: fw.take_along_axis(x, i, axis=-1),
           _with((2, 3, 4), [[[1], [3], [0]], [[2], [2], [2]]]), lambda x, i: _take_along_ref(x, i, 2)),
]


# ---- pad, expand, tile ------------------------------------------------------
def _source_index(i, n, mode):
    """Input position copied to padded position ``i`` (relative to the input start), or None for the fill."""
    if 0 <= i < n:
        return i
    if mode == "constant":
        return None
    if mode == "replicate":
        return 0 if i < 0 else n - 1
    if mode == "circular":
        return i % n
    return -i if i < 0 else 2 * (n - 1) - i  # reflect (pads smaller than the axis)


def _pad_ref(x, widths, mode="constant", value=0.0):
    """``widths`` one (before, after) pair per axis, first axis first."""
    shape = tuple(n + b + a for n, (b, a) in zip(x.shape, widths))

    def source(idx):
        src = [_source_index(i - b, n, mode) for i, n, (b, _) in zip(idx, x.shape, widths)]
        return value if None in src else x[tuple(src)]
    return _by_position(shape, source)


PAD_CASES = [
    ([1, 2], "constant", [(0, 0), (1, 2)]),
    ([1, 0, 2, 1], "constant", [(2, 1), (1, 0)]),
    ([[0, 1], [2, 0]], "constant", [(0, 1), (2, 0)]),
    ([2, 1, 1, 2], "reflect", [(1, 2), (2, 1)]),
    ([2, 3], "replicate", [(0, 0), (2, 3)]),
    ([[1, 2], [3, 1]], "circular", [(1, 2), (3, 1)]),
]
SPECS += [
    OpSpec("pad", lambda x, p=p, m=m: fw.pad(x, p, mode=m), rand(3, 4),
           lambda x, w=w, m=m: _pad_ref(x, w, m))
    for p, m, w in PAD_CASES
]
SPECS += [
    OpSpec("pad", lambda x: fw.pad(x, [1, 1], value=-2.5), rand(2, 2, 3),
           lambda x: _pad_ref(x, [(0, 0), (0, 0), (1, 1)], value=-2.5)),
    OpSpec("expand", lambda x: fw.expand(x, [2, -1, 4]), rand(3, 1),
           lambda x: _by_position((2, 3, 4), lambda idx: x[idx[1], 0])),
    OpSpec("expand", lambda x: fw.expand(x, (2, 3)), rand(3),
           lambda x: _by_position((2, 3), lambda idx: x[idx[1]])),
    OpSpec("tile", lambda x: fw.tile(x, [2, 1, 2]), rand(2, 3),
           lambda x: _by_position((2, 2, 6), lambda idx: x[idx[1] % 2, idx[2] % 3])),
    OpSpec("tile", lambda x: fw.tile(x, [3]), rand(2, 2),
           lambda x: _by_position((2, 6), lambda idx: x[idx[0], idx[1] % 2])),
]
