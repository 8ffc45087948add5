"""Graph transformations used by the guide's pages: each takes a module, returns a new GraphModule.

Every transform here has the same shape, so they compose: an ``nn.Module`` (or
a ``GraphModule``) goes in, the input is left untouched, and a fresh
``GraphModule`` comes out. :func:`to_graph_module` is the shared first step.
"""

from __future__ import annotations

import copy
import inspect
from collections.abc import Callable

import torch.fx as fx
from torch import nn


def to_graph_module(module: nn.Module, caller: str = "to_graph_module") -> fx.GraphModule:
    """Return a ``GraphModule`` for ``module`` that a transform may edit freely.

    A plain ``nn.Module`` is traced with ``torch.fx.symbolic_trace``. A
    ``GraphModule`` is deep-copied, so editing the result never changes the
    module the caller passed in.

    >>> from fxguide.models import TinyMLP
    >>> gm = to_graph_module(TinyMLP())
    >>> [node.op for node in gm.graph.nodes]
    ['placeholder', 'call_module', 'call_function', 'call_function', 'call_method', 'output']
    >>> fresh = to_graph_module(gm)
    >>> fresh is gm, fresh.graph is gm.graph
    (False, False)
    """
    if not isinstance(module, nn.Module):
        raise TypeError(
            f"{caller}: expected an nn.Module or a torch.fx.GraphModule, got {type(module).__name__}; "
            "wrap a plain function with torch.fx.symbolic_trace(fn) first"
        )
    if isinstance(module, fx.GraphModule):
        return copy.deepcopy(module)
    return fx.symbolic_trace(module)


def _bind_error(fn: Callable, node: fx.Node) -> tuple[inspect.Signature, TypeError] | None:
    """Why ``fn`` cannot take the arguments ``node`` passes to its target, or None if it can.

    Replacements and decomposition rules take the same arguments as the call they
    stand in for; checking that at transform time turns a wrong arity into an
    error that names the node, instead of a failure when the result is called.
    A callable without a readable signature (some builtins) is trusted.

    >>> import torch
    >>> gm = torch.fx.symbolic_trace(lambda x: torch.add(x, 1))
    >>> add = next(n for n in gm.graph.nodes if n.op == "call_function")
    >>> _bind_error(lambda a, b: a * b, add) is None
    True
    >>> signature, error = _bind_error(lambda a: a, add)
    >>> str(signature), str(error)
    ('(a)', 'too many positional arguments')
    """
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):
        return None
    try:
        signature.bind(*node.args, **node.kwargs)
    except TypeError as error:
        return signature, error
    return None
