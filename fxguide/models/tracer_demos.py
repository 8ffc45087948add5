"""Demo models for the customizing-tracing pages and the feature-extraction example.

Small on purpose: each graph fits on a screen and runs in microseconds. Build
them with :func:`fxguide.models.seeded` so the printed numbers are stable.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from fxguide._checks import finite_number, int_at_least

__all__ = ["SmallCNN", "ScaledResidual", "TwoStageMLP"]


def _positive_ints(owner: str, **values: object) -> None:
    for name, value in values.items():
        int_at_least(owner, name, value)


class SmallCNN(nn.Module):
    """Two conv stages, global pooling, dropout and a linear head.

    The dropout is written functionally, ``F.dropout(x, p, training=self.training)``:
    the tracer reads ``self.training`` once and bakes the value into the graph,
    so a trace made in train mode and one made in eval mode differ. That is
    the difference :mod:`fxguide.tracing.features` detects.

    >>> from fxguide.models import seeded
    >>> model = seeded(SmallCNN).eval()
    >>> model(torch.zeros(2, 1, 8, 8)).shape
    torch.Size([2, 3])
    """

    def __init__(self, channels: int = 4, classes: int = 3, p: float = 0.25) -> None:
        super().__init__()
        _positive_ints("SmallCNN", channels=channels, classes=classes)
        if not 0.0 <= finite_number("SmallCNN", "p", p) < 1.0:
            raise ValueError(f"SmallCNN: p must be in [0, 1), got {p!r}")
        self.stem = nn.Sequential(nn.Conv2d(1, channels, 3, padding=1), nn.BatchNorm2d(channels), nn.ReLU())
        self.stage = nn.Sequential(
            nn.Conv2d(channels, 2 * channels, 3, padding=1, stride=2), nn.BatchNorm2d(2 * channels), nn.ReLU()
        )
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.head = nn.Linear(2 * channels, classes)
        self.p = p

    def forward(self, x):
        x = self.stage(self.stem(x))
        x = torch.flatten(self.pool(x), 1)
        x = F.dropout(x, self.p, training=self.training)
        return self.head(x)


class ScaledResidual(nn.Module):
    """``x + scale * relu(linear(x))``: a block whose inner ops a tracer traces through."""

    def __init__(self, features: int = 4, scale: float = 0.5) -> None:
        super().__init__()
        _positive_ints("ScaledResidual", features=features)
        finite_number("ScaledResidual", "scale", scale)
        self.linear = nn.Linear(features, features)
        self.scale = scale

    def forward(self, x):
        return x + self.scale * torch.relu(self.linear(x))


class TwoStageMLP(nn.Module):
    """An encoder of two residual blocks and a linear head: three parts to tell apart.

    >>> from fxguide.models import seeded
    >>> seeded(TwoStageMLP)(torch.zeros(2, 4)).shape
    torch.Size([2, 2])
    """

    def __init__(self, features: int = 4, classes: int = 2) -> None:
        super().__init__()
        _positive_ints("TwoStageMLP", features=features, classes=classes)
        self.encoder = nn.Sequential(ScaledResidual(features), ScaledResidual(features))
        self.head = nn.Linear(features, classes)

    def forward(self, x):
        return self.head(self.encoder(x))
