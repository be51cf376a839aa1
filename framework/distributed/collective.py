"""Collectives on Tensors (and raw NumPy/CuPy arrays), Paddle 2 style.

Every function is collective: each rank calls it, in the same order, with a
tensor of the same shape and dtype. Tensors are changed in place (their
``data``), as ``paddle.distributed`` does. In a single process each call
leaves its input unchanged.
"""
from ..tensor import Tensor
from .comm import DistributedError
from .env import get_communicator, get_world_size

__all__ = ["ReduceOp", "all_reduce", "broadcast", "all_gather", "barrier", "all_gather_object",
           "broadcast_object"]


class ReduceOp:
    """The reductions of :func:`all_reduce` (Paddle's names)."""

    SUM, MAX, MIN, PROD, AVG = "sum", "max", "min", "prod", "avg"


def _array(tensor, call):
    if isinstance(tensor, Tensor):
        return tensor.data
    if hasattr(tensor, "shape") and hasattr(tensor, "dtype"):
        return tensor
    raise DistributedError(f"{call}: expected a Tensor or an array, got {type(tensor).__name__}")


def all_reduce(tensor, op=ReduceOp.SUM):
    """Reduce ``tensor`` over all ranks in place: every rank ends with the sum (or max, min, prod, avg).

    Shapes: any; the same shape and dtype on every rank. Returns ``tensor``.
    """
    get_communicator().all_reduce(_array(tensor, "all_reduce"), op)
    return tensor


def broadcast(tensor, src=0):
    """Copy rank ``src``'s ``tensor`` into ``tensor`` on every rank (in place). Returns ``tensor``."""
    _check_rank(src, "broadcast")
    get_communicator().broadcast(_array(tensor, "broadcast"), src)
    return tensor


def all_gather(tensor_list, tensor):
    """Append every rank's ``tensor`` to ``tensor_list``, in rank order; returns ``tensor_list``.

    Shapes: ``tensor`` (*) the same on every rank -> world_size new Tensors of (*).
    Shapes are checked first, so a mismatch is an error naming each rank's shape.
    """
    array = _array(tensor, "all_gather")
    communicator = get_communicator()
    if communicator.world_size > 1:
        shapes = communicator.all_gather_object((tuple(array.shape), str(array.dtype)))
        if len(set(shapes)) > 1:
            raise DistributedError("all_gather: the ranks give different shapes/dtypes: "
                                   + ", ".join(f"rank {r}: {s} {d}" for r, (s, d) in enumerate(shapes)))
    gathered = communicator.all_gather(array)
    tensor_list.extend(Tensor(gathered[r]) for r in range(communicator.world_size))
    return tensor_list


def barrier():
    """Block until every rank has called ``barrier()``."""
    get_communicator().barrier()


def all_gather_object(obj):
    """A list of every rank's ``obj`` (any picklable Python object), in rank order."""
    return get_communicator().all_gather_object(obj)


def broadcast_object(obj, src=0):
    """Rank ``src``'s ``obj`` on every rank (any picklable Python object)."""
    _check_rank(src, "broadcast_object")
    return get_communicator().broadcast_object(obj, src)


def _check_rank(rank, call):
    size = get_world_size()
    if not 0 <= int(rank) < size:
        raise DistributedError(f"{call}: src rank {rank} is outside the world of {size} processes")
