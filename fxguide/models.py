"""Small demo models shared by the guide's pages, gallery scripts and tests.

Each model is tiny on purpose: its traced graph fits on a screen, and it runs in
microseconds on a CPU. Build them with a seed (:func:`seeded`) so the numbers a
page prints are the same on every run.
"""

from __future__ import annotations

import torch
from torch import nn


def seeded(factory, *args, seed: int = 0, **kwargs):
    """Call ``factory(*args, **kwargs)`` right after ``torch.manual_seed(seed)``.

    >>> a = seeded(nn.Linear, 2, 2)
    >>> b = seeded(nn.Linear, 2, 2)
    >>> torch.equal(a.weight, b.weight)
    True
    """
    if not callable(factory):
        raise TypeError(f"seeded: factory must be callable (a model class or function), got {type(factory).__name__}")
    if not isinstance(seed, int):
        raise TypeError(f"seeded: seed must be an int, got {type(seed).__name__}")
    torch.manual_seed(seed)
    return factory(*args, **kwargs)


class TinyMLP(nn.Module):
    """A linear layer, a ReLU, an addition and a sum: the quickstart's model.

    It exercises four of the six opcodes: ``placeholder`` (``x``),
    ``call_module`` (``self.linear``), ``call_function`` (``torch.relu``), and
    ``call_method`` (``.sum``), plus ``output``.

    >>> model = seeded(TinyMLP, features=4)
    >>> model(torch.ones(2, 4)).shape
    torch.Size([2])
    """

    def __init__(self, features: int = 4, hidden: int = 3) -> None:
        super().__init__()
        for name, value in (("features", features), ("hidden", hidden)):
            if not isinstance(value, int) or value < 1:
                raise ValueError(f"TinyMLP: {name} must be a positive int, got {value!r}")
        self.linear = nn.Linear(features, hidden)

    # forward is left unannotated on purpose: FX copies annotations into the
    # graph and the generated code, and the quickstart shows the plain form.
    def forward(self, x):
        y = torch.relu(self.linear(x))
        return (y + 1.0).sum(dim=1)
