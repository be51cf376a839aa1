"""DataParallel: the same model on every rank, gradients averaged over ranks in fused buckets.

At construction the ranks check that their models have the same parameters,
then take rank 0's parameters and buffers (one broadcast per dtype). The
trainable parameters are cut into buckets of about ``bucket_size_mb``, in
reverse registration order (roughly the order backward produces their
gradients). During ``backward()`` a parameter's grad-ready hook
(:meth:`framework.Tensor.register_grad_ready_hook`) marks it done; once every
parameter of a bucket is done, and every earlier bucket has been started, the
bucket's gradients are copied into one flat buffer and its all-reduce starts
without blocking (MPI ``Iallreduce``, or NCCL on its own stream) while
backward goes on. At the end of ``backward()`` the remaining buckets start,
all are waited for, and each parameter's ``grad`` becomes its slice of the
averaged buffer. Buckets always start in the same order on every rank, so the
collectives match even if ranks finish gradients in different orders.

A parameter that got no gradient on a rank contributes zeros; one that got
none on any rank keeps ``grad`` None (each bucket carries one "used" flag per
parameter). Buffers (BatchNorm statistics) stay local during training and are
broadcast from rank 0 whenever the model switches to eval mode, so evaluation
and checkpoints agree on every rank.
"""
import contextlib
import weakref

from .. import backend
from ..nn.layer import Layer
from ..tensor import Tensor, register_backward_end_hook
from .comm import DistributedError
from .env import get_communicator

__all__ = ["DataParallel", "assign_buckets"]


def assign_buckets(params, bucket_bytes):
    """Cut ``params`` into buckets: lists of consecutive parameters of one dtype and device.

    ``params`` are taken in reverse order; a bucket is closed when the next
    parameter would take it past ``bucket_bytes`` (a larger parameter gets a
    bucket of its own) or has another dtype or device. Returns a list of lists.
    """
    buckets, current, size, key = [], [], 0, None
    for p in reversed(params):
        p_key = (p.data.dtype, backend.device_of(p.data))
        nbytes = p.data.size * p.data.dtype.itemsize
        if current and (p_key != key or size + nbytes > bucket_bytes):
            buckets.append(current)
            current, size = [], 0
        current.append(p)
        size += nbytes
        key = p_key
    if current:
        buckets.append(current)
    return buckets


class _Bucket:
    """Parameters whose gradients travel in one flat buffer: ``[grads…, used flags…]``."""

    def __init__(self, params):
        self.params = params
        self.offsets, total = [], 0
        for p in params:
            self.offsets.append(total)
            total += p.data.size
        self.numel = total
        self.ready = set()
        self.buffer = self.handle = None

    def pack(self):
        """The flat buffer of this step's gradients (zeros where a parameter has none) and used flags."""
        first = self.params[0].data  # read now: the model may have moved to another device
        buffer = backend.get_array_module(first).empty(self.numel + len(self.params), dtype=first.dtype)
        for i, (p, offset) in enumerate(zip(self.params, self.offsets)):
            n = p.data.size
            if p.grad is None:
                buffer[offset:offset + n] = 0
                buffer[self.numel + i] = 0
            else:
                buffer[offset:offset + n] = p.grad.data.reshape(-1)
                buffer[self.numel + i] = 1
        return buffer

    def unpack(self, world_size):
        """Set each parameter's grad to its averaged slice (unless no rank had a gradient for it)."""
        buffer = self.buffer
        grads = buffer[:self.numel]
        grads /= world_size
        used = backend.to_device(buffer[self.numel:], "cpu")
        for p, offset, flag in zip(self.params, self.offsets, used):
            if flag > 0:
                p.grad = Tensor(grads[offset:offset + p.data.size].reshape(p.data.shape))
        self.ready.clear()
        self.buffer = self.handle = None


class DataParallel(Layer):
    """Wrap ``layers`` for data-parallel training: gradients are averaged over all ranks.

    Each rank runs the wrapped model on its own shard of the batch; after
    ``loss.backward()`` every rank holds the same averaged gradients, so the
    optimizers keep the weights identical. ``state_dict``, ``set_state_dict``
    and ``named_parameters`` are the wrapped model's (no prefix), so
    checkpoints and optimizer groups are the same with and without the
    wrapper; other attributes are looked up on the wrapped model. In a world of
    one process it only forwards.

    Args:
        layers: the model (a ``framework.nn.Layer``).
        bucket_size_mb: size of one fused gradient buffer, in MiB.
        communicator: the communicator to use (default: the job's, duplicated
            so gradient reductions never interleave with other collectives).

    Shapes: those of ``layers`` (``forward`` passes everything through).
    """

    def __init__(self, layers, bucket_size_mb=25.0, communicator=None):
        super().__init__()
        if not isinstance(layers, Layer):
            raise TypeError(f"DataParallel: expected a framework.nn.Layer, got {type(layers).__name__}")
        self._layers = layers
        base = communicator or get_communicator()
        self._world_size = base.world_size
        self._sync = True
        self._in_step = False
        self._buckets = []
        if self._world_size == 1:
            return
        self._comm = base.dup()
        self._check_same_model()
        self._broadcast_from_rank0(list(layers.parameters()) + list(layers.buffers()))
        trainable = [p for p in layers.parameters() if p.requires_grad]
        self._buckets = [_Bucket(group) for group in assign_buckets(trainable, bucket_size_mb * 2 ** 20)]
        self._where = {id(p): (bucket, i) for bucket in self._buckets for i, p in enumerate(bucket.params)}
        self._next = 0
        self._register_hooks(trainable)

    # ---- the wrapped model's face -------------------------------------------
    def forward(self, *inputs, **kwargs):
        return self._layers(*inputs, **kwargs)

    def state_dict(self, prefix=""):
        """The wrapped model's state dict (no ``_layers.`` prefix)."""
        return self._layers.state_dict(prefix)

    def set_state_dict(self, state_dict, strict=True):
        """Load into the wrapped model (see ``Layer.set_state_dict``)."""
        return self._layers.set_state_dict(state_dict, strict)

    load_dict = set_dict = set_state_dict

    def named_parameters(self, prefix="", include_sublayers=True):
        """The wrapped model's ``(name, Parameter)`` pairs."""
        return self._layers.named_parameters(prefix, include_sublayers)

    def named_buffers(self, prefix="", include_sublayers=True):
        """The wrapped model's ``(name, buffer)`` pairs."""
        return self._layers.named_buffers(prefix, include_sublayers)

    def train(self, mode=True):
        """Switch modes; entering eval mode takes rank 0's buffers on every rank (a collective)."""
        if not mode and self.training and self._world_size > 1:
            self._broadcast_from_rank0(list(self._layers.buffers()))
        return super().train(mode)

    def __getattr__(self, name):
        try:
            return super().__getattr__(name)
        except AttributeError:
            layers = self.__dict__.get("_sub_layers", {}).get("_layers")
            if layers is None:
                raise
            return getattr(layers, name)

    @contextlib.contextmanager
    def no_sync(self):
        """Context in which backward leaves gradients local (accumulate, then reduce once outside)."""
        previous, self._sync = self._sync, False
        try:
            yield
        finally:
            self._sync = previous

    # ---- setup ----------------------------------------------------------------
    def _check_same_model(self):
        signature = [(name, tuple(p.shape), str(p.dtype)) for name, p in self._layers.named_parameters()]
        signatures = self._comm.all_gather_object(signature)
        for rank, other in enumerate(signatures):
            if other != signature:
                differ = sorted(set(other) ^ set(signature))[:5]
                raise DistributedError(f"DataParallel: rank {rank}'s model differs from rank "
                                       f"{self._comm.rank}'s; first differences (name, shape, dtype): {differ}")

    def _broadcast_from_rank0(self, tensors):
        """Overwrite ``tensors`` with rank 0's values: one fused broadcast per dtype and device."""
        groups = {}
        for t in tensors:
            groups.setdefault((t.data.dtype, backend.device_of(t.data)), []).append(t)
        for group in groups.values():
            xp = backend.get_array_module(group[0].data)
            flat = xp.concatenate([t.data.reshape(-1) for t in group])
            self._comm.broadcast(flat, 0)
            offset = 0
            for t in group:
                t.data[...] = flat[offset:offset + t.data.size].reshape(t.data.shape)
                offset += t.data.size

    def _register_hooks(self, params):
        ref = weakref.ref(self)

        def grad_ready(leaf):
            owner = ref()
            if owner is not None:
                owner._grad_ready(leaf)

        def backward_end():
            owner = ref()
            if owner is not None:
                owner._finish_step()

        handles = [p.register_grad_ready_hook(grad_ready) for p in params]
        handles.append(register_backward_end_hook(backward_end))
        weakref.finalize(self, _remove_all, handles)

    # ---- one step's reduction ---------------------------------------------------
    def _grad_ready(self, leaf):
        if not self._sync:
            return
        self._in_step = True
        bucket, slot = self._where[id(leaf)]
        bucket.ready.add(slot)
        self._start_ready_buckets()

    def _start_ready_buckets(self):
        buckets = self._buckets
        while self._next < len(buckets) and len(buckets[self._next].ready) == len(buckets[self._next].params):
            bucket = buckets[self._next]
            bucket.buffer = bucket.pack()
            bucket.handle = self._comm.all_reduce_async(bucket.buffer)
            self._next += 1
        for bucket in buckets[:self._next]:
            bucket.handle.test()  # lets MPI progress the reductions already started

    def _finish_step(self):
        """End of backward: start what is left (parameters without gradient), wait, average."""
        if not self._in_step:
            return
        for bucket in self._buckets:
            bucket.ready.update(range(len(bucket.params)))
        self._start_ready_buckets()
        for bucket in self._buckets:
            bucket.handle.wait()
            bucket.unpack(self._world_size)
        self._next = 0
        self._in_step = False


def _remove_all(handles):
    for handle in handles:
        handle.remove()
