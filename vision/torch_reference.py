"""The reference ResNet in plain PyTorch (torchvision's definition, without torchvision).

Used where PyTorch is installed: ``tools/make_vision_fixture.py`` makes the
parity fixture with it and ``vision.benchmarks`` times it beside ours. PyTorch
is imported inside :func:`torch_resnet`; importing this module needs nothing.
Module names, parameter names and shapes equal torchvision's ``resnet*``
(``conv1``, ``bn1``, ``layer1.0.conv1``, ``layer1.0.downsample.0``, ``fc``), so
state dicts move between it and :class:`vision.models.ResNet` unchanged.
"""

__all__ = ["torch_resnet"]


def torch_resnet(block="bottleneck", layers=(3, 4, 6, 3), num_classes=1000, base_channels=64):
    """A ``torch.nn.Module`` ResNet: images (N, 3, H, W) -> logits (N, num_classes).

    ``block`` is "basic" or "bottleneck"; ``layers`` the blocks per stage
    (4 stages, strides 1, 2, 2, 2); ``base_channels`` the stem width (64 in
    torchvision). Initialised as torchvision (He normal, fan-out, for convs).
    """
    import torch
    from torch import nn

    def conv(cin, cout, k, stride=1):
        return nn.Conv2d(cin, cout, k, stride=stride, padding=(k - 1) // 2, bias=False)

    class BasicBlock(nn.Module):
        expansion = 1

        def __init__(self, cin, c, stride, downsample):
            super().__init__()
            self.conv1, self.bn1 = conv(cin, c, 3, stride), nn.BatchNorm2d(c)
            self.conv2, self.bn2 = conv(c, c, 3), nn.BatchNorm2d(c)
            self.relu, self.downsample = nn.ReLU(inplace=True), downsample

        def forward(self, x):
            shortcut = x if self.downsample is None else self.downsample(x)
            out = self.relu(self.bn1(self.conv1(x)))
            return self.relu(self.bn2(self.conv2(out)) + shortcut)

    class Bottleneck(nn.Module):
        expansion = 4

        def __init__(self, cin, c, stride, downsample):
            super().__init__()
            self.conv1, self.bn1 = conv(cin, c, 1), nn.BatchNorm2d(c)
            self.conv2, self.bn2 = conv(c, c, 3, stride), nn.BatchNorm2d(c)
            self.conv3, self.bn3 = conv(c, c * 4, 1), nn.BatchNorm2d(c * 4)
            self.relu, self.downsample = nn.ReLU(inplace=True), downsample

        def forward(self, x):
            shortcut = x if self.downsample is None else self.downsample(x)
            out = self.relu(self.bn1(self.conv1(x)))
            out = self.relu(self.bn2(self.conv2(out)))
            return self.relu(self.bn3(self.conv3(out)) + shortcut)

    class ResNet(nn.Module):
        def __init__(self):
            super().__init__()
            unit = {"basic": BasicBlock, "bottleneck": Bottleneck}[block]
            self.conv1 = nn.Conv2d(3, base_channels, 7, stride=2, padding=3, bias=False)
            self.bn1, self.relu = nn.BatchNorm2d(base_channels), nn.ReLU(inplace=True)
            self.maxpool = nn.MaxPool2d(3, stride=2, padding=1)
            cin = base_channels
            for i, (blocks, stride) in enumerate(zip(layers, (1, 2, 2, 2))):
                c = base_channels * 2 ** i
                downsample = None
                if stride != 1 or cin != c * unit.expansion:
                    downsample = nn.Sequential(conv(cin, c * unit.expansion, 1, stride),
                                               nn.BatchNorm2d(c * unit.expansion))
                stage = [unit(cin, c, stride, downsample)]
                cin = c * unit.expansion
                stage += [unit(cin, c, 1, None) for _ in range(blocks - 1)]
                setattr(self, f"layer{i + 1}", nn.Sequential(*stage))
            self.avgpool = nn.AdaptiveAvgPool2d(1)
            self.fc = nn.Linear(cin, num_classes)
            for m in self.modules():
                if isinstance(m, nn.Conv2d):
                    nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")

        def forward(self, x):
            x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
            for name in ("layer1", "layer2", "layer3", "layer4"):
                x = getattr(self, name)(x)
            return self.fc(torch.flatten(self.avgpool(x), 1))

    return ResNet()
