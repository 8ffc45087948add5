"""What the graph's own operations did while tracing: the state changes a call of the graph will make again.

The concrete tracer evaluates every node on real values as it records it. A change made *by* such an
evaluation (a tensor updated in place by ``add_``, ``x += 1`` or a batch norm, a random draw of
``torch.rand_like`` or dropout, a grad-mode switch) is one the graph replays on every call. A change made
*between* evaluations, by Python code the graph does not hold (``torch.rand(2, 3)`` with constant sizes,
``torch.set_rng_state``, ``fork_rng`` putting the generator back, a tensor in a list updated with no traced
value involved), is not. :class:`Effects` tells them apart for the state diff (:mod:`._diff`): which tensor
storages the evaluations updated or were handed, which ``torch.Generator`` objects they drew from, whether
torch's global generator moved outside them, and which grad mode the recorded switches leave.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

import torch
from torch import nn

from fxguide._state import same_rng, same_value, torch_rng
from fxguide.tracing.concrete._frames import _user_location

#: Methods that hand out a tensor's memory to Python without changing it (a later write through it is not traced).
_EXPOSING = frozenset({"numpy", "data_ptr", "untyped_storage", "storage", "__array__"})
_isinstance = isinstance  # the builtin itself: tracing patches builtins.isinstance while these run


def storage_key(tensor: torch.Tensor) -> int:
    """Which memory a tensor's values are in (shared by its views)."""
    try:
        return int(tensor.untyped_storage().data_ptr()) or id(tensor)
    except (RuntimeError, NotImplementedError, TypeError):  # sparse, meta, a subclass without storage
        return id(tensor)


class Effects:
    """Collected while tracing, from the evaluation of each recorded operation (see the module docstring)."""

    def __init__(self) -> None:
        self.mutated: set[int] = set()  # storages an operation updated in place (its _version moved)
        self.touched: set[int] = set()  # storages handed to an operation (batch norm writes without a _version)
        self.generators: set[int] = set()  # ids of the torch.Generator objects handed to an operation
        self.untraced_rng: tuple[str, int, str] | None = None  # where the global generator moved outside them
        self.grad_mode: bool | None = None  # the grad mode the last recorded switch leaves
        self.attributes: dict[tuple[int, str], tuple[nn.Module, Any]] = {}  # module attributes a node sets
        self._rng = torch_rng()

    def before(self, op: str, target: Any, args: Any, kwargs: Any) -> list[tuple[torch.Tensor, int]]:
        """Called before an operation is evaluated: its tensors' versions (and a check of the generator)."""
        self.check_rng()
        versions: list[tuple[torch.Tensor, int]] = []
        exposing = op == "call_method" and target in _EXPOSING
        stack: list[Any] = [args, kwargs]
        while stack:
            value = stack.pop()
            kind = type(value)
            if kind in (tuple, list):
                stack.extend(value)
            elif kind is dict:
                stack.extend(value.values())
            elif kind is torch.Generator:
                self.generators.add(id(value))
            elif _isinstance(value, torch.Tensor):
                if not exposing:
                    self.touched.add(storage_key(value))
                versions.append((value, value._version))
        return versions

    def after(self, versions: list[tuple[torch.Tensor, int]], module: nn.Module | None) -> None:
        """Called after it: the tensors it updated in place; everything a module it called holds."""
        for tensor, version in versions:
            if tensor._version != version:
                self.mutated.add(storage_key(tensor))
        if module is not None:  # the graph calls this module: what it changes in itself, it changes on every call
            for tensor in itertools.chain(module.parameters(), module.buffers()):
                self.mutated.add(storage_key(tensor))
                self.touched.add(storage_key(tensor))
        self._rng = torch_rng()

    def replayed(self) -> Callable[[Any], set[str]]:
        """The names of a module (or of its buffers) that a node of the graph sets, to the value they hold now:
        ``replayed()(owner)`` for the module or its ``_buffers`` dict (what the state diff does not report)."""
        names: dict[int, set[str]] = {}
        for (_, name), (module, value) in self.attributes.items():
            for held in (module.__dict__, module._buffers):
                if name in held and (held[name] is value or same_value(held[name], value)):
                    names.setdefault(id(module) if held is module.__dict__ else id(held), set()).add(name)
        return lambda owner: names.get(id(owner), set())

    def check_rng(self) -> None:
        """Note where torch's global generator first moved since the last operation (outside the graph)."""
        if self.untraced_rng is None and not same_rng(torch_rng(), self._rng):
            self.untraced_rng = _user_location()
            self._rng = torch_rng()
