"""Small networks the slim tests prune and quantise: convolutions, batch norms, a residual sum, a head."""
import numpy

from framework import nn
from framework.nn import functional as F
from framework.ops.temporal import temporal_shift


class Block(nn.Layer):
    """conv-bn-relu-conv-bn plus the input (a residual sum over ``channels``)."""

    def __init__(self, channels, inner):
        super().__init__()
        self.conv1, self.bn1 = nn.Conv2D(channels, inner, 3, padding=1, bias_attr=False), nn.BatchNorm2D(inner)
        self.conv2, self.bn2 = nn.Conv2D(inner, channels, 3, padding=1, bias_attr=False), nn.BatchNorm2D(channels)

    def forward(self, x):
        return F.relu(x + self.bn2(self.conv2(F.relu(self.bn1(self.conv1(x))))))


class SmallResNet(nn.Layer):
    """(N, 3, H, W) -> (N, classes): stem conv, two residual blocks, average pool, linear head."""

    def __init__(self, width=8, inner=12, classes=5):
        super().__init__()
        self.stem, self.bn = nn.Conv2D(3, width, 3, padding=1), nn.BatchNorm2D(width)
        self.block1, self.block2 = Block(width, inner), Block(width, inner)
        self.pool = nn.AdaptiveAvgPool2D(1)
        self.fc = nn.Linear(width, classes)

    def forward(self, x):
        x = self.block2(self.block1(F.relu(self.bn(self.stem(x)))))
        return self.fc(self.pool(x).reshape([x.shape[0], -1]))       # (N, C, 1, 1) -> (N, C)


class ShiftNet(nn.Layer):
    """(N, segments, 3, H, W) clips -> (N * segments, classes): conv, temporal shift, conv, pool, head on each
    frame (TSM's shift between two convolutions)."""

    def __init__(self, segments=2, width=8, classes=5):
        super().__init__()
        self.segments = segments
        self.conv1, self.conv2 = nn.Conv2D(3, width, 3, padding=1), nn.Conv2D(width, width, 3, padding=1)
        self.pool, self.fc = nn.AdaptiveAvgPool2D(1), nn.Linear(width, classes)

    def forward(self, x):
        x = x.reshape([-1, *x.shape[2:]])                                # (N, T, 3, H, W) -> (N * T, 3, H, W)
        x = F.relu(self.conv2(temporal_shift(F.relu(self.conv1(x)), self.segments)))
        return self.fc(self.pool(x).reshape([x.shape[0], -1]))       # (N, C, 1, 1) -> (N, C)


def randomised(model, seed=0):
    """``model`` in eval mode with random batch-norm statistics and affine parameters (not the identity)."""
    rng = numpy.random.default_rng(seed)
    for name, tensor in list(model.named_parameters()) + list(model.named_buffers()):
        if name.endswith("running_var"):
            tensor.data[...] = rng.uniform(0.5, 1.5, tensor.shape)
        elif name.endswith("running_mean") or (name.startswith(("bn", "block")) and "bn" in name):
            tensor.data[...] = rng.normal(0, 0.3, tensor.shape) + (1.0 if name.endswith("weight") else 0.0)
    model.eval()
    return model
