"""Replace one operation by another, three ways: edit the graph, transform it, or interpret it.

- :func:`replace_op` edits a copy of the graph in place: it retargets every
  ``call_function`` node that calls ``old`` so that it calls ``new``.
- :class:`Retarget` does the same with ``torch.fx.Transformer``: it re-runs the
  graph node by node and records a new one.
- :class:`SwapOps` changes nothing in the graph: it is an ``Interpreter`` that
  calls ``new`` whenever the graph says ``old`` (modified semantics at run time).

All three promise the same numbers as the module with ``old`` replaced by ``new``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import torch.fx as fx
from torch import nn

from fxguide.transforms import GuardedRun, _bind_error, carry_input_guard, to_graph_module


def _name(f: Any) -> str:
    return getattr(f, "__name__", type(f).__name__)


def _check_mapping(mapping: Mapping[Callable, Callable], caller: str) -> dict[Callable, Callable]:
    if not isinstance(mapping, Mapping) or not mapping:
        raise TypeError(f"{caller}: expected a non-empty dict {{old_function: new_function}}, got {mapping!r}")
    for old, new in mapping.items():
        for side, f in (("old", old), ("new", new)):
            if isinstance(f, nn.Module):
                raise TypeError(f"{caller}: {side} is the module instance {f!r}; call_function nodes call "
                                f"functions: use its functional form (torch.relu for nn.ReLU()), or add the "
                                f"module with gm.add_submodule and make the node a call_module")
            if not callable(f) or isinstance(f, type):
                raise TypeError(f"{caller}: {side} must be a function such as torch.relu, got {f!r}")
    return dict(mapping)


def _check_calls(gm: fx.GraphModule, mapping: Mapping[Callable, Callable], caller: str) -> list[fx.Node]:
    """The nodes calling a mapped function; raises if a mapped function is never called or cannot take the call."""
    hits = [n for n in gm.graph.nodes if n.op == "call_function" and n.target in mapping]
    called = {n.target for n in hits}
    for old in mapping:
        if old not in called:
            names = sorted({_name(n.target) for n in gm.graph.nodes if n.op == "call_function"})
            raise ValueError(
                f"{caller}: no call_function node calls {_name(old)!r}; the graph calls {names}. "
                f"Methods (x.relu()) and submodules (nn.ReLU) are other opcodes."
            )
    for node in hits:
        new = mapping[node.target]
        if mismatch := _bind_error(new, node):
            signature, error = mismatch
            raise TypeError(f"{caller}: {_name(new)}{signature} cannot take the arguments node {node.name!r} "
                            f"passes to {_name(node.target)} ({error}); give a replacement with a matching "
                            f"signature") from None
    return hits


def replace_op(module: nn.Module, old: Callable, new: Callable) -> fx.GraphModule:
    """Return a GraphModule in which every call of the function ``old`` calls ``new``.

    Only ``call_function`` nodes are retargeted: ``x.relu()`` (a method) and
    ``nn.ReLU()`` (a submodule) are other opcodes and are left alone. Raises
    ``ValueError`` when no node calls ``old``, so a typo cannot pass silently,
    and ``TypeError`` when ``new`` cannot take the arguments a node passes.
    :class:`Retarget` and :class:`SwapOps` check the same way.

    >>> import torch
    >>> from fxguide.models import TinyMLP, seeded
    >>> gm = replace_op(seeded(TinyMLP), torch.relu, torch.sigmoid)
    >>> [n.target.__name__ for n in gm.graph.find_nodes(op="call_function", target=torch.sigmoid)]
    ['sigmoid']
    """
    mapping = _check_mapping({old: new}, "replace_op")
    gm = to_graph_module(module, "replace_op")
    for node in _check_calls(gm, mapping, "replace_op"):
        node.target = mapping[node.target]
    gm.graph.lint()
    gm.recompile()
    return gm


class _CallsNew(GuardedRun):
    """What ``Retarget`` and ``SwapOps`` share: a mapping, and a ``call_function`` that uses it."""

    def __init__(self, module: fx.GraphModule, mapping: Mapping[Callable, Callable]) -> None:
        caller = type(self).__name__
        if not isinstance(module, fx.GraphModule):
            raise TypeError(f"{caller}: expected a GraphModule (trace the model first), got {type(module).__name__}")
        self.mapping = _check_mapping(mapping, caller)
        _check_calls(module, self.mapping, caller)
        super().__init__(module)

    def call_function(self, target: Any, args: tuple, kwargs: dict) -> Any:
        return super().call_function(self.mapping.get(target, target), args, kwargs)


class Retarget(_CallsNew, fx.Transformer):
    """A ``Transformer`` that records ``new`` wherever the graph calls ``old``.

    ``Transformer.transform()`` runs the graph with Proxies and returns the new
    GraphModule; overriding ``call_function`` changes what gets recorded.

    >>> import torch
    >>> gm = fx.symbolic_trace(lambda x: torch.relu(x) + 1)
    >>> new = Retarget(gm, {torch.relu: torch.tanh}).transform()
    >>> [n.name for n in new.graph.nodes]
    ['x', 'tanh', 'add', 'output']
    """

    def transform(self) -> fx.GraphModule:
        return carry_input_guard(self.module, super().transform())


class SwapOps(_CallsNew, fx.Interpreter):
    """An ``Interpreter`` that calls ``new`` whenever the graph calls ``old``.

    The graph and its generated code stay as they are; only this run computes
    something else. Useful to try a change before committing it to the graph.

    >>> import torch
    >>> gm = fx.symbolic_trace(lambda x: torch.relu(x))
    >>> SwapOps(gm, {torch.relu: torch.neg}).run(torch.tensor([1.0, -2.0]))
    tensor([-1.,  2.])
    """
