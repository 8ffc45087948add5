"""Four small models whose code depends on the shapes or values of their input.

Symbolic tracing cannot follow any of them; the "Beyond symbolic tracing" page
takes each one through ``symbolic_trace``, fxguide's concrete tracer,
``make_fx``, ``torch.export`` and ``torch.compile``. Each model comes with the
input it is traced on and a second input that takes another path through its
``forward`` (see ``CASES``).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn


class ShapeBranch(nn.Module):
    """Chooses an operation from the width of its input: a shape-dependent branch.

    >>> ShapeBranch()(torch.ones(1, 4))
    tensor([[2., 2., 2., 2.]])
    >>> ShapeBranch()(torch.ones(1, 2))
    tensor([[0., 0.]])
    """

    def forward(self, x):
        if x.shape[1] > 3:
            return x * 2
        return x - 1


class DataBranch(nn.Module):
    """Chooses an operation from the values of its input: a data-dependent branch.

    >>> DataBranch()(torch.tensor([1.0, 2.0]))
    tensor([2., 4.])
    >>> DataBranch()(torch.tensor([-1.0, -2.0]))
    tensor([1., 2.])
    """

    def forward(self, x):
        if x.sum() > 0:
            return x * 2
        return -x


class DataBranchCond(nn.Module):
    """:class:`DataBranch` with its branch written as ``torch.cond``, which ``torch.export`` captures.

    >>> DataBranchCond()(torch.tensor([-1.0, -2.0]))
    tensor([1., 2.])
    """

    def forward(self, x):
        return torch.cond(x.sum() > 0, lambda x: x * 2, lambda x: -x, (x,))


class LoopOverRows(nn.Module):
    """Adds up the rows of its input one at a time: a loop over a dimension.

    >>> LoopOverRows()(torch.ones(3, 2))
    tensor([3., 3.])
    """

    def forward(self, x):
        total = torch.zeros_like(x[0])
        for i in range(x.shape[0]):
            total = total + x[i]
        return total


class HalfSplit(nn.Module):
    """Multiplies the two halves of its last dimension: a Python int from a shape.

    >>> HalfSplit()(torch.tensor([[1.0, 2.0, 3.0, 4.0]]))
    tensor([[3., 8.]])
    """

    def forward(self, x):
        half = int(x.shape[-1]) // 2
        return x[..., :half] * x[..., half:]


@dataclass(frozen=True)
class Case:
    """A dynamic model, the input it is traced on, and an input that takes another path."""

    name: str
    model: nn.Module
    traced_input: torch.Tensor
    other_input: torch.Tensor
    what_changes: str


def _numbers(*shape: int, seed: int) -> torch.Tensor:
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed)).abs().round(decimals=1) + 0.5


def cases() -> list[Case]:
    """The four models with their two inputs, freshly built (deterministic).

    >>> [case.name for case in cases()]
    ['shape branch', 'data branch', 'loop over rows', 'int from shape']
    """
    return [
        Case("shape branch", ShapeBranch(), _numbers(2, 4, seed=0), _numbers(2, 3, seed=1),
             "narrower input: the other branch"),
        Case("data branch", DataBranch(), _numbers(3, seed=0), -_numbers(3, seed=1),
             "negative input: the other branch"),
        Case("loop over rows", LoopOverRows(), _numbers(3, 2, seed=0), _numbers(2, 2, seed=1),
             "fewer rows: fewer trips"),
        Case("int from shape", HalfSplit(), _numbers(2, 4, seed=0), _numbers(2, 6, seed=1),
             "wider input: another int"),
    ]
