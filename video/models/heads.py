"""Pieces shared by the frame-based video models: input checks and the classification head."""
import framework.nn.functional as F
from framework import nn

__all__ = ["ClassifierHead", "check_clips", "frames_of"]


def check_clips(model, x, channels, frames=None):
    """Raise ValueError naming ``model`` unless x is clips (B, T, channels, H, W) (T = ``frames`` when given)."""
    if x.ndim != 5 or x.shape[2] != channels or (frames is not None and x.shape[1] != frames):
        t = "T" if frames is None else frames
        raise ValueError(f"{type(model).__name__}: expected clips of shape (B, {t}, {channels}, H, W), got {x.shape}")


def frames_of(x):
    """Clips (B, T, C, H, W) -> frames (B * T, C, H, W), clip-major."""
    return x.reshape((x.shape[0] * x.shape[1],) + tuple(x.shape[2:]))  # (B*T, C, H, W)


class ClassifierHead(nn.Layer):
    """Dropout, then a linear classifier: (B, in_features) -> scores (B, num_classes).

    ``fc.weight`` is (in_features, num_classes) (Paddle's layout).
    """

    def __init__(self, in_features, num_classes, dropout=0.0):
        super().__init__()
        self.dropout = nn.Dropout(dropout) if dropout > 0 else None
        self.fc = nn.Linear(in_features, num_classes)

    def forward(self, x):
        if self.dropout is not None:
            x = self.dropout(x)
        return self.fc(x)
