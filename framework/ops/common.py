"""Common layers' functions: dropout, embedding lookup, hashed n-gram ids, one_hot, sequence_mask and the
packed positions of a padded batch."""
import numpy

from .. import backend
from ..kernels.scatter import scatter_add_rows
from ..random import rng_for
from ..tensor import Function, Tensor, OpError

__all__ = ["dropout", "embedding", "hashed_ngrams", "one_hot", "packed_positions", "sequence_mask"]

_DROPOUT_MODES = ("upscale_in_train", "downscale_in_infer")


class Dropout(Function):
    """y = x * mask, where mask is ``scale`` with probability 1 - p and 0 otherwise."""

    def forward(self, x):
        keep = rng_for(self.xp).random(x.shape, dtype=numpy.float32) >= self.p
        self.saved = keep * x.dtype.type(self.scale)
        return x * self.saved

    def backward(self, gy):
        return gy * self.saved


class Embedding(Function):
    """y[..., :] = weight[ids[...], :]; the gradient of weight is scatter-added by id."""

    def forward(self, ids, weight):
        self.saved = ids, weight.shape
        return weight[ids]

    def backward(self, gy):
        ids, shape = self.saved
        gw = scatter_add_rows(shape, ids.reshape(-1), gy.reshape(-1, shape[1]))
        if self.padding_idx is not None:
            gw[self.padding_idx] = 0
        return None, gw


def dropout(x, p=0.5, training=True, mode="upscale_in_train"):
    """Randomly zero elements with probability ``p``; the mask comes from ``framework.random``.

    ``mode`` as in Paddle: "upscale_in_train" scales kept elements by 1 / (1 - p)
    in training and is the identity in eval; "downscale_in_infer" keeps them
    unscaled in training and multiplies by (1 - p) in eval.

    Shapes: x (*) -> (*).
    """
    if not 0 <= p <= 1:
        raise OpError(f"dropout: p must be in [0, 1], got {p}")
    if mode not in _DROPOUT_MODES:
        raise OpError(f"dropout: mode must be one of {_DROPOUT_MODES}, got {mode!r}")
    if not training:
        return x if mode == "upscale_in_train" else x * (1 - p)
    if p == 0:
        return x
    scale = 1.0 if mode == "downscale_in_infer" else (0.0 if p == 1 else 1 / (1 - p))
    return Dropout.apply(x, p=p, scale=scale)


def _check_ids(op, ids, limit, what):
    """Raise unless ``ids`` is an integer Tensor with every value in [0, limit)."""
    if ids.dtype.kind not in "iu":
        raise OpError(f"{op}: ids must be integers, got {ids.dtype} of shape {ids.shape}")
    if not ids.size:
        return
    low, high = int(ids.data.min()), int(ids.data.max())
    if low < 0 or high >= limit:
        bad = high if high >= limit else low
        raise OpError(f"{op}: id {bad} is out of range for {what} {limit} (ids of shape {ids.shape})")


class Full(Function):
    """An array of ``shape`` filled with ``value`` (attribute ``dtype``); it takes no inputs.

    ``framework.jit`` puts it where a layer made such an array itself (an initial
    RNN state of zeros) and its shape follows the input sizes.
    """

    def forward(self):
        return self.xp.full(self.shape, self.value, dtype=self.dtype)

    def backward(self):
        return ()


class HashedNgrams(Function):
    """Hashed ids of the n-grams around each position (integer output, no gradient); see :func:`hashed_ngrams`."""

    def forward(self, ids):
        xp = self.xp
        n, steps = ids.shape
        edge = max(self.orders) - 1
        padded = xp.zeros((n, steps + 2 * edge), dtype=xp.int64)
        padded[:, edge:edge + steps] = ids
        out = xp.empty((n, steps, len(self.orders) if self.ending else sum(self.orders)), dtype=xp.int64)
        column = 0
        for order in self.orders:
            for first in range(edge - order + 1, edge - order + 2 if self.ending else edge + 1):  # window start
                h = xp.full((n, steps), order, dtype=xp.int64)
                for i in range(order):
                    h *= 1000003
                    h += padded[:, first + i:first + i + steps]
                    h %= self.buckets
                out[:, :, column] = h
                column += 1
        return out

    def backward(self, gy):
        return None


def hashed_ngrams(ids, orders, buckets, ending=False):
    """Hashed ids of the n-grams containing each position (with ``ending``: only the one ending there).

    For each order n in ``orders`` the windows are ids[t-n+1 .. t], ..., ids[t .. t+n-1],
    in that order (with ``ending`` only the first); id 0 stands past both edges. A window
    (a_1, ..., a_n) hashes to h_n with h_0 = n and h_i = (h_{i-1} * 1000003 + a_i) % buckets.

    Shapes: ids (N, T) integer -> (N, T, sum(orders)) int64 in [0, buckets), or (N, T, len(orders))
    with ``ending``.
    """
    if ids.ndim != 2 or ids.dtype.kind not in "iu":
        raise OpError(f"hashed_ngrams: ids must be (N, T) integers, got {ids.shape} {ids.dtype}")
    orders = tuple(int(o) for o in orders)
    if not orders or min(orders) < 1 or int(buckets) < 1:
        raise OpError(f"hashed_ngrams: orders must be >= 1 and buckets >= 1, got {orders} and {buckets}")
    return HashedNgrams.apply(ids, orders=orders, buckets=int(buckets), ending=bool(ending))


def embedding(x, weight, padding_idx=None):
    """Look up rows of ``weight`` by integer id.

    Rows of ``padding_idx`` (negative counts from the end) are returned as
    stored but get no gradient. Shapes: x (*) integer ids, weight (V, D) -> (*, D).
    """
    if weight.ndim != 2:
        raise OpError(f"embedding: weight must be (vocab, dim), got {weight.shape}")
    vocab = weight.shape[0]
    _check_ids("embedding", x, vocab, "vocab size")
    if padding_idx is not None:
        if not -vocab <= padding_idx < vocab:
            raise OpError(f"embedding: padding_idx {padding_idx} is out of range for vocab size {vocab}")
        padding_idx %= vocab
    return Embedding.apply(x, weight, padding_idx=padding_idx)


def one_hot(x, num_classes):
    """One-hot float32 encoding of integer ids (not differentiable). Shapes: x (*) -> (*, num_classes)."""
    _check_ids("one_hot", x, num_classes, "num_classes")
    xp = backend.get_array_module(x.data)
    return Tensor((x.data[..., None] == xp.arange(num_classes)).astype(numpy.float32))


class SequenceMask(Function):
    """mask[..., j] = j < lengths[...]; attributes ``maxlen`` (None: max(lengths)) and ``dtype``."""

    def forward(self, lengths):
        maxlen = self.maxlen if self.maxlen is not None else (int(lengths.max()) if lengths.size else 0)
        return (self.xp.arange(maxlen) < lengths[..., None]).astype(self.dtype)

    def backward(self, gy):
        return None


class PackedPositions(Function):
    """(rows, index) of the valid positions of a padded batch; attribute ``maxlen``; see :func:`packed_positions`."""

    def forward(self, lengths):
        xp = self.xp
        valid = (xp.arange(self.maxlen)[None, :] < lengths[:, None]).reshape(-1)      # (N*T,)
        rows = xp.flatnonzero(valid)
        index = xp.full(valid.shape[0], rows.shape[0], dtype=xp.int64)
        index[rows] = xp.arange(rows.shape[0])
        return rows, index

    def backward(self, *grads):
        return None


def packed_positions(lengths, maxlen):
    """Where the valid positions of a padded batch go when packed (not differentiable).

    Returns ``(rows, index)``: ``rows`` (P,) int64, the flat positions n * maxlen + t with
    t < lengths[n], in order; ``index`` (N * maxlen,) int64, each flat position's packed row,
    or P for a padded position.

    Shapes: lengths (N,) integers -> rows (P,), index (N * maxlen,).
    """
    if lengths.ndim != 1 or lengths.dtype.kind not in "iu":
        raise OpError(f"packed_positions: lengths must be (N,) integers, got {lengths.shape} {lengths.dtype}")
    return PackedPositions.apply(lengths, maxlen=int(maxlen))


def sequence_mask(lengths, maxlen=None, dtype="bool"):
    """mask[..., j] = j < lengths[...] (not differentiable).

    Shapes: lengths (*) integers -> (*, maxlen); ``maxlen`` defaults to max(lengths).
    """
    if lengths.dtype.kind not in "iu":
        raise OpError(f"sequence_mask: lengths must be integers, got {lengths.dtype} of shape {lengths.shape}")
    return SequenceMask.apply(lengths, maxlen=None if maxlen is None else int(maxlen), dtype=numpy.dtype(dtype))
