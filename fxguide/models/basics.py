"""Small demo models shared by the guide's pages, gallery scripts and tests.

Each model is tiny on purpose: its traced graph fits on a screen, and it runs in
microseconds on a CPU. Build them with a seed (:func:`seeded`) so the numbers a
page prints are the same on every run.
"""

from __future__ import annotations

import torch
from torch import nn

from fxguide._checks import int_at_least


def seeded(factory, *args, seed: int = 0, **kwargs):
    """Call ``factory(*args, **kwargs)`` right after ``torch.manual_seed(seed)``.

    >>> a = seeded(nn.Linear, 2, 2)
    >>> b = seeded(nn.Linear, 2, 2)
    >>> torch.equal(a.weight, b.weight)
    True
    """
    if not callable(factory):
        raise TypeError(f"seeded: factory must be callable (a model class or function), got {type(factory).__name__}")
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise TypeError(f"seeded: seed must be an int, got {seed!r} ({type(seed).__name__})")
    if isinstance(factory, nn.Module):
        raise TypeError(f"seeded: factory must build the model (a class such as TinyMLP), got the instance "
                        f"{type(factory).__name__}(); pass the class and its arguments: seeded(TinyMLP, 4)")
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
        int_at_least("TinyMLP", "features", features)
        int_at_least("TinyMLP", "hidden", hidden)
        self.linear = nn.Linear(features, hidden)

    # forward is left unannotated on purpose: FX copies annotations into the
    # graph and the generated code, and the quickstart shows the plain form.
    def forward(self, x):
        y = torch.relu(self.linear(x))
        return (y + 1.0).sum(dim=1)


class AllOpcodes(nn.Module):
    """A model whose traced graph uses all six opcodes, for the IR page.

    ``x`` is a ``placeholder``; ``self.scale`` is read with ``get_attr``;
    ``self.linear`` is a ``call_module``; ``torch.relu`` and ``+`` are
    ``call_function``; ``.sum`` is a ``call_method``; the returned value is the
    ``output``. It also calls ``torch.relu`` twice and ``sum`` (a builtin's
    name), which shows how FX names nodes.

    >>> model = seeded(AllOpcodes, features=4)
    >>> model(torch.ones(2, 4)).shape
    torch.Size([2])
    """

    def __init__(self, features: int = 4) -> None:
        super().__init__()
        int_at_least("AllOpcodes", "features", features)
        self.linear = nn.Linear(features, features)
        self.scale = nn.Parameter(torch.full((features,), 0.5))

    def forward(self, x):
        h = torch.relu(self.linear(x)) * self.scale
        h = torch.relu(h + x)
        return h.sum(dim=-1)


class GatedBlock(nn.Module):
    """Two linear branches, one through ReLU and one through SiLU, multiplied.

    The transformation pages rewrite its activations (replace one by another,
    decompose them into simpler ops) and check the result against this module.

    >>> model = seeded(GatedBlock, features=4)
    >>> model(torch.ones(3, 4)).shape
    torch.Size([3, 4])
    """

    def __init__(self, features: int = 4) -> None:
        super().__init__()
        int_at_least("GatedBlock", "features", features)
        self.value = nn.Linear(features, features)
        self.gate = nn.Linear(features, features)

    def forward(self, x):
        value = torch.relu(self.value(x))
        gate = torch.nn.functional.silu(self.gate(x))
        return value * gate + x
