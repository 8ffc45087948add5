"""Demo models of the gallery's worked transforms.

Small enough to trace into a graph that fits a picture, big enough that a
transform's effect on speed can be measured on a CPU. Build them with
:func:`fxguide.models.seeded` so every run starts from the same weights.
"""

from __future__ import annotations

import torch
from torch import nn

from fxguide._checks import int_at_least


def _positive_int(owner: str, name: str, value: object) -> int:
    return int_at_least(owner, name, value)


class ResidualBlock(nn.Module):
    """conv-bn-relu, conv-bn, plus the block's input, then relu: a ResNet basic block.

    >>> block = ResidualBlock(4)
    >>> block(torch.zeros(1, 4, 8, 8)).shape
    torch.Size([1, 4, 8, 8])
    """

    def __init__(self, channels: int) -> None:
        super().__init__()
        _positive_int("ResidualBlock", "channels", channels)
        self.conv1 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(channels)
        self.conv2 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(channels)

    def forward(self, x):
        y = torch.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        return torch.relu(y + x)


class SmallResNet(nn.Module):
    """A stem (conv-bn-relu), ``blocks`` residual blocks, global pooling and a classifier.

    Every convolution is followed by a batch norm, which is what conv/bn fusion
    removes. Its batch-norm statistics are made non-trivial on construction
    (:meth:`randomize_norm_statistics`) so that a fusion that forgets them fails
    the numerical check instead of passing by luck.

    >>> model = SmallResNet(channels=4, blocks=1).eval()
    >>> model(torch.zeros(2, 3, 8, 8)).shape
    torch.Size([2, 10])
    """

    def __init__(self, channels: int = 16, blocks: int = 2, classes: int = 10) -> None:
        super().__init__()
        _positive_int("SmallResNet", "channels", channels)
        _positive_int("SmallResNet", "blocks", blocks)
        _positive_int("SmallResNet", "classes", classes)
        self.stem = nn.Conv2d(3, channels, 3, padding=1, bias=False)
        self.bn = nn.BatchNorm2d(channels)
        self.layers = nn.Sequential(*(ResidualBlock(channels) for _ in range(blocks)))
        self.head = nn.Linear(channels, classes)
        self.randomize_norm_statistics()

    @torch.no_grad()
    def randomize_norm_statistics(self) -> None:
        """Give every batch norm a random scale, shift, running mean and running variance."""
        for module in self.modules():
            if isinstance(module, nn.BatchNorm2d):
                module.weight.uniform_(0.5, 1.5)
                module.bias.uniform_(-0.5, 0.5)
                module.running_mean.uniform_(-0.5, 0.5)
                module.running_var.uniform_(0.5, 2.0)

    def forward(self, x):
        x = torch.relu(self.bn(self.stem(x)))
        x = self.layers(x)
        x = x.mean(dim=(2, 3))
        return self.head(x)


class SmallMLP(nn.Module):
    """Three linear layers with ReLUs between them: a model to observe and quantize.

    >>> SmallMLP()(torch.zeros(2, 8)).shape
    torch.Size([2, 4])
    """

    def __init__(self, features: int = 8, hidden: int = 16, out: int = 4) -> None:
        super().__init__()
        _positive_int("SmallMLP", "features", features)
        _positive_int("SmallMLP", "hidden", hidden)
        _positive_int("SmallMLP", "out", out)
        self.fc1 = nn.Linear(features, hidden)
        self.fc2 = nn.Linear(hidden, hidden)
        self.fc3 = nn.Linear(hidden, out)

    def forward(self, x):
        x = torch.relu(self.fc1(x))
        x = torch.relu(self.fc2(x))
        return self.fc3(x)
