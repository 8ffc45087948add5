"""Small models for the "FX in PyTorch 2" pages: graphs made by ``torch.export`` and ``torch.compile``.

- :class:`CountingLinear` has one of each kind of state an exported program
  separates: parameters, a buffer updated in place, and a plain tensor
  attribute (a constant), so one graph shows every input kind of a
  graph signature and a mutation output.
- :class:`ConvNet` is a small convolutional classifier (conv, batch norm,
  ReLU, pooling, a linear head) for the pass, backend and quantization pages.
"""

# No `from __future__ import annotations` in this module: FX prints the
# annotations of a traced forward, and string annotations come out mangled
# (`x : _torch_Tensor_`) in the code the pages show.

import torch
from torch import nn


def _positive(caller: str, **values: object) -> None:
    for name, value in values.items():
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise ValueError(f"{caller}: {name} must be a positive int, got {value!r}")


class CountingLinear(nn.Module):
    """A linear layer and a ReLU that count their calls and scale by a fixed tensor.

    ``calls`` is a buffer incremented in place on every call; ``scale`` is a
    tensor attribute that is neither a parameter nor a buffer.

    >>> from fxguide.models import seeded
    >>> model = seeded(CountingLinear)
    >>> model(torch.ones(2, 4)).shape, int(model.calls)
    (torch.Size([2, 3]), 1)
    """

    def __init__(self, features: int = 4, out: int = 3) -> None:
        super().__init__()
        _positive("CountingLinear", features=features, out=out)
        self.linear = nn.Linear(features, out)
        self.register_buffer("calls", torch.zeros((), dtype=torch.long))
        self.scale = torch.tensor(2.0)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.calls.add_(1)
        return torch.relu(self.linear(x)) * self.scale


class ConvNet(nn.Module):
    """Two 3x3 convolutions (the first with batch norm), ReLUs, global pooling, a linear head.

    >>> from fxguide.models import seeded
    >>> seeded(ConvNet).eval()(torch.zeros(2, 3, 8, 8)).shape
    torch.Size([2, 10])
    """

    def __init__(self, channels: int = 8, classes: int = 10) -> None:
        super().__init__()
        _positive("ConvNet", channels=channels, classes=classes)
        self.conv1 = nn.Conv2d(3, channels, 3, padding=1)
        self.bn = nn.BatchNorm2d(channels)
        self.conv2 = nn.Conv2d(channels, channels, 3, padding=1)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(channels, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = torch.relu(self.bn(self.conv1(x)))
        x = torch.relu(self.conv2(x))
        return self.fc(self.pool(x).flatten(1))
