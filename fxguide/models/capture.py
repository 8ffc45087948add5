"""Models for the pages on capturing real code with ``torch.export``, and for the error index.

- :class:`KeepFirst` keeps a number of rows read from a tensor: a size that
  depends on data, which export cannot know while tracing.
- :class:`JsonLogged` prints a log line made with ``json`` in ``forward``:
  plain Python that non-strict export runs and strict export refuses.
"""

# No `from __future__ import annotations`: FX prints the annotations of a traced
# forward, and string annotations come out mangled (see fxguide/models/pt2.py).

import json

import torch
from torch import nn


class KeepFirst(nn.Module):
    """``x[:count]`` times 2, where ``count`` is a one-element tensor, capped at the number of rows.

    ``count.item()`` is a size export cannot know while tracing; the cap
    (``if n > x.shape[0]``) is a decision on it. ``checked=True`` first
    states, with ``torch._check``, that the count never exceeds the rows,
    which settles the decision.

    >>> KeepFirst()(torch.arange(5.0), torch.tensor(7)).tolist()
    [0.0, 2.0, 4.0, 6.0, 8.0]
    """

    def __init__(self, checked: bool = False) -> None:
        super().__init__()
        if not isinstance(checked, bool):
            raise TypeError(f"KeepFirst: checked must be a bool, got {type(checked).__name__}")
        self.checked = checked

    def forward(self, x: torch.Tensor, count: torch.Tensor) -> torch.Tensor:
        n = count.item()
        if self.checked:
            torch._check(n <= x.shape[0])
        if n > x.shape[0]:
            n = x.shape[0]
        return x[:n] * 2


class JsonLogged(nn.Module):
    """Multiplies by ``scale``, and prints a JSON log line (rows, scale, type of input) on every call.

    >>> JsonLogged()(torch.ones(2, 3)).sum().item()
    {"rows": 2, "scale": 2.0, "input": "Tensor"}
    12.0
    """

    def __init__(self, scale: float = 2.0) -> None:
        super().__init__()
        if not isinstance(scale, (int, float)) or isinstance(scale, bool):
            raise TypeError(f"JsonLogged: scale must be a number, got {type(scale).__name__}")
        self.scale = float(scale)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        print(json.dumps({"rows": x.shape[0], "scale": self.scale, "input": type(x).__name__}))
        return x * self.scale
