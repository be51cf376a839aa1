"""Shape and indexing ops: reshape, transpose, flatten, squeeze/unsqueeze, concat,
stack, split, getitem, gather/index_select, take_along_axis, pad, expand, tile, flip.

Gathers (getitem with integer arrays, gather, index_select, take_along_axis)
scatter-add their gradient, so an index picked several times receives the sum
of its gradients.
"""
import numpy

from ..backend import get_array_module
from ..tensor import Function, Tensor, OpError
from .utils import unbroadcast

__all__ = ["reshape", "transpose", "flatten", "squeeze", "unsqueeze", "concat", "stack", "split",
           "getitem", "gather", "index_select", "take_along_axis", "pad", "expand", "tile", "flip"]

_PAD_MODES = {"constant": "constant", "reflect": "reflect", "replicate": "edge", "circular": "wrap"}


def _axis(axis, ndim, op):
    """A single ``axis`` in [-ndim, ndim) as a non-negative int; errors name ``op``."""
    if not isinstance(axis, (int, numpy.integer)):
        raise OpError(f"{op}: axis must be an int, got {axis!r}")
    if not -ndim <= axis < ndim:
        raise OpError(f"{op}: axis {axis} is out of range for a tensor of {ndim} dimensions")
    return int(axis) % ndim


def _axes(axis, ndim, op):
    """An int or a sequence of ints as a tuple of distinct non-negative axes."""
    axes = tuple(_axis(a, ndim, op) for a in ((axis,) if isinstance(axis, (int, numpy.integer)) else axis))
    if len(set(axes)) != len(axes):
        raise OpError(f"{op}: repeated axis in {axis}")
    return axes


def _leading(axis):
    """Index prefix that selects everything before ``axis``."""
    return (slice(None),) * axis


class Reshape(Function):
    def forward(self, x):
        self.source = x.shape
        try:
            return x.reshape(self.shape)
        except (ValueError, TypeError):
            raise OpError(f"reshape: cannot reshape a tensor of shape {x.shape} ({x.size} elements) "
                          f"into {self.shape}") from None

    def backward(self, gy):
        return gy.reshape(self.source)


class Transpose(Function):
    def forward(self, x):
        try:
            return x.transpose(self.perm)
        except (ValueError, TypeError):
            raise OpError(f"transpose: perm {self.perm} is not a permutation of the axes of a tensor "
                          f"of shape {x.shape}") from None

    def backward(self, gy):
        inverse = [0] * gy.ndim
        for i, p in enumerate(self.perm):
            inverse[p % gy.ndim] = i
        return gy.transpose(inverse)


class Concat(Function):
    def forward(self, *xs):
        self.bounds = numpy.cumsum([0] + [x.shape[self.axis] for x in xs]).tolist()
        return self.xp.concatenate(xs, axis=self.axis)

    def backward(self, gy):
        lead = _leading(self.axis)
        return tuple(gy[lead + (slice(start, stop),)] if need else None
                     for start, stop, need in zip(self.bounds, self.bounds[1:], self.needs_input_grad))


class Stack(Function):
    def forward(self, *xs):
        return self.xp.stack(xs, axis=self.axis)

    def backward(self, gy):
        lead = _leading(self.axis)
        return tuple(gy[lead + (i,)] if need else None for i, need in enumerate(self.needs_input_grad))


class Split(Function):
    def forward(self, x):
        self.shape, self.dtype = x.shape, x.dtype
        lead = _leading(self.axis)
        return tuple(x[lead + (slice(start, stop),)] for start, stop in zip(self.bounds, self.bounds[1:]))

    def backward(self, *gys):
        xp, axis = self.xp, self.axis
        parts = []
        for g, start, stop in zip(gys, self.bounds, self.bounds[1:]):
            if g is None:  # that output was dropped without being used
                g = xp.zeros(self.shape[:axis] + (stop - start,) + self.shape[axis + 1:], self.dtype)
            parts.append(g)
        return xp.concatenate(parts, axis=axis)


class GetItem(Function):
    def forward(self, x):
        self.shape = x.shape
        return x[self.index]

    def backward(self, gy):
        gx = self.xp.zeros(self.shape, gy.dtype)
        if self.advanced:
            self.xp.add.at(gx, self.index, gy)
        else:
            gx[self.index] = gy
        return gx


class Take(Function):
    """Slices of x picked along ``axis`` by an integer index (gather / index_select)."""

    def forward(self, x, index):
        self.shape, self.saved = x.shape, index
        return self.xp.take(x, index, axis=self.axis)

    def backward(self, gy):
        gx = self.xp.zeros(self.shape, gy.dtype)
        self.xp.add.at(gx, _leading(self.axis) + (self.saved,), gy)
        return gx, None


class TakeAlongAxis(Function):
    def forward(self, x, indices):
        self.shape, self.saved = x.shape, indices
        return self.xp.take_along_axis(x, indices, axis=self.axis)

    def backward(self, gy):
        xp, axis, ndim = self.xp, self.axis, len(self.shape)
        index = tuple(self.saved if d == axis else
                      xp.arange(n).reshape([-1 if j == d else 1 for j in range(ndim)])
                      for d, n in enumerate(self.shape))
        gx = xp.zeros(self.shape, gy.dtype)
        xp.add.at(gx, index, gy)
        return gx, None


class Pad(Function):
    def forward(self, x):
        self.shape = x.shape
        if self.mode == "constant":
            return self.xp.pad(x, self.widths, mode="constant", constant_values=self.value)
        return self.xp.pad(x, self.widths, mode=_PAD_MODES[self.mode])

    def backward(self, gy):
        xp = self.xp
        if self.mode == "constant":
            return gy[tuple(slice(before, before + n) for (before, _), n in zip(self.widths, self.shape))]
        g = gy
        for axis, (width, n) in enumerate(zip(self.widths, self.shape)):
            if width == (0, 0):
                continue
            # source[i] is the input position copied to padded position i along this axis;
            # fold (padded, n) sums the gradient of every copy back onto its source.
            source = xp.pad(xp.arange(n), width, mode=_PAD_MODES[self.mode])
            fold = (source[:, None] == xp.arange(n)[None, :]).astype(g.dtype)
            g = xp.moveaxis(xp.tensordot(g, fold, axes=([axis], [0])), -1, axis)
        return g


class Expand(Function):
    def forward(self, x):
        self.source = x.shape
        return self.xp.broadcast_to(x, self.shape)

    def backward(self, gy):
        return unbroadcast(gy, self.source)


class Tile(Function):
    def forward(self, x):
        self.source = x.shape
        return self.xp.tile(x, self.reps)

    def backward(self, gy):
        # gy viewed as (r0, n0, r1, n1, ...) summed over the repeat axes r_i
        padded = (1,) * (len(self.reps) - len(self.source)) + self.source
        interleaved = [d for pair in zip(self.reps, padded) for d in pair]
        summed = gy.reshape(interleaved).sum(axis=tuple(range(0, len(interleaved), 2)))
        return summed.reshape(self.source)


class Flip(Function):
    def forward(self, x):
        return self.xp.flip(x, axis=self.axes)

    def backward(self, gy):
        return self.xp.flip(gy, axis=self.axes)


# ---- public wrappers ------------------------------------------------------

def reshape(x, shape):
    """``x`` with a new shape of the same number of elements; one entry may be -1 (inferred).

    Shape: x (*s) -> shape. A 0 in ``shape`` is a zero-size axis (NumPy
    meaning). Example: ``reshape(x, [2, -1])`` of a (2, 3, 4) tensor is (2, 12).
    """
    if isinstance(shape, Tensor):
        shape = shape.tolist()
    return Reshape.apply(x, shape=(shape,) if isinstance(shape, (int, numpy.integer)) else tuple(shape))


def transpose(x, perm):
    """Axes of ``x`` permuted: output axis i is input axis ``perm[i]``.

    Shape: x (s_0, ..., s_{n-1}) -> (s_perm[0], ..., s_perm[n-1]).
    """
    return Transpose.apply(x, perm=tuple(perm))


def _inferred_first(shape, size):
    """``shape`` with its first entry -1 (inferred from the size) when the tensor is not empty: the same
    reshape, which a traced program replays for any length of that axis (e.g. a count of valid frames)."""
    return (-1,) + tuple(shape[1:]) if shape and size else tuple(shape)


def flatten(x, start_axis=0, stop_axis=-1):
    """Axes ``start_axis`` .. ``stop_axis`` (inclusive) merged into one.

    Shape: (2, 3, 4, 5) with start_axis=1, stop_axis=2 -> (2, 12, 5).
    """
    shape = x.shape
    if not shape:
        return Reshape.apply(x, shape=(1,))
    start, stop = _axis(start_axis, len(shape), "flatten"), _axis(stop_axis, len(shape), "flatten")
    if start > stop:
        raise OpError(f"flatten: start_axis {start_axis} comes after stop_axis {stop_axis} "
                      f"for a tensor of shape {shape}")
    merged = int(numpy.prod(shape[start:stop + 1], dtype=numpy.int64))
    return Reshape.apply(x, shape=_inferred_first(shape[:start] + (merged,) + shape[stop + 1:], x.size))


def squeeze(x, axis=None):
    """``x`` without size-1 axes: all of them when ``axis`` is None, else those listed.

    As in Paddle, a listed axis whose size is not 1 is left in place.
    Shape: (1, 3, 1) -> (3,) for axis=None; -> (3, 1) for axis=0.
    """
    shape = x.shape
    axes = range(len(shape)) if axis is None else _axes(axis, len(shape), "squeeze")
    drop = {a for a in axes if shape[a] == 1}
    return Reshape.apply(x, shape=_inferred_first(tuple(n for i, n in enumerate(shape) if i not in drop), x.size))


def unsqueeze(x, axis):
    """``x`` with size-1 axes inserted at ``axis`` (an int or a list, positions in the result).

    Shape: (3, 4) with axis=0 -> (1, 3, 4); with axis=[0, -1] -> (1, 3, 4, 1).
    """
    shape = x.shape
    axes = _axes(axis, len(shape) + (1 if isinstance(axis, (int, numpy.integer)) else len(axis)), "unsqueeze")
    rest = iter(shape)
    out = tuple(1 if i in axes else next(rest) for i in range(len(shape) + len(axes)))
    return Reshape.apply(x, shape=_inferred_first(out, x.size))


def _first(xs, op):
    """The first of a non-empty list of tensors."""
    if isinstance(xs, Tensor) or not len(xs):
        raise OpError(f"{op}: expected a non-empty list of tensors")
    return xs[0]


def _check_same(xs, op, axis=None):
    """All tensors share ndim, dtype, and their shape except along ``axis``."""
    first = xs[0]
    for t in xs[1:]:
        same_shape = (t.data.ndim == first.data.ndim and
                      all(a == b for i, (a, b) in enumerate(zip(t.shape, first.shape)) if i != axis))
        if not same_shape or t.data.dtype != first.data.dtype:
            where = "" if axis is None else f" outside axis {axis}"
            raise OpError(f"{op}: tensors must match in dtype and shape{where}, got "
                          + ", ".join(f"{s.shape} {s.dtype}" for s in xs))


def concat(xs, axis=0):
    """Tensors joined along an existing ``axis``.

    Shapes: (*a, n_i, *b) for each input -> (*a, sum(n_i), *b).
    """
    axis = _axis(axis, _first(xs, "concat").data.ndim, "concat")
    _check_same(xs, "concat", axis)
    return Concat.apply(*xs, axis=axis)


def stack(xs, axis=0):
    """Tensors of one shape joined along a new ``axis``.

    Shapes: k inputs (*s) -> (k, *s) for axis=0; ``axis`` may be in [-ndim-1, ndim].
    """
    axis = _axis(axis, _first(xs, "stack").data.ndim + 1, "stack")
    _check_same(xs, "stack")
    return Stack.apply(*xs, axis=axis)


def split(x, num_or_sections, axis=0):
    """``x`` cut along ``axis`` into a list of tensors.

    ``num_or_sections`` is a count of equal parts (it must divide the axis) or a
    list of part sizes, one of which may be -1 (the rest).
    Shape: (6, 4) with 3 -> three (2, 4); with [1, -1, 2] -> (1, 4), (3, 4), (2, 4).
    """
    axis = _axis(axis, x.data.ndim, "split")
    n = x.shape[axis]
    if isinstance(num_or_sections, (int, numpy.integer)):
        if num_or_sections <= 0 or n % num_or_sections:
            raise OpError(f"split: {num_or_sections} equal parts do not divide axis {axis} "
                          f"of a tensor of shape {x.shape}")
        sizes = [n // num_or_sections] * int(num_or_sections)
    else:
        sizes = [int(s) for s in num_or_sections]
        if sizes.count(-1) == 1:
            sizes[sizes.index(-1)] = n - (sum(sizes) + 1)
        if any(s < 0 for s in sizes) or sum(sizes) != n:
            raise OpError(f"split: sections {list(num_or_sections)} do not add up to {n}, the size of "
                          f"axis {axis} of a tensor of shape {x.shape}")
    return list(Split.apply(x, axis=axis, bounds=numpy.cumsum([0] + sizes).tolist()))


def _index_entry(item, xp):
    """One entry of an index as ``xp`` takes it: Tensors unwrapped, lists and host arrays moved to xp."""
    if isinstance(item, Tensor):
        return item.data
    if isinstance(item, (list, tuple)) or (xp is not numpy and isinstance(item, numpy.ndarray)):
        return xp.asarray(item)
    return item


_BASIC = (int, slice, type(None), type(Ellipsis), bool, numpy.integer)


def getitem(x, index):
    """``x[index]`` with NumPy indexing: ints, slices (any step), None, Ellipsis,
    bool masks and integer arrays (Tensors, lists or arrays).

    Integer arrays may repeat an index; its gradients are summed.
    Shape: as NumPy indexing gives. Example: x (4, 5), x[[0, 0, 2], 1:] -> (3, 4).
    """
    entries = index if type(index) is tuple else (index,)
    if all(isinstance(e, _BASIC) for e in entries):
        return GetItem.apply(x, index=index, advanced=False)
    xp = get_array_module(x.data)
    return GetItem.apply(x, index=tuple(_index_entry(e, xp) for e in entries), advanced=True)


def _check_index(x, index, axis, op, ndims):
    """``index`` is an integer Tensor of an allowed ndim whose values fit ``x``'s ``axis``."""
    if not isinstance(index, Tensor):
        index = Tensor(get_array_module(x.data).asarray(index))
    data = index.data
    if data.dtype.kind not in "iu" or data.ndim not in ndims:
        raise OpError(f"{op}: index must be an integer tensor with {' or '.join(map(str, ndims))} "
                      f"dimension(s), got {data.dtype} of shape {index.shape}")
    n = x.shape[axis]
    if data.size and (int(data.min()) < -n or int(data.max()) >= n):
        raise OpError(f"{op}: index values must lie in [{-n}, {n}) for axis {axis} of a tensor of "
                      f"shape {x.shape}, got min {int(data.min())} max {int(data.max())}")
    return index


def gather(x, index, axis=0):
    """Slices of ``x`` along ``axis`` picked by a 0-D or 1-D integer ``index`` (repeats allowed).

    Shape: x (*a, n, *b), index (k,) -> (*a, k, *b); a 0-D index drops the axis.
    """
    axis = _axis(axis, x.data.ndim, "gather")
    return Take.apply(x, _check_index(x, index, axis, "gather", (0, 1)), axis=axis)


def index_select(x, index, axis=0):
    """Slices of ``x`` along ``axis`` picked by a 1-D integer ``index`` (repeats allowed).

    Shape: x (*a, n, *b), index (k,) -> (*a, k, *b).
    """
    axis = _axis(axis, x.data.ndim, "index_select")
    return Take.apply(x, _check_index(x, index, axis, "index_select", (1,)), axis=axis)


def take_along_axis(x, indices, axis):
    """Elements of ``x`` picked along ``axis`` by ``indices`` of the same ndim (NumPy semantics).

    ``out[i, j, k] = x[indices[i, j, k], j, k]`` for axis 0; the other axes of
    ``indices`` broadcast against ``x``.
    Shape: x (*s), indices (*t) with t_d in (1, s_d) off ``axis`` -> broadcast(s, t) with t's ``axis``.
    """
    axis = _axis(axis, x.data.ndim, "take_along_axis")
    indices = _check_index(x, indices, axis, "take_along_axis", (x.data.ndim,))
    for d, (n, m) in enumerate(zip(x.shape, indices.shape)):
        if d != axis and m not in (1, n):
            raise OpError(f"take_along_axis: indices of shape {indices.shape} do not broadcast against "
                          f"x of shape {x.shape} off axis {axis}")
    return TakeAlongAxis.apply(x, indices, axis=axis)


def _pad_widths(pad, shape):
    """Per-axis (before, after) pairs from a flat list (last axis first) or a list of pairs."""
    pad = list(pad)
    if pad and all(isinstance(p, (list, tuple)) for p in pad):
        widths = [tuple(int(v) for v in p) for p in pad]
        if len(widths) != len(shape) or any(len(w) != 2 for w in widths):
            return None
        return widths
    if len(pad) % 2 or len(pad) > 2 * len(shape):
        return None
    flat = [int(v) for v in pad]
    pairs = [(flat[i], flat[i + 1]) for i in range(0, len(flat), 2)]  # last axis first
    return [(0, 0)] * (len(shape) - len(pairs)) + pairs[::-1]


def pad(x, pad, mode="constant", value=0.0):
    """``x`` padded on the sides of its axes.

    ``pad`` is either a flat list ``[before_last, after_last, before_2nd_last,
    after_2nd_last, ...]`` that starts from the LAST axis and may cover fewer
    axes than ``x`` has (PyTorch ``F.pad`` order; note Paddle reads a flat list
    covering every axis from the first axis instead), or a list of one
    ``(before, after)`` pair per axis starting from the first axis (NumPy order).
    ``mode``: 'constant' (fill with ``value``), 'reflect' (mirror without the
    edge), 'replicate' (repeat the edge) or 'circular' (wrap around).

    Shape: x (*s) -> s_i + before_i + after_i per axis.
    Example: ``pad(x, [1, 2])`` of a (3, 4) tensor is (3, 7).
    """
    widths = _pad_widths(pad, x.shape)
    if widths is None or any(b < 0 or a < 0 for b, a in widths):
        raise OpError(f"pad: pad {list(pad)} is not a flat list of up to {2 * x.data.ndim} non-negative "
                      f"sizes nor {x.data.ndim} (before, after) pairs for a tensor of shape {x.shape}")
    if mode not in _PAD_MODES:
        raise OpError(f"pad: unknown mode {mode!r}; use one of {sorted(_PAD_MODES)}")
    if mode != "constant" and any(w != (0, 0) and n == 0 for w, n in zip(widths, x.shape)):
        raise OpError(f"pad: mode {mode!r} cannot pad an empty axis of a tensor of shape {x.shape}")
    return Pad.apply(x, widths=tuple(widths), mode=mode, value=value)


def expand(x, shape):
    """``x`` broadcast to ``shape`` (a read-only view); -1 keeps that axis's size.

    Axes of size 1 may grow and new leading axes may be added.
    Shape: (3, 1) with [2, -1, 4] -> (2, 3, 4).
    """
    src = x.shape
    shape = tuple(int(s) for s in shape)
    lead = len(shape) - len(src)
    target = tuple(src[i - lead] if s == -1 and i >= lead else s for i, s in enumerate(shape))
    if lead < 0 or any(s < 0 for s in target) or any(n not in (1, t) for n, t in zip(src, target[lead:])):
        raise OpError(f"expand: cannot expand a tensor of shape {src} to {shape}")
    return Expand.apply(x, shape=target)


def tile(x, repeat_times):
    """``x`` repeated ``repeat_times[i]`` times along each axis (as ``numpy.tile``).

    A shorter ``repeat_times`` applies to the last axes; a longer one adds leading axes.
    Shape: (2, 3) with [2, 1, 2] -> (2, 2, 6).
    """
    reps = (int(repeat_times),) if isinstance(repeat_times, (int, numpy.integer)) else \
        tuple(int(r) for r in repeat_times)
    if any(r < 0 for r in reps):
        raise OpError(f"tile: repeat_times {repeat_times} must be non-negative (tensor of shape {x.shape})")
    reps = (1,) * (x.data.ndim - len(reps)) + reps
    return Tile.apply(x, reps=reps)


def flip(x, axis):
    """``x`` reversed along ``axis`` (an int or a list of ints). Shape unchanged."""
    return Flip.apply(x, axes=_axes(axis, x.data.ndim, "flip"))
