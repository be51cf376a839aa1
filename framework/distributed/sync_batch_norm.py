"""SyncBatchNorm: batch normalisation whose training statistics cover the whole global batch.

Plain BatchNorm under DataParallel normalises each rank's shard with that
shard's statistics (the default, as in Paddle and PyTorch). SyncBatchNorm
gathers every rank's per-channel count, mean and sum of squared deviations
(one all-gather of ``(2C + 1)`` numbers, merged exactly), normalises with the
global mean and variance, and in backward all-reduces the two per-channel
sums the input gradient needs. N ranks with a batch of B/N each then compute
what one process computes with B, including the running statistics. In eval
mode, or in a single process, it is BatchNorm.
"""
from ..nn.layers import BatchNormBase
from ..ops.norm import affine, check_float
from ..tensor import Function
from .env import get_communicator

__all__ = ["SyncBatchNorm", "convert_sync_batchnorm", "sync_batch_norm"]


def _merge_moments(gathered):
    """Global (count, mean, biased var) per channel from rows ``[count, mean (C), m2 (C)]`` of each rank."""
    channels = (gathered.shape[1] - 1) // 2
    counts = gathered[:, :1]
    means, m2s = gathered[:, 1:1 + channels], gathered[:, 1 + channels:]
    total = counts.sum()
    mean = (counts * means).sum(axis=0) / total
    m2 = (m2s + counts * (means - mean) ** 2).sum(axis=0)
    return float(total), mean, m2 / total


class SyncNormalize(Function):
    """y = (x - mean) / sqrt(var + epsilon) * weight + bias with mean/var over every rank's batch.

    Attributes: ``communicator``, ``epsilon``, ``running`` (None or
    ``(running_mean, running_var, momentum)`` arrays updated in place).
    """

    def forward(self, x, w, b):
        xp = self.xp
        channels = x.shape[1]
        axes = (0,) + tuple(range(2, x.ndim))
        shape = (1, channels) + (1,) * (x.ndim - 2)
        local_mean = x.mean(axis=axes, keepdims=True)
        local_m2 = ((x - local_mean) ** 2).sum(axis=axes)
        row = xp.concatenate([xp.asarray([x.size // channels]), local_mean.reshape(-1), local_m2]).astype(xp.float64)
        count, mean, var = _merge_moments(self.communicator.all_gather(row))
        mean, var = mean.astype(x.dtype), var.astype(x.dtype)
        if self.running is not None:
            running_mean, running_var, momentum = self.running
            running_mean *= momentum
            running_mean += (1 - momentum) * mean
            running_var *= momentum
            running_var += (1 - momentum) * count / (count - 1) * var
        inv_std = (1 / xp.sqrt(var + self.epsilon)).reshape(shape)
        xhat = (x - mean.reshape(shape)) * inv_std
        self.saved = xhat, inv_std, w, count, axes, shape
        return xhat * w.reshape(shape) + b.reshape(shape)

    def backward(self, gy):
        xhat, inv_std, w, count, axes, shape = self.saved
        xp = self.xp
        gw = (gy * xhat).sum(axis=axes) if self.needs_input_grad[1] else None
        gb = gy.sum(axis=axes) if self.needs_input_grad[2] else None
        gx = None
        if self.needs_input_grad[0]:
            gxhat = gy * w.reshape(shape)
            sums = xp.concatenate([gxhat.sum(axis=axes), (gxhat * xhat).sum(axis=axes)])
            self.communicator.all_reduce(sums, "sum")
            mean_g, mean_gx = (s.reshape(shape) / count for s in xp.split(sums, 2))
            gx = (gxhat - mean_g - xhat * mean_gx) * inv_std
        return gx, gw, gb


def sync_batch_norm(x, running_mean, running_var, weight=None, bias=None, momentum=0.9, epsilon=1e-5,
                    communicator=None):
    """Training-mode batch norm with statistics over every rank's batch (see :func:`F.batch_norm`).

    Shapes: x (N, C, *), running_mean, running_var, weight, bias (C,) -> (N, C, *).
    Running statistics (None to skip) follow Paddle's momentum rule with the
    global mean and unbiased global variance.
    """
    op = "sync_batch_norm"
    check_float(op, x, 2)
    channels = x.shape[1]
    weight = affine(op, x, weight, (channels,), 1)
    bias = affine(op, x, bias, (channels,), 0)
    running = None
    if running_mean is not None and running_var is not None:
        running = (running_mean.data, running_var.data, momentum)
    return SyncNormalize.apply(x, weight, bias, communicator=communicator or get_communicator(),
                               epsilon=epsilon, running=running)


class SyncBatchNorm(BatchNormBase):
    """BatchNorm over (N, C, *) inputs whose training statistics span all ranks (see the module doc).

    Same arguments, parameters and buffers as ``BatchNorm1D/2D/3D``, so a
    state dict moves between them unchanged.
    """

    ndims, layout = (2, 3, 4, 5), "(N, C, *)"

    def forward(self, x):
        communicator = get_communicator()
        if not self.training or communicator.world_size == 1:
            return super().forward(x)
        if x.shape[1] != self.num_features:
            raise ValueError(f"SyncBatchNorm: expected {self.num_features} channels on axis 1, "
                             f"got input of shape {x.shape}")
        return sync_batch_norm(x, self.running_mean, self.running_var, self.weight, self.bias,
                               momentum=self.momentum, epsilon=self.epsilon, communicator=communicator)

    @classmethod
    def convert_sync_batchnorm(cls, layer):
        """Replace every BatchNorm1D/2D/3D inside ``layer`` by a SyncBatchNorm sharing its
        parameters and buffers; returns ``layer`` (or the new layer if ``layer`` itself is one)."""
        if isinstance(layer, BatchNormBase) and not isinstance(layer, cls):
            return cls._from(layer)
        for sub in layer.sublayers(include_self=True):
            for name, child in list(sub._sub_layers.items()):
                if isinstance(child, BatchNormBase) and not isinstance(child, cls):
                    sub._sub_layers[name] = cls._from(child)
        return layer

    @classmethod
    def _from(cls, bn):
        sync = cls(bn.num_features, bn.momentum, bn.epsilon, weight_attr=False, bias_attr=False)
        sync.weight, sync.bias = bn.weight, bn.bias
        sync.running_mean, sync.running_var = bn.running_mean, bn.running_var
        sync.training, sync._dtype = bn.training, bn._dtype
        return sync


convert_sync_batchnorm = SyncBatchNorm.convert_sync_batchnorm
