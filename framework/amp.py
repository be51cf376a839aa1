"""Mixed precision: ``autocast`` for the GEMM ops and ``GradScaler`` for loss scaling.

Dtypes stay strict everywhere else, so autocast is narrow: inside
``autocast()``, the GEMM ops (``matmul``/``bmm``, ``linear``, ``conv1d/2d/3d``)
given float32 inputs cast them down to the autocast dtype, multiply in that
precision and return float32 outputs; their backward multiplies in the same
precision and returns float32 gradients. Parameters therefore stay float32
(the master weights) and every other op sees float32 as before. float64 and
float16 inputs are never cast.

``GradScaler`` follows ``torch.cuda.amp.GradScaler``: multiply the loss by a
large scale before backward so small float16 gradients do not flush to zero,
divide the gradients by it before the update, skip the update when any
gradient is inf/NaN and halve the scale, double it after ``growth_interval``
clean steps::

    scaler = GradScaler()
    with autocast():
        loss = model_loss(batch)
    scaler.scale(loss).backward()
    scaler.step(optimizer)      # unscales first; clipping inside the optimizer sees unscaled gradients
    scaler.update()

Clip gradients yourself only after ``scaler.unscale_(optimizer)``.

The autocast state lives in :mod:`framework.autocast` (the GEMM ops read it; it imports no Tensor) and the
scaler in :mod:`framework.grad_scaler`; this module is the public surface of both.
"""
from .autocast import DTYPES, autocast, autocast_dtype, cast, compute_dtype, is_autocast_enabled, resolve_dtype
from .grad_scaler import GradScaler

__all__ = ["autocast", "is_autocast_enabled", "autocast_dtype", "compute_dtype", "resolve_dtype", "cast",
           "GradScaler", "DTYPES"]
