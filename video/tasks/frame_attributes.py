"""Per-frame supervision of an image model on the generated set: the task that trains the feature models' backbone.

The model maps frames (B, 3, H, W) to ``NUM_OUTPUTS`` = ``len(SHAPES) + 1 + 5``
outputs: shape logits, a visibility logit, and the geometry x, y, log size,
cos, sin of the angle (the targets of
:class:`video.data.frame_attributes.SyntheticFrameAttributes`, which also says
why the backbone is trained per frame). Its metric is
:class:`video.metrics.FrameAttributeMetrics`.
"""
import framework
import framework.nn.functional as F
from framework.config import ConfigError
from framework.engine import Task
from framework.registry import TASKS

from ..data.synthetic import SHAPES
from ..metrics import FrameAttributeMetrics

__all__ = ["NUM_OUTPUTS", "FrameAttributes"]

NUM_OUTPUTS = len(SHAPES) + 1 + 5


@TASKS.register()
class FrameAttributes(Task):
    """Per-frame supervision of an image model: shape (cross entropy) and geometry (smooth L1) on visible
    frames, visibility (sigmoid cross entropy) on all.

    The model maps (B, 3, H, W) to (B, NUM_OUTPUTS); batches hold ``imgs`` (N, F, 3, H, W) and the
    targets of :class:`~video.data.frame_attributes.SyntheticFrameAttributes`. ``geometry_weight`` scales the
    regression loss.
    """

    def __init__(self, model, geometry_weight: float = 5.0, metrics=None):
        if getattr(model, "num_classes", NUM_OUTPUTS) != NUM_OUTPUTS:
            raise ConfigError(f"FrameAttributes: the model needs num_classes = {NUM_OUTPUTS} outputs "
                              f"(shape {len(SHAPES)}, visibility 1, geometry 5), got {model.num_classes}")
        self.model, self.geometry_weight, self._metrics = model, float(geometry_weight), metrics

    def _outputs(self, batch):
        imgs = batch["imgs"]
        out = self.model(imgs.reshape([-1, *imgs.shape[2:]]))               # (N*F, NUM_OUTPUTS)
        k = len(SHAPES)
        return out[:, :k], out[:, k], out[:, k + 1:]

    def loss(self, batch):
        shape_logits, visible_logit, geometry = self._outputs(batch)
        visible = batch["visible"].reshape([-1])                             # (N*F,)
        weight = visible / (visible.sum() + 1.0)
        shape_loss = (F.cross_entropy(shape_logits, batch["shape"].reshape([-1]), reduction="none") * weight).sum()
        error = geometry - batch["geometry"].reshape([-1, 5])
        smooth = framework.where(error.abs().data < 0.1, 5.0 * error * error, error.abs() - 0.05)
        geometry_loss = (smooth.sum(axis=1) * weight).sum()
        visible_loss = F.binary_cross_entropy_with_logits(visible_logit, visible)
        return shape_loss + visible_loss + self.geometry_weight * geometry_loss

    def predict_batch(self, batch):
        shape_logits, visible_logit, geometry = self._outputs(batch)
        return {"shape": shape_logits.argmax(axis=-1), "visible": F.sigmoid(visible_logit), "geometry": geometry}

    def metrics(self):
        return self._metrics if self._metrics is not None else [FrameAttributeMetrics()]
